package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/owners"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// A tenancy operator of our own making: a cluster-scoped Tenant selects
// namespaces by label, and the operator puts a finalizer named for the
// tenant (tenancy.test/tenant-<name>) on each namespace it selects. The
// operator runs; the namespace is deleted; the finalizer stays. What the
// tenant says decides: gone, or no longer selecting the namespace, its
// controller will never remove the finalizer (strip it); still selecting
// it, the controller should act (its log).

// tenantScenario makes a namespace labelled team=blue whose metadata
// finalizer the running operator set for tenant, with the tenant's
// namespaceSelector (matchLabels team=<selects>), or the tenant deleted
// when selects is empty; then deletes the namespace and waits for the
// controller to have emptied it. It returns the namespace and the
// finalizer.
func tenantScenario(t *testing.T, selects string) (string, string) {
	t.Helper()
	return tenantScenarioNamed(t, selects, func(tenant string) string { return "tenancy.test/tenant-" + tenant })
}

// tenantScenarioNamed is tenantScenario with the finalizer named for the
// tenant as named gives.
func tenantScenarioNamed(t *testing.T, selects string, named func(tenant string) string) (string, string) {
	t.Helper()
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	tenants, err := cluster.EnsureClusterCRD(ctx, "tenancy.test", "Tenant", "tenants")
	plugintest.Must(t, err)
	op := installOperator(t, "tenancy-ops", "tenant-operator", 1, writes("tenancy.test", "tenants"),
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch", "update", "patch"}})
	tenant := "t-" + name
	team := selects
	if team == "" {
		team = "blue"
	}
	_, err = cluster.Dynamic.Resource(tenants).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "tenancy.test/v1", "kind": "Tenant", "metadata": map[string]any{"name": tenant},
		"spec": map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"team": team}}}}}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	t.Cleanup(func() {
		_ = cluster.Dynamic.Resource(tenants).Delete(context.Background(), tenant, metav1.DeleteOptions{})
	})

	plugintest.Must(t, cluster.CreateNamespaceWithLabels(ctx, name, map[string]string{"team": "blue"}))
	finalizer := named(tenant)
	patch := fmt.Sprintf(`{"metadata":{"finalizers":[%q]}}`, finalizer)
	_, err = op.Client.Kube.CoreV1().Namespaces().Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	plugintest.Must(t, err)
	t.Cleanup(func() { releaseNamespace(name) })
	if selects == "" {
		plugintest.Must(t, cluster.Dynamic.Resource(tenants).Delete(ctx, tenant, metav1.DeleteOptions{}))
	}

	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	// The controller empties it and removes its own token; the finalizer
	// stays.
	plugintest.Must(t, wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		ns, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return err == nil && len(ns.Spec.Finalizers) == 0, err
	}))
	return name, finalizer
}

// pointedOf is the pointed object explain reports for a namespace
// finalizer, which it must have looked for: its writer runs.
func pointedOf(t *testing.T, e explained, finalizer string) *owners.Pointed {
	t.Helper()
	f := finalizerDoc(t, e, finalizer)
	in := f.OwnerState.Inferred
	if f.OwnerState.State != diagnose.OwnerRunningReady || in == nil || in.Confidence != owners.Certain || in.Pointed == nil {
		t.Fatalf("owner %+v, inferred %+v\n%s", f.OwnerState, in, e.human)
	}
	return in.Pointed
}

// The tenant is gone: the finalizer is orphaned, and the step strips it
// with purge's flag for the namespace's finalizers; run, that step frees
// the namespace.
func TestNamespaceFinalizerOrphanedByItsObject(t *testing.T) {
	name, finalizer := tenantScenario(t, "")
	e := explain(t, cp.Kubeconfig, name)
	p := pointedOf(t, e, finalizer)
	if p.State != owners.ObjectGone || p.Object != "" || strings.Join(p.Looked, ",") != "tenants.tenancy.test" {
		t.Errorf("pointed %+v", p)
	}
	b := e.blocker(t, diagnose.BlockerNamespaceFinalizer, "and none is there: the object it was put there for is gone",
		"waiting will not help: kubectl ns-doctor purge "+name+" --remove-namespace-finalizers")
	if b.Actions[0].Kind != diagnose.ActionPurge || b.Actions[0].Flag != diagnose.FlagRemoveNamespaceFinalizers ||
		!strings.Contains(b.Summary, "its writer runs but will not remove it: the object its name points to is gone") || strings.Contains(b.NextStep, "kubectl logs") {
		t.Errorf("blocker %+v", b)
	}

	// The step works.
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", name, "--force", "--yes", "--remove-namespace-finalizers", "--backup-dir", t.TempDir())
	if r.Code != 0 {
		t.Fatalf("purge: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	plugintest.Must(t, wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return err != nil, nil
	}))
}

