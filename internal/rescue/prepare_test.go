package rescue

import (
	"context"
	"errors"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/kube/kubetest"
)

// Bad input is found by reading, before anything is written.
func TestPrepareRefusesBadInputBeforeAnyChange(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New()
	c.AddNamespace("active", 0)
	c.AddNamespace("going", time.Minute)
	clients := c.Clients()
	policy := admissionGVR("validatingadmissionpolicies")

	if _, err := Prepare(ctx, clients, "active", t.TempDir()); !errors.Is(err, ErrActive) {
		t.Errorf("an Active namespace: %v, want ErrActive", err)
	}
	if _, err := Prepare(ctx, clients, "missing", t.TempDir()); !errors.Is(err, ErrNotFound) {
		t.Errorf("a missing namespace: %v, want ErrNotFound", err)
	}
	if _, err := Prepare(ctx, clients, "going", t.TempDir()); !errors.Is(err, ErrNoPolicyAPI) {
		t.Errorf("a cluster without the policy API: %v, want ErrNoPolicyAPI", err)
	}
	if _, err := PrepareProtect(ctx, clients, "going", false); !errors.Is(err, ErrNoPolicyAPI) {
		t.Errorf("protect without the policy API: %v, want ErrNoPolicyAPI", err)
	}
	c.Serve(policy, "ValidatingAdmissionPolicy", metav1.Verbs{"create", "delete", "get", "list", "patch"})
	c.Serve(admissionGVR("validatingadmissionpolicybindings"), "ValidatingAdmissionPolicyBinding", metav1.Verbs{"create", "delete", "get", "list", "patch"})
	clients = c.Clients()
	if _, err := PrepareProtect(ctx, clients, "going", false); !errors.Is(err, ErrTerminating) {
		t.Errorf("protect of a terminating namespace: %v, want ErrTerminating", err)
	}
	if got, err := clients.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().List(ctx, metav1.ListOptions{}); err != nil || len(got.Items) != 0 {
		t.Errorf("policies after refused runs: %v %v", got, err)
	}
}

func admissionGVR(resource string) schema.GroupVersionResource {
	return admissionv1.SchemeGroupVersion.WithResource(resource)
}
