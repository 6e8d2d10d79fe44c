package guard

import (
	"context"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

func TestTimeoutSecondsAboveTheBudget(t *testing.T) {
	for budget, want := range map[time.Duration]int32{time.Second: 2, 2 * time.Second: 3, 2500 * time.Millisecond: 3, 100 * time.Millisecond: 1, MaxTimeout: 30} {
		if got := TimeoutSeconds(budget); got != want || float64(got) <= budget.Seconds() {
			t.Errorf("TimeoutSeconds(%s) = %d, want %d", budget, got, want)
		}
	}
}

// A configuration kube-apiserver would give up on before the budget ends
// is told, as registered in the cluster (deploy/guard's 3 seconds, or the
// API's default of 10 when left out).
func TestShortTimeoutIsTold(t *testing.T) {
	cfg := func(seconds *int32) *admissionregv1.ValidatingWebhookConfiguration {
		return &admissionregv1.ValidatingWebhookConfiguration{Webhooks: []admissionregv1.ValidatingWebhook{{Name: "other"}, {Name: WebhookName, TimeoutSeconds: seconds}}}
	}
	for _, tc := range []struct {
		seconds *int32
		budget  time.Duration
		short   bool
	}{
		{ptr.To[int32](3), 2 * time.Second, false},
		{ptr.To[int32](3), 3 * time.Second, true},
		{ptr.To[int32](3), 5 * time.Second, true},
		{nil, 9 * time.Second, false},
		{nil, 10 * time.Second, true},
	} {
		if _, short := ShortTimeout(cfg(tc.seconds), tc.budget); short != tc.short {
			t.Errorf("timeoutSeconds %v, budget %s: short %v, want %v", tc.seconds, tc.budget, short, tc.short)
		}
	}
	if _, short := ShortTimeout(&admissionregv1.ValidatingWebhookConfiguration{}, time.Minute); short {
		t.Error("a configuration without the guard's webhook is said to be short")
	}
}

// The webhook never stands in the namespace controller's way: DELETE of
// namespaces and CRDs only, no subresource, failing open, skipping what is
// already being deleted.
func TestWebhookCatchesOnlyFirstDeletes(t *testing.T) {
	wh := Webhook(admissionregv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/validate")}, 2*time.Second)
	if *wh.FailurePolicy != admissionregv1.Ignore || *wh.SideEffects != admissionregv1.SideEffectClassNone || *wh.TimeoutSeconds != 3 {
		t.Errorf("webhook %+v", wh)
	}
	resources := map[string]bool{}
	for _, r := range wh.Rules {
		if len(r.Operations) != 1 || r.Operations[0] != admissionregv1.Delete {
			t.Errorf("rule %+v catches %v", r.Rule, r.Operations)
		}
		for _, res := range r.Resources {
			resources[res] = true
		}
	}
	if len(resources) != 2 || !resources["namespaces"] || !resources["customresourcedefinitions"] {
		t.Errorf("resources %v, want namespaces and customresourcedefinitions only (no subresource)", resources)
	}
	if len(wh.MatchConditions) != 1 || wh.MatchConditions[0].Expression != NotDeletingCondition {
		t.Errorf("matchConditions %+v", wh.MatchConditions)
	}
}

func TestRegisterReplacesOnlyItsOwn(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	reg, err := Register(ctx, c.AdmissionregistrationV1(), "g", "https://127.0.0.1:1/validate", []byte("ca"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := c.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "g", metav1.GetOptions{})
	if got.Labels[OutOfClusterLabel] != "out-of-cluster" || *got.Webhooks[0].ClientConfig.URL != "https://127.0.0.1:1/validate" || string(got.Webhooks[0].ClientConfig.CABundle) != "ca" {
		t.Errorf("registered %+v", got)
	}
	// A killed run's registration is replaced.
	if _, err := Register(ctx, c.AdmissionregistrationV1(), "g", "https://127.0.0.1:2/validate", []byte("ca2"), time.Second); err != nil {
		t.Errorf("replacing its own: %v", err)
	}
	// Anyone else's is not.
	other := &admissionregv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "theirs"}}
	_, _ = c.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, other, metav1.CreateOptions{})
	if _, err := Register(ctx, c.AdmissionregistrationV1(), "theirs", "https://x/validate", nil, time.Second); !IsNotOurs(err) {
		t.Errorf("replacing another's: %v", err)
	}
	if err := Unregister(ctx, c.AdmissionregistrationV1(), reg); err != nil {
		t.Errorf("unregister: %v", err)
	}
}

func TestRegistrationRefused(t *testing.T) {
	c := fake.NewClientset()
	c.PrependReactor("create", "validatingwebhookconfigurations", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(admissionregv1.Resource("validatingwebhookconfigurations"), "g", nil)
	})
	_, err := Register(context.Background(), c.AdmissionregistrationV1(), "g", "https://x/validate", nil, time.Second)
	var re *RegistrationError
	if !apierrors.IsForbidden(err) || !asErr(err, &re) || re.Verb != "create" {
		t.Errorf("refused registration: %v", err)
	}
}

func asErr(err error, re **RegistrationError) bool {
	r, ok := err.(*RegistrationError)
	*re = r
	return ok
}