// The tenant is there but its selector no longer selects the namespace:
// its controller will not clean up here; strip.
func TestNamespaceFinalizerNoLongerSelected(t *testing.T) {
	name, finalizer := tenantScenario(t, "green")
	e := explain(t, cp.Kubeconfig, name)
	p := pointedOf(t, e, finalizer)
	if p.State != owners.ObjectPresent || p.Selection != owners.NoLongerSelects || p.Field != "spec.namespaceSelector" || !strings.HasPrefix(p.Object, "tenants.tenancy.test/t-") {
		t.Errorf("pointed %+v", p)
	}
	b := e.blocker(t, diagnose.BlockerNamespaceFinalizer, "which no longer selects this namespace (spec.namespaceSelector): its controller will not clean up here",
		"waiting will not help: kubectl ns-doctor purge "+name+" --remove-namespace-finalizers")
	if b.Actions[0].Kind != diagnose.ActionPurge || b.Actions[0].Flag != diagnose.FlagRemoveNamespaceFinalizers ||
		!strings.Contains(b.Summary, "its writer runs but will not remove it: the object its name points to no longer selects this namespace") {
		t.Errorf("blocker %+v", b)
	}
}

// The counter-example: the tenant is there and still selects the
// namespace. Nothing is said to be orphaned: its controller should act,
// and its log is the first step.
func TestNamespaceFinalizerStillSelected(t *testing.T) {
	name, finalizer := tenantScenario(t, "blue")
	e := explain(t, cp.Kubeconfig, name)
	p := pointedOf(t, e, finalizer)
	if p.State != owners.ObjectPresent || p.Selection != owners.Selects || p.Released() {
		t.Errorf("pointed %+v", p)
	}
	b := e.blocker(t, diagnose.BlockerNamespaceFinalizer, "which still selects this namespace (spec.namespaceSelector): its controller should remove it",
		"kubectl logs -n tenancy-ops deployment/tenant-operator")
	if b.Actions[0].Kind != diagnose.ActionOwnerLogs || strings.Contains(b.Summary, "will not remove it") || strings.Contains(flat(e.human), "is gone") {
		t.Errorf("blocker %+v\n%s", b, e.human)
	}
}

// Class 9: the finalizer embeds its tenant's name before a suffix naming
// the kind (tenancy.test/<tenant>-tenant), not as the whole name nor after
// a prefix. The tenant's names, listed, say which one it points to: that
// tenant is there and no longer selects the namespace, so nothing will
// remove it, and the step strips it. Read by the finalizer's suffixes
// alone, no tenant is named so, and the finalizer naming the kind, the
// tenant would be taken for gone.
func TestNamespaceFinalizerEmbedsItsObjectWithASuffix(t *testing.T) {
	name, finalizer := tenantScenarioNamed(t, "green", func(tenant string) string { return "tenancy.test/" + tenant + "-tenant" })
	e := explain(t, cp.Kubeconfig, name)
	p := pointedOf(t, e, finalizer)
	if p.State != owners.ObjectPresent || p.Selection != owners.NoLongerSelects || !strings.HasPrefix(p.Object, "tenants.tenancy.test/t-") ||
		strings.TrimSuffix(strings.TrimPrefix(finalizer, "tenancy.test/"), "-tenant") != strings.TrimPrefix(p.Object, "tenants.tenancy.test/") {
		t.Errorf("pointed %+v", p)
	}
	b := e.blocker(t, diagnose.BlockerNamespaceFinalizer, "which no longer selects this namespace (spec.namespaceSelector): its controller will not clean up here, and nothing will remove it",
		"waiting will not help: kubectl ns-doctor purge "+name+" --remove-namespace-finalizers")
	if b.Actions[0].Kind != diagnose.ActionPurge || !strings.Contains(e.report.Verdict.Summary, "waiting will not finish it") {
		t.Errorf("blocker %+v, verdict %q", b, e.report.Verdict.Summary)
	}
}

// The counter-example: the same suffix, the tenant there and still
// selecting the namespace. It is found, not taken for gone: nothing says
// the finalizer is orphaned, and the step is its controller's log.
func TestNamespaceFinalizerEmbedsItsObjectStillSelecting(t *testing.T) {
	name, finalizer := tenantScenarioNamed(t, "blue", func(tenant string) string { return "tenancy.test/" + tenant + "-tenant" })
	e := explain(t, cp.Kubeconfig, name)
	p := pointedOf(t, e, finalizer)
	if p.State != owners.ObjectPresent || p.Selection != owners.Selects || p.Released() {
		t.Errorf("pointed %+v", p)
	}
	b := e.blocker(t, diagnose.BlockerNamespaceFinalizer, "which still selects this namespace (spec.namespaceSelector): its controller should remove it",
		"kubectl logs -n tenancy-ops deployment/tenant-operator")
	if b.Actions[0].Kind != diagnose.ActionOwnerLogs || strings.Contains(b.Summary, "will not remove it") || strings.Contains(e.report.Verdict.Summary, "waiting will not") {
		t.Errorf("blocker %+v", b)
	}
}
