package scenario

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// DenyingWebhook is a live validating webhook, served in the test process
// over TLS and called by URL, that denies every request it catches with
// message: a webhook author's words, which reach whoever's request it
// denies.
type DenyingWebhook struct {
	Name   string
	server *httptest.Server
	c      *Cluster
}

// StartDenyingWebhook registers configuration name, whose one webhook
// denies the operations ops on resource gvr (a cluster-scoped resource:
// namespaces) in the namespace named target, with message.
func (c *Cluster) StartDenyingWebhook(ctx context.Context, name, target, message string, gvr schema.GroupVersionResource, ops ...admissionregv1.OperationType) (*DenyingWebhook, error) {
	w := &DenyingWebhook{Name: name, c: c}
	w.server = httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(req.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(rw, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: false,
			Result: &metav1.Status{Message: message, Code: http.StatusForbidden}}
		review.Request = nil
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(&review)
	}))
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: w.server.Certificate().Raw})
	cfg := &admissionregv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregv1.ValidatingWebhook{{
			Name:                    "deny." + name + ".example.com",
			ClientConfig:            admissionregv1.WebhookClientConfig{URL: ptr.To(w.server.URL + "/validate"), CABundle: ca},
			FailurePolicy:           ptr.To(admissionregv1.Fail),
			SideEffects:             ptr.To(admissionregv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": target}},
			Rules: []admissionregv1.RuleWithOperations{{Operations: ops,
				Rule: admissionregv1.Rule{APIGroups: []string{gvr.Group}, APIVersions: []string{gvr.Version}, Resources: []string{gvr.Resource}}}},
		}},
	}
	if _, err := c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		w.server.Close()
		return nil, fmt.Errorf("creating webhook %s: %w", name, err)
	}
	return w, nil
}

// Close unregisters the webhook and stops its server.
func (w *DenyingWebhook) Close(ctx context.Context) {
	_ = w.c.DeleteWebhook(ctx, w.Name)
	w.server.Close()
}

// CreateWarningEvent records a Warning event about the namespace's object
// kind/name, with reason and message.
func (c *Cluster) CreateWarningEvent(ctx context.Context, namespace, kind, name, reason, message string) error {
	e := &v1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: "ns-doctor-test-", Namespace: namespace},
		InvolvedObject: v1.ObjectReference{Kind: kind, Name: name, Namespace: namespace},
		Reason:         reason, Message: message, Type: v1.EventTypeWarning, Count: 1,
		FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Source: v1.EventSource{Component: "ns-doctor-test"},
	}
	if _, err := c.Kube.CoreV1().Events(namespace).Create(ctx, e, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating event in %s: %w", namespace, err)
	}
	return nil
}

// CreateHolder creates a custom resource held by finalizer, whose status
// says something is wrong with message, and that carries annotations.
func (c *Cluster) CreateHolder(ctx context.Context, gvr schema.GroupVersionResource, kind, namespace, name, finalizer, message string, annotations map[string]string) error {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": "Ready", "status": "False", "reason": "DeleteFailed", "message": message,
			"lastTransitionTime": metav1.Now().UTC().Format("2006-01-02T15:04:05Z"),
		}}},
	}}
	obj.SetFinalizers([]string{finalizer})
	obj.SetAnnotations(annotations)
	if _, err := c.Dynamic.Resource(gvr).Namespace(namespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating %s %s/%s: %w", kind, namespace, name, err)
	}
	return nil
}
