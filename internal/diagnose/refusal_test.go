package diagnose

import (
	"errors"
	"fmt"
	"testing"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

func refusalCluster() Observation {
	return Observation{
		Namespace: &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
		Webhooks: []Webhook{
			{Configuration: "policy-guard", Name: "guard.example.com", Type: "Validating", Service: &ServiceRef{Namespace: "guard", Name: "guard"}},
			{Configuration: "defaults", Name: "defaults.example.com", Type: "Mutating", Service: &ServiceRef{Namespace: "guard", Name: "defaults"}},
		},
		CRDs: []CRD{{Name: "widgets.example.com", Group: "example.com", Plural: "widgets", ConversionService: &ServiceRef{Namespace: "conv", Name: "conv"}}},
		APIServices: []apiregv1.APIService{{
			ObjectMeta: metav1.ObjectMeta{Name: "v1beta1.metrics.k8s.io"},
			Spec:       apiregv1.APIServiceSpec{Group: "metrics.k8s.io", Version: "v1beta1", Service: &apiregv1.ServiceReference{Namespace: "kube-system", Name: "metrics-server"}},
		}},
		Services: map[string]ServiceState{
			"guard/guard":                {Exists: false},
			"guard/defaults":             {Exists: true, ReadyEndpoints: 1},
			"conv/conv":                  {Exists: true},
			"kube-system/metrics-server": {Exists: true, ReadyEndpoints: 2},
		},
	}
}

// Each kind of refusal names who refused, and says whether only an
// outside fix can clear it.
func TestWhoRefusedNamesWhoRefused(t *testing.T) {
	obs := refusalCluster()
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	metrics := schema.GroupVersionResource{Group: "metrics.k8s.io", Version: "v1beta1", Resource: "pods"}
	cases := []struct {
		name string
		gvr  schema.GroupVersionResource
		err  error
		want Refusal
	}{
		{"webhook down", widgets, errors.New(`Internal error occurred: failed calling webhook "guard.example.com": no endpoints`),
			Refusal{By: RefusedByWebhook, Webhook: "guard.example.com", Configuration: "policy-guard", ConfigurationKind: "validatingwebhookconfiguration", Service: "guard/guard", Outside: true}},
		{"webhook denies", widgets, errors.New(`admission webhook "defaults.example.com" denied the request: no`),
			Refusal{By: RefusedByWebhook, Webhook: "defaults.example.com", Configuration: "defaults", ConfigurationKind: "mutatingwebhookconfiguration", Denied: true, Outside: true}},
		{"unknown webhook", widgets, errors.New(`failed calling webhook "gone.example.com": timeout`),
			Refusal{By: RefusedByWebhook, Webhook: "gone.example.com"}},
		{"conversion", widgets, errors.New(`conversion webhook for example.com/v2, Kind=Widget failed: connection refused`),
			Refusal{By: RefusedByConversion, CRD: "widgets.example.com", Service: "conv/conv", Outside: true}},
		{"forbidden", widgets, apierrors.NewForbidden(widgets.GroupResource(), "w", errors.New(`User "ci" cannot delete resource "widgets" in API group "example.com"`)),
			Refusal{By: RefusedByRBAC, User: "ci", Verb: "delete", Resource: "widgets", Outside: true}},
		{"aggregated", metrics, apierrors.NewServiceUnavailable("the server is currently unable to handle the request"),
			Refusal{By: RefusedByAPI, APIService: "v1beta1.metrics.k8s.io", Service: "kube-system/metrics-server"}},
	}
	for _, tc := range cases {
		got := WhoRefused(obs, tc.gvr, tc.err)
		if got == nil {
			t.Errorf("%s: nobody refused", tc.name)
			continue
		}
		got.ServiceState = nil
		if *got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, *got, tc.want)
		}
	}
	if got := WhoRefused(obs, widgets, errors.New("connection reset by peer")); got != nil {
		t.Errorf("an answer that names nobody: %+v", got)
	}
	if got := WhoRefused(obs, widgets, nil); got != nil {
		t.Errorf("no error: %+v", got)
	}
}

