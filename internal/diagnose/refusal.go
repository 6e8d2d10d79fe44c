package diagnose

import (
	"errors"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// RefusedBy says what refused a request.
type RefusedBy string

// Who refuses.
const (
	RefusedByWebhook    RefusedBy = "Webhook"    // an admission webhook, by its answer or by failing to be called
	RefusedByConversion RefusedBy = "Conversion" // a CRD's conversion webhook could not be called
	RefusedByRBAC       RefusedBy = "RBAC"       // Forbidden
	RefusedByAPI        RefusedBy = "API"        // an aggregated API's backend
)

// Refusal is who refused a request, as far as the answer and the cluster
// tell.
type Refusal struct {
	By RefusedBy `json:"by"`
	// Webhook and Configuration: the webhook and its configuration, whose
	// kind is ConfigurationKind (validatingwebhookconfiguration or
	// mutatingwebhookconfiguration).
	Webhook           string `json:"webhook,omitempty"`
	Configuration     string `json:"configuration,omitempty"`
	ConfigurationKind string `json:"configurationKind,omitempty"`
	// Denied: the webhook answered no (a policy), rather than failing to
	// be called.
	Denied bool `json:"denied,omitempty"`
	// CRD is the CRD whose conversion webhook failed.
	CRD string `json:"crd,omitempty"`
	// APIService is the aggregated API that failed.
	APIService string `json:"apiService,omitempty"`
	// Service is the backend that cannot be called (namespace/name), and
	// ServiceState what was found of it.
	Service      string        `json:"service,omitempty"`
	ServiceState *ServiceState `json:"serviceState,omitempty"`
	// User, Verb and Resource: who may not do what (RBAC).
	User     string `json:"user,omitempty"`
	Verb     string `json:"verb,omitempty"`
	Resource string `json:"resource,omitempty"`
	// Outside: only an outside action clears it (a backend that does not
	// exist or has no ready endpoint, Forbidden, a webhook's denial):
	// waiting cannot help.
	Outside bool `json:"outside"`
}

var (
	failedCalling = regexp.MustCompile(`failed calling webhook "([^"]+)"`)
	deniedBy      = regexp.MustCompile(`admission webhook "([^"]+)" denied the request`)
	forbiddenBy   = regexp.MustCompile(`User "([^"]*)" cannot (\S+) resource "([^"]*)"`)
)

// WhoRefused says who refused a request for gvr that the API server
// answered with err, from what obs knows of the cluster's webhooks, CRDs,
// APIServices and their backends; nil when the answer does not tell.
func WhoRefused(obs Observation, gvr schema.GroupVersionResource, err error) *Refusal {
	if err == nil {
		return nil
	}
	text := err.Error()
	if m := failedCalling.FindStringSubmatch(text); m != nil {
		return webhookRefusal(obs, m[1], false)
	}
	if m := deniedBy.FindStringSubmatch(text); m != nil {
		return webhookRefusal(obs, m[1], true)
	}
	if strings.Contains(text, "conversion webhook for") {
		if crd := findCRD(obs.CRDs, gvr); crd != nil && crd.ConversionService != nil {
			r := &Refusal{By: RefusedByConversion, CRD: crd.Name, Service: crd.ConversionService.Key()}
			r.withService(obs)
			return r
		}
	}
	if apierrors.IsForbidden(err) {
		r := &Refusal{By: RefusedByRBAC, Outside: true}
		if m := forbiddenBy.FindStringSubmatch(text); m != nil {
			r.User, r.Verb, r.Resource = m[1], m[2], m[3]
		}
		return r
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && (apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err)) {
		if svc := findAPIService(obs.APIServices, gvr.GroupVersion()); svc != nil && svc.Spec.Service != nil {
			r := &Refusal{By: RefusedByAPI, APIService: svc.Name, Service: svc.Spec.Service.Namespace + "/" + svc.Spec.Service.Name}
			r.withService(obs)
			return r
		}
	}
	return nil
}

// DiscoveryRefusal says what keeps a group-version from being discovered
// (err): its APIService's backend. Only an outside fix clears it when the
// backend is down, or when the API server itself marks the group-version
// stale: it could not read the backend's discovery (no answer, or one it
// cannot decode) and retries on its own only once a minute.
func DiscoveryRefusal(obs Observation, gv schema.GroupVersion, err error) *Refusal {
	svc := findAPIService(obs.APIServices, gv)
	if svc == nil || svc.Spec.Service == nil {
		return nil
	}
	r := &Refusal{By: RefusedByAPI, APIService: svc.Name, Service: svc.Spec.Service.Namespace + "/" + svc.Spec.Service.Name}
	r.withService(obs)
	if errors.As(err, new(discovery.StaleGroupVersionError)) {
		r.Outside = true
	}
	return r
}

func webhookRefusal(obs Observation, name string, denied bool) *Refusal {
	// A webhook that answers and denies is a policy: passes that keep
	// sending the same request only meet the same answer.
	r := &Refusal{By: RefusedByWebhook, Webhook: name, Denied: denied, Outside: denied}
	for _, wh := range obs.Webhooks {
		if wh.Name != name {
			continue
		}
		r.Configuration, r.ConfigurationKind = wh.Configuration, strings.ToLower(wh.Type)+"webhookconfiguration"
		if wh.Service != nil && !denied {
			r.Service = wh.Service.Key()
			r.withService(obs)
		}
		break
	}
	return r
}

// withService records the backend's state; a backend that does not exist
// or has no ready endpoint needs an outside fix.
func (r *Refusal) withService(obs Observation) {
	state, ok := obs.Services[r.Service]
	if !ok {
		return
	}
	r.ServiceState = &state
	r.Outside = state.Down()
}
