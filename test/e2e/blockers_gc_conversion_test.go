package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// An owner deleted in the foreground waits for a dependent that cannot go
// while no garbage collector runs (a running namespace controller would end
// the wait: its background DELETE drops foregroundDeletion): explain names
// the dependent.
func TestBlockerForegroundDeletionNamesDependents(t *testing.T) {
	ctx := context.Background()
	plugintest.Quiet(t, cp, "namespace-controller", "garbage-collector-controller")
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "owner", nil))
	owner, err := cluster.Kube.CoreV1().ConfigMaps(name).Get(ctx, "owner", metav1.GetOptions{})
	plugintest.Must(t, err)
	_, err = cluster.Kube.CoreV1().ConfigMaps(name).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "dependent", Finalizers: []string{"example.com/hold"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID, BlockOwnerDeletion: ptr.To(true)}},
	}}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.Kube.CoreV1().ConfigMaps(name).Delete(ctx, "owner", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))

	e := explain(t, cp.Kubeconfig, name)
	b := e.blocker(t, diagnose.BlockerFinalizers, "configmaps/owner waits (foregroundDeletion) for its dependent configmaps/dependent", "--remove-finalizers=")
	if !slices.Contains(strings.Split(b.Subject, ","), "foregroundDeletion") {
		t.Errorf("subject %q", b.Subject)
	}
}

// A CRD whose conversion webhook is gone: its objects cannot be read in the
// preferred version, so nobody can delete them.
func TestBlockerConversionWebhookDown(t *testing.T) {
	name, _ := conversionStuckNamespace(t)
	e := explain(t, cp.Kubeconfig, name)
	e.blocker(t, diagnose.BlockerConversionWebhook, "conversion service conv-system/converter: not found", "strategy")
	e.agrees(t)
}

// The same, seen by a user who may not read CRDs: the list failure is
// reported as such, and the report says what it could not check.
func TestBlockerListFailedAndUnchecked(t *testing.T) {
	ctx := context.Background()
	name, group := conversionStuckNamespace(t)
	user := "no-crds-" + name
	plugintest.Must(t, cluster.GrantClusterRole(ctx, user, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"*"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{group, "admissionregistration.k8s.io", "apiregistration.k8s.io", "discovery.k8s.io"}, Resources: []string{"*"}, Verbs: []string{"get", "list"}},
	}))
	_, kubeconfig, err := cp.MintUser(user)
	plugintest.Must(t, err)

	e := explain(t, kubeconfig, name)
	e.blocker(t, diagnose.BlockerListFailed, "conversion webhook", "kubectl get convs.")
	if !strings.Contains(strings.Join(e.report.Unchecked, "\n"), "CustomResourceDefinitions") || !strings.Contains(e.human, "Not checked") {
		t.Errorf("the report does not say CRDs could not be read: %v", e.report.Unchecked)
	}
}

var crdsGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

func conversionStuckNamespace(t *testing.T) (string, string) {
	t.Helper()
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	group := fmt.Sprintf("c%d.example.com", time.Now().UnixNano()%100000)
	crd, v1GVR, err := cluster.BrokenConversionCRD(ctx, group, "Conv", "convs", "conv-system", "converter")
	t.Cleanup(func() {
		_ = cluster.Dynamic.Resource(crdsGVR).Delete(context.Background(), crd, metav1.DeleteOptions{})
	})
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateCustomResource(ctx, v1GVR, "Conv", name, "old"))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceDeletionContentFailure, v1.ConditionTrue)
	return name, group
}
