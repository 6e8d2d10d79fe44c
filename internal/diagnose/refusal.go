package diagnose

import (
	"errors"
	"net/http"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/ns-doctor/ns-doctor/internal/apierror"
)

// RefusedBy says what refused a request.
type RefusedBy string

// Who refuses.
const (
	RefusedByWebhook    RefusedBy = "Webhook"    // an admission webhook, by its answer or by failing to be called
	RefusedByConversion RefusedBy = "Conversion" // a CRD's conversion webhook could not be called
	RefusedByRBAC       RefusedBy = "RBAC"       // Forbidden
	RefusedByAPI        RefusedBy = "API"        // an aggregated API's backend
	RefusedByPolicy     RefusedBy = "Policy"     // a ValidatingAdmissionPolicy's denial
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
	// Policy and Binding: the ValidatingAdmissionPolicy that denied
	// (RefusedByPolicy), and its binding when the server named it.
	Policy  string `json:"policy,omitempty"`
	Binding string `json:"binding,omitempty"`
	// NamespaceGone: a webhook or a policy's binding with a
	// namespaceSelector met a request in a namespace that no longer
	// exists: kube-apiserver reads the namespace's labels to match the
	// selector and answers its 404 (namespaces "X" not found) instead of
	// calling the webhook, or the policy fails on it.
	NamespaceGone bool `json:"namespaceGone,omitempty"`
	// Static: the webhook or policy is loaded from kube-apiserver's disk
	// (a name ending in .static.k8s.io on 1.37+): no API object to delete
	// or bypass.
	Static bool `json:"static,omitempty"`
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

// WhoRefused says who refused a request for gvr that the API server
// answered with err, from what obs knows of the cluster's webhooks, CRDs,
// APIServices and their backends; nil when the answer does not tell. A
// plan's predicted rejection says it itself.
func WhoRefused(obs Observation, gvr schema.GroupVersionResource, err error) *Refusal {
	if err == nil {
		return nil
	}
	var predicted *PredictedRejection
	if errors.As(err, &predicted) {
		return predicted.refusal()
	}
	e := apierror.Classify(err)
	switch e.Kind {
	case apierror.WebhookFailed, apierror.WebhookDenied:
		if e.Webhook != "" {
			return webhookRefusal(obs, e.Webhook, e.Kind == apierror.WebhookDenied)
		}
	case apierror.PolicyDenied:
		// A binding that selects namespaces by label cannot be matched in
		// a namespace that is gone: the policy fails, and its failure
		// policy denies ("failed to configure binding: namespaces "X" not
		// found").
		gone := obs.Namespace != nil && strings.Contains(e.Denial, `failed to configure binding: namespaces "`+obs.Namespace.Name+`" not found`)
		return &Refusal{By: RefusedByPolicy, Policy: e.Policy, Binding: e.Binding, Denied: true, Outside: true, Static: staticAdmission(obs, e.Policy), NamespaceGone: gone}
	case apierror.ConversionFailed:
		if crd := findCRD(obs.CRDs, gvr); crd != nil && crd.ConversionService != nil {
			r := &Refusal{By: RefusedByConversion, CRD: crd.Name, Service: crd.ConversionService.Key()}
			r.withService(obs)
			return r
		}
	case apierror.NotFound:
		if r := namespaceGoneRefusal(obs, gvr, e); r != nil {
			return r
		}
	case apierror.Forbidden, apierror.NamespaceTerminating:
		return &Refusal{By: RefusedByRBAC, Outside: true, User: e.User, Verb: e.Verb, Resource: e.QualifiedResource()}
	}
	if proxied(e) {
		if svc := findAPIService(obs.APIServices, gvr.GroupVersion()); svc != nil && svc.Spec.Service != nil {
			r := &Refusal{By: RefusedByAPI, APIService: svc.Name, Service: svc.Spec.Service.Namespace + "/" + svc.Spec.Service.Name}
			r.withService(obs)
			return r
		}
	}
	return nil
}

// proxied tells an answer an aggregated API's backend gives through
// kube-aggregator: a 503 when it is gone, a 500 when it fails (a Status
// without a reason, by its code).
func proxied(e apierror.Error) bool {
	switch e.Reason {
	case metav1.StatusReasonServiceUnavailable, metav1.StatusReasonInternalError:
		return true
	case "":
		return e.Code == http.StatusServiceUnavailable || e.Code == http.StatusInternalServerError
	}
	return false
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

// namespaceGoneRefusal reads a 404 naming the namespace itself, for an
// update of an object in it (an orphan's finalizers, 1.37+, where
// NamespaceLifecycle lets it through): the webhooks that catch that update
// and select namespaces by label are what answered it. nil when none does.
func namespaceGoneRefusal(obs Observation, gvr schema.GroupVersionResource, e apierror.Error) *Refusal {
	if e.Resource != "namespaces" || gvr.Resource == "namespaces" || obs.Namespace == nil || e.Name != obs.Namespace.Name {
		return nil
	}
	for _, wh := range obs.Webhooks {
		if wh.NamespaceSelector == nil || (len(wh.NamespaceSelector.MatchLabels) == 0 && len(wh.NamespaceSelector.MatchExpressions) == 0) {
			continue
		}
		if slices.Contains(matchingOperations(wh.Rules, gvr), "UPDATE") {
			return &Refusal{By: RefusedByWebhook, Webhook: wh.Name, Configuration: wh.Configuration, ConfigurationKind: configurationKind(wh),
				NamespaceGone: true, Outside: true}
		}
	}
	return nil
}

func webhookRefusal(obs Observation, name string, denied bool) *Refusal {
	// A webhook that answers and denies is a policy: passes that keep
	// sending the same request only meet the same answer.
	r := &Refusal{By: RefusedByWebhook, Webhook: name, Denied: denied, Outside: denied, Static: staticAdmission(obs, name)}
	for _, wh := range obs.Webhooks {
		if wh.Name != name {
			continue
		}
		r.Configuration, r.ConfigurationKind = wh.Configuration, configurationKind(wh)
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
