package inspect

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/kube/kubetest"
)

var gadgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}

// An observation gathers what every blocker needs: the failing group
// traced to its APIService and Service, webhooks with their backends, the
// content per type (plain objects counted, not kept, when compacting).
func TestObserve(t *testing.T) {
	c := kubetest.New()
	c.Serve(gadgets, "Gadget", kubetest.AllVerbs)
	c.FailedGroups = map[schema.GroupVersion]error{{Group: "metrics.k8s.io", Version: "v1beta1"}: errors.New("stale GroupVersion discovery: metrics.k8s.io/v1beta1")}
	ns := c.AddNamespace("demo", time.Minute)
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		c.Add(kubetest.ConfigMaps, kubetest.Object("ConfigMap", "demo", name))
	}
	c.Add(kubetest.ConfigMaps, kubetest.Object("ConfigMap", "demo", "held", "example.com/hold"))
	c.Add(kubetest.Pods, kubetest.Pod("demo", "p", "node-1", 45))
	c.Fail = func(verb string, gvr schema.GroupVersionResource, _, _ string) error {
		if verb == "list" && gvr == gadgets {
			return apierrors.NewServiceUnavailable("gadget backend down")
		}
		return nil
	}
	apisvc := &apiregv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1beta1.metrics.k8s.io"},
		Spec:   apiregv1.APIServiceSpec{Group: "metrics.k8s.io", Version: "v1beta1", Service: &apiregv1.ServiceReference{Namespace: "kube-system", Name: "metrics-server"}},
		Status: apiregv1.APIServiceStatus{Conditions: []apiregv1.APIServiceCondition{{Type: apiregv1.Available, Status: apiregv1.ConditionFalse, Reason: "ServiceNotFound"}}}}
	webhook := &admissionregv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "guard"}, Webhooks: []admissionregv1.ValidatingWebhook{{
		Name: "deny.guard", ClientConfig: admissionregv1.WebhookClientConfig{Service: &admissionregv1.ServiceReference{Namespace: "hooks", Name: "guard", Port: ptr.To(int32(8443))}},
	}}}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "guard", Namespace: "hooks"}}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "guard-1", Namespace: "hooks", Labels: map[string]string{discoveryv1.LabelServiceName: "guard"}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1", "10.0.0.2"}}, {Addresses: []string{"10.0.0.3"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}}}}

	in := New(c.Clients([]runtime.Object{apisvc, webhook, svc, slice}...), Config{Compact: true})
	obs, err := in.Observe(context.Background(), ns, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.FailedGroups) != 1 || len(obs.APIServices) != 1 || obs.Services["kube-system/metrics-server"].Exists {
		t.Errorf("failing group %v, apiservices %d, backend %+v", obs.FailedGroups, len(obs.APIServices), obs.Services["kube-system/metrics-server"])
	}
	wh := obs.Webhooks
	if len(wh) != 1 || wh[0].FailurePolicy != "Fail" || wh[0].TimeoutSeconds != 10 || wh[0].Service.Port != 8443 || obs.Services["hooks/guard"] != (diagnose.ServiceState{Exists: true, ReadyEndpoints: 2}) {
		t.Errorf("webhooks %+v, backend %+v", wh, obs.Services["hooks/guard"])
	}
	cms := obs.Snapshot.Lists[kubetest.ConfigMaps]
	var kept []string
	for _, item := range cms.Items {
		kept = append(kept, item.Name)
	}
	if !reflect.DeepEqual(kept, []string{"a", "b", "c", "held"}) || obs.Snapshot.Omitted[kubetest.ConfigMaps] != 2 {
		t.Errorf("compact sweep kept %v and omitted %d, want 3 examples and the held one, 2 omitted", kept, obs.Snapshot.Omitted[kubetest.ConfigMaps])
	}
	if err := obs.Snapshot.ListErrs[gadgets]; !apierrors.IsServiceUnavailable(err) {
		t.Errorf("gadgets list error %v", err)
	}
	if pods := obs.Snapshot.Pods; len(pods) != 1 || !obs.Snapshot.PodSpecsUnknown || *pods[0].Spec.TerminationGracePeriodSeconds != 30 {
		t.Errorf("pods from metadata %+v (a pod not yet deleted is given the default 30 s)", pods)
	}
	if _, ok := obs.Snapshot.Lists[deletion.PodsGVR]; !ok {
		t.Error("pods not swept")
	}
}

// Without permission to read webhooks, CRDs or APIServices the report says
// what it could not check instead of missing those blockers silently.
func TestObserveNamesWhatItCouldNotRead(t *testing.T) {
	c := kubetest.New()
	c.FailedGroups = map[schema.GroupVersion]error{{Group: "metrics.k8s.io", Version: "v1beta1"}: errors.New("down")}
	ns := c.AddNamespace("demo", time.Minute)
	c.Fail = func(verb string, gvr schema.GroupVersionResource, _, _ string) error {
		if verb == "full list" && gvr == kubetest.CRDs {
			return apierrors.NewForbidden(gvr.GroupResource(), "", errors.New("no"))
		}
		return nil
	}
	clients := c.Clients()
	clients.Kube.(*fake.Clientset).PrependReactor("list", "validatingwebhookconfigurations", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(admissionregv1.Resource("validatingwebhookconfigurations"), "", errors.New("no"))
	})
	obs, err := New(clients, Config{}).Observe(context.Background(), ns, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []diagnose.UncheckedSubject{diagnose.UncheckedCRDs, diagnose.UncheckedValidatingWebhooks} {
		if !slices.ContainsFunc(obs.Unchecked, func(u diagnose.Unchecked) bool { return u.Subject == want && strings.Contains(u.Error, "forbidden") }) {
			t.Errorf("unchecked %v lacks %s", obs.Unchecked, want)
		}
	}
}
