package diagnose_test

import (
	"errors"
	"testing"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/apierror"
	. "github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// A plan's predicted rejection is typed: who refuses and its backend's
// state are read from the value, never from its text, which is
// kube-apiserver's answer word for word (the predicted conditions match
// the controller's).
func TestPredictedRejectionIsTyped(t *testing.T) {
	obs := observation()
	obs.Webhooks = []Webhook{failClosed("policy-guard", "guard", "guard", widgets, admissionregv1.Delete, admissionregv1.Update)}
	obs.Services["guard/guard"] = ServiceState{Exists: true}
	obs.Snapshot.Lists[widgets] = &metav1.PartialObjectMetadataList{Items: []metav1.PartialObjectMetadata{{ObjectMeta: metav1.ObjectMeta{Name: "w1", Finalizers: []string{"example.com/hold"}}}}}
	rej := PredictRejections(obs, nil)
	var p *PredictedRejection
	if !errors.As(rej.Delete[widgets], &p) || !errors.As(rej.Update[widgets], &p) || p.Webhook.Configuration != "policy-guard" || !p.Backend.Exists {
		t.Fatalf("rejections %+v", rej)
	}
	want := `Internal error occurred: failed calling webhook "deny.policy-guard": failed to call webhook: Post "https://guard.guard.svc:443/validate?timeout=10s": no endpoints available for service "guard"`
	if p.Error() != want || !apierrors.IsInternalError(p) {
		t.Errorf("the answer:\n got %s\nwant %s", p.Error(), want)
	}
	if e := apierror.Classify(p); e.Kind != apierror.WebhookFailed || e.Webhook != "deny.policy-guard" {
		t.Errorf("classified %+v", e)
	}
	// Who refused needs nothing of the observation: the prediction knows.
	r := WhoRefused(Observation{}, widgets, p)
	if r == nil || r.By != RefusedByWebhook || r.Configuration != "policy-guard" || r.ConfigurationKind != "validatingwebhookconfiguration" ||
		r.Service != "guard/guard" || r.ServiceState == nil || !r.Outside {
		t.Errorf("refusal %+v", r)
	}
	if got := PredictRejections(obs, map[string]bool{"policy-guard": true}); len(got.Delete) != 0 || got.Finalize != nil {
		t.Errorf("a bypassed configuration is predicted: %+v", got)
	}
}