func TestDiscoveryRefusalNamesTheBackend(t *testing.T) {
	obs := refusalCluster()
	obs.Services["kube-system/metrics-server"] = ServiceState{Exists: true}
	metrics := schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}
	r := DiscoveryRefusal(obs, metrics, errors.New("the server is currently unable to handle the request"))
	if r == nil || r.APIService != "v1beta1.metrics.k8s.io" || r.Service != "kube-system/metrics-server" || !r.Outside {
		t.Fatalf("DiscoveryRefusal = %+v", r)
	}
	if r := DiscoveryRefusal(obs, schema.GroupVersion{Group: "apps", Version: "v1"}, errors.New("no")); r != nil {
		t.Errorf("a built-in group has no backend: %+v", r)
	}
	// A backend that runs but whose discovery the API server could not
	// read: only fixing the backend helps.
	obs.Services["kube-system/metrics-server"] = ServiceState{Exists: true, ReadyEndpoints: 1}
	if r := DiscoveryRefusal(obs, metrics, errors.New("timeout")); r == nil || r.Outside {
		t.Errorf("a running backend that timed out once: %+v", r)
	}
	stale := fmt.Errorf("discover: %w", discovery.StaleGroupVersionError{})
	if r := DiscoveryRefusal(obs, metrics, stale); r == nil || !r.Outside {
		t.Errorf("a group-version the API server marks stale: %+v", r)
	}
}

// A denial's blocker names the configuration and offers the run-scoped
// bypass first.
func TestDenialBlockerOffersTheBypass(t *testing.T) {
	obs := refusalCluster()
	webhook, msg, ok := DenialOf(`admission webhook "guard.example.com" denied the request: tenants keep their widgets`)
	if !ok || webhook != "guard.example.com" || msg != "tenants keep their widgets" {
		t.Fatalf("DenialOf = %q %q %v", webhook, msg, ok)
	}
	if _, _, ok := DenialOf("timeout"); ok {
		t.Error("a timeout is no denial")
	}
	b := DenialBlocker(obs, webhook, msg, DeniedPurge)
	if b.Kind != BlockerWebhookDenies || b.Subject != "policy-guard" {
		t.Fatalf("blocker = %+v", b)
	}
	step, ok := b.PurgeStep()
	if !ok || step.Flag != FlagBypassWebhook || step.Value != "policy-guard" || step.Namespace != "team-a" {
		t.Errorf("purge step = %+v %v", step, ok)
	}
	if len(b.Actions) != 2 || b.Actions[1].Target != "validatingwebhookconfiguration/policy-guard" {
		t.Errorf("actions = %+v", b.Actions)
	}
	unknown := DenialBlocker(obs, "gone.example.com", "", DeniedController)
	if unknown.Subject != "gone.example.com" || len(unknown.Actions) != 0 {
		t.Errorf("a webhook no configuration holds: %+v", unknown)
	}
}

// On 1.37 an orphan's strip passes NamespaceLifecycle, but a webhook that
// selects namespaces by label answers the gone namespace's 404: the
// refusal names it. A 404 of the object itself, or a webhook without a
// selector, names nobody.
func TestNamespaceGoneNamesTheSelectingWebhook(t *testing.T) {
	obs := refusalCluster()
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	rules := []admissionregv1.RuleWithOperations{{Operations: []admissionregv1.OperationType{admissionregv1.Update},
		Rule: admissionregv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"*"}, Resources: []string{"widgets"}}}}
	obs.Webhooks = []Webhook{
		{Configuration: "open", Name: "open.example.com", Type: "Validating", Rules: rules},
		{Configuration: "tenants", Name: "tenants.example.com", Type: "Validating", Rules: rules,
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tenant": "yes"}}},
	}
	gone := apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, obs.Namespace.Name)
	r := WhoRefused(obs, widgets, gone)
	if r == nil || !r.NamespaceGone || r.Webhook != "tenants.example.com" || r.Configuration != "tenants" {
		t.Errorf("the namespace's 404: %+v", r)
	}
	if r := WhoRefused(obs, widgets, apierrors.NewNotFound(schema.GroupResource{Group: "example.com", Resource: "widgets"}, "w1")); r != nil {
		t.Errorf("the object's own 404 was blamed on %+v", r)
	}
	obs.Webhooks = obs.Webhooks[:1]
	if r := WhoRefused(obs, widgets, gone); r != nil {
		t.Errorf("a webhook without a namespaceSelector was blamed: %+v", r)
	}
}

// A policy whose binding selects namespaces by label fails on a gone
// namespace, and its failure policy denies: that is said as such; its
// other denials are not.
func TestNamespaceGoneNamesTheSelectingPolicy(t *testing.T) {
	obs := refusalCluster()
	deny := func(words string) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "Unknown",
			fmt.Errorf("ValidatingAdmissionPolicy 'keep' with binding 'keep-binding' denied request: %s", words))
	}
	r := WhoRefused(obs, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, deny(`failed to configure binding: namespaces "team-a" not found`))
	if r == nil || r.By != RefusedByPolicy || !r.NamespaceGone || r.Policy != "keep" || r.Binding != "keep-binding" {
		t.Errorf("the gone namespace's policy failure: %+v", r)
	}
	if r := WhoRefused(obs, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, deny("kept by the platform")); r == nil || r.NamespaceGone {
		t.Errorf("a plain denial: %+v", r)
	}
}
