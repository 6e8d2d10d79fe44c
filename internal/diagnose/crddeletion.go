package diagnose

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// CRDDeletion is what deleting a CustomResourceDefinition would meet:
// the apiextensions controller first deletes every instance
// (customresourcecleanup) and waits for them to be gone, so instances
// whose finalizers nobody removes keep the CRD, and every instance, in
// Terminating.
type CRDDeletion struct {
	CRD     CRD
	Version string
	// Instances counts every instance; Held those with finalizers, by
	// finalizer, and Examples names the first few (namespace/name).
	Instances  int
	Held       int
	Finalizers map[string]int
	Examples   []string
	// Owners are the finalizers' owners.
	Owners map[string]OwnerState
	// ListErr is why the instances could not be listed: the controller
	// cannot list them either. Conversion is the state of the CRD's
	// conversion webhook backend, when it has one.
	ListErr    string
	Conversion *ServiceState
}

// PredictCRDDeletion is the blockers the deletion of a CRD would meet:
// its instances waiting for finalizers (FinalizersRemaining), or
// instances it cannot list (ConversionWebhookDown, ListFailed).
func PredictCRDDeletion(d CRDDeletion) []Blocker {
	gvr := schema.GroupVersionResource{Group: d.CRD.Group, Version: d.Version, Resource: d.CRD.Plural}
	res := resourceName(gvr)
	switch {
	case d.ListErr != "" && d.Conversion != nil && d.Conversion.Down():
		crd := d.CRD
		return []Blocker{{Kind: BlockerConversionWebhook, Subject: crd.Name,
			Facts: &ListFacts{Resource: res, Error: d.ListErr, CRD: &crd, Conversion: d.Conversion},
			Actions: []Action{{Kind: ActionRestoreService, Target: crd.ConversionService.Key(), Of: "customresourcedefinition/" + crd.Name},
				{Kind: ActionPatchCRDConversion, Target: crd.Name}}}}
	case d.ListErr != "":
		return []Blocker{{Kind: BlockerListFailed, Subject: res, Facts: &ListFacts{Resource: res, Error: d.ListErr},
			Actions: []Action{{Kind: ActionGetResource, Target: res}}}}
	case d.Held == 0:
		return nil
	}
	names := sortedKeys(d.Finalizers)
	subject := strings.Join(names, ",")
	content := Content{Group: d.CRD.Group, Version: d.Version, Resource: d.CRD.Plural, Count: d.Held,
		Finalizers: d.Finalizers, Examples: d.Examples}
	facts := &FinalizerFacts{Content: content, Owners: map[string]OwnerState{}, Held: d.Examples}
	for _, f := range names {
		if s, ok := d.Owners[f]; ok {
			facts.Owners[f] = s
		}
	}
	return []Blocker{{Kind: BlockerFinalizers, Subject: subject, Facts: facts,
		Actions: []Action{{Kind: ActionCheckOwner, Target: subject}}}}
}
