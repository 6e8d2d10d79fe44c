package guard

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// crdObject is what the guard reads of a CustomResourceDefinition being
// deleted (apiextensions.k8s.io/v1): which resource its instances are,
// and in which version to list them.
type crdObject struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Group string `json:"group"`
		Names struct {
			Plural string `json:"plural"`
		} `json:"names"`
		Versions []struct {
			Name    string `json:"name"`
			Served  bool   `json:"served"`
			Storage bool   `json:"storage"`
		} `json:"versions"`
		Conversion *struct {
			Strategy string `json:"strategy"`
			Webhook  *struct {
				ClientConfig *struct {
					Service *diagnose.ServiceRef `json:"service"`
				} `json:"clientConfig"`
			} `json:"webhook"`
		} `json:"conversion"`
	} `json:"spec"`
}

// crdOf reads the CRD and the version to list its instances in: the
// storage version if served (no conversion needed), else the first served.
func crdOf(raw []byte) (diagnose.CRD, string, error) {
	var o crdObject
	if err := json.Unmarshal(raw, &o); err != nil {
		return diagnose.CRD{}, "", fmt.Errorf("reading the CustomResourceDefinition: %w", err)
	}
	crd := diagnose.CRD{Name: o.Metadata.Name, Group: o.Spec.Group, Plural: o.Spec.Names.Plural}
	if c := o.Spec.Conversion; c != nil && c.Strategy == "Webhook" && c.Webhook != nil && c.Webhook.ClientConfig != nil {
		crd.ConversionService = c.Webhook.ClientConfig.Service
	}
	version := ""
	for _, v := range o.Spec.Versions {
		switch {
		case v.Served && v.Storage:
			return crd, v.Name, nil
		case v.Served && version == "":
			version = v.Name
		}
	}
	if version == "" {
		return crd, "", errors.New("the CustomResourceDefinition serves no version: nothing to list")
	}
	return crd, version, nil
}
