package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/owners"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
	"github.com/ns-doctor/ns-doctor/test/support/scenario"
)

// Operators the catalogue does not know, installed as their manifests
// install them: a ClusterRole over their own resources bound to their
// ServiceAccount, a Deployment running as it, and their finalizers put on
// by their own client, whose user agent the API server records as the
// field manager. explain names each owner from the cluster itself.

// installOperator installs an operator for the test, uninstalled at its
// end.
func installOperator(t *testing.T, namespace, name string, ready int32, rules ...rbacv1.PolicyRule) *scenario.Operator {
	t.Helper()
	op, err := cluster.InstallOperator(context.Background(), namespace, name, ready, rules...)
	plugintest.Must(t, err)
	t.Cleanup(func() { op.Uninstall(context.Background(), cluster) })
	return op
}

// writes is the rule an operator's controller gets over its resources.
func writes(group string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: resources, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}
}

// createObject creates a custom resource as a user would (no finalizer),
// with its status conditions.
func createObject(t *testing.T, gvr schema.GroupVersionResource, kind, namespace, name string, conds ...map[string]any) {
	t.Helper()
	var list []any
	for _, c := range conds {
		list = append(list, c)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec":     map[string]any{"size": "small"},
		"status":   map[string]any{"conditions": list},
	}}
	_, err := cluster.Dynamic.Resource(gvr).Namespace(namespace).Create(context.Background(), obj, metav1.CreateOptions{})
	plugintest.Must(t, err)
}

// finalize has the operator put its finalizer on an object, as its
// reconciler does (a merge patch from its own client), and the test's end
// take it off.
func finalize(t *testing.T, op *scenario.Operator, gvr schema.GroupVersionResource, namespace, name, finalizer string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"finalizers":[%q]}}`, finalizer)
	_, err := op.Client.Dynamic.Resource(gvr).Namespace(namespace).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	plugintest.Must(t, err)
	t.Cleanup(func() {
		_, _ = cluster.Dynamic.Resource(gvr).Namespace(namespace).Patch(context.Background(), name, types.MergePatchType,
			[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
}

func finalizerDoc(t *testing.T, e explained, name string) printer.FinalizerDocument {
	t.Helper()
	for _, f := range append(e.report.Finalizers, e.report.NamespaceFinalizers...) {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no finalizer %s in %+v\n%s", name, e.report.Finalizers, e.human)
	return printer.FinalizerDocument{}
}

// flat is the human report on one line: it wraps long lines.
func flat(human string) string { return strings.Join(strings.Fields(human), " ") }

// A content finalizer of an operator nobody catalogued: its field manager
// and its ServiceAccount's rights agree (another identity that may patch
// gizmos is told apart), its Deployment runs. Within --grace it is going;
// past it, with nothing released, the verdict says the owner runs and does
// not finish, with what the holder says (a Recoverable=True condition
// carrying the error) and the owner's log as the step.
func TestOwnerInferredForAnUncataloguedOperator(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	gvr, err := cluster.EnsureCRD(ctx, "gizmo.example.com", "Gizmo", "gizmos")
	plugintest.Must(t, err)
	op := installOperator(t, "gizmo-system", "gizmo-operator", 1, writes("gizmo.example.com", "gizmos", "gizmos/status"))
	installOperator(t, "backup-system", "gizmo-backup", 1, writes("gizmo.example.com", "gizmos"))
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	createObject(t, gvr, "Gizmo", name, "g1",
		condition("Ready", "True", "Available", "gizmo is up"),
		condition("Recoverable", "True", "CleanupFailed", "deleting bucket gizmo-g1: AccessDenied: not authorized to perform s3:DeleteBucket"))
	finalize(t, op, gvr, name, "g1", "gizmo.example.com/cleanup")

	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)

	// Within --grace: going, not stuck; the owner is named all the same.
	e := explain(t, cp.Kubeconfig, name, "--grace=1h")
	if e.code != 0 || e.report.Verdict.State != diagnose.StateTerminating {
		t.Errorf("within --grace: exit %d, verdict %+v\n%s", e.code, e.report.Verdict, e.human)
	}
	f := finalizerDoc(t, e, "gizmo.example.com/cleanup")
	in := f.OwnerState.Inferred
	switch {
	case f.Known || f.OwnerState.State != diagnose.OwnerRunningReady || in == nil:
		t.Fatalf("owner %+v", f)
	case in.Confidence != owners.Certain || in.Workload == nil || in.Workload.String() != "deployment gizmo-system/gizmo-operator" ||
		in.Identity == nil || in.Identity.String() != "serviceaccount gizmo-system/gizmo-operator" || len(in.SetBy) == 0 || in.SetBy[0].Name != "gizmo-operator" ||
		in.CandidateCount != 2:
		t.Errorf("inferred %+v", in)
	}
	for _, want := range []string{`set by field manager "gizmo-operator" on gizmos.gizmo.example.com/g1`,
		"serviceaccount gizmo-system/gizmo-operator may update it through ClusterRole/gizmo-operator (ClusterRoleBinding/gizmo-operator)",
		"deployment gizmo-system/gizmo-operator runs as it: 1/1 ready", "certain owner"} {
		if !strings.Contains(f.OwnerState.Evidence, want) || !strings.Contains(flat(e.human), want) {
			t.Errorf("evidence lacks %q: %q\n%s", want, f.OwnerState.Evidence, e.human)
		}
	}

	// Past --grace, with nothing released.
	e = explain(t, cp.Kubeconfig, name)
	e.agrees(t)
	b := e.blocker(t, diagnose.BlockerFinalizers, "gizmos.gizmo.example.com/g1 condition Recoverable=True (CleanupFailed): deleting bucket gizmo-g1: AccessDenied",
		"kubectl logs -n gizmo-system deployment/gizmo-operator")
	if !strings.Contains(b.Summary, "their owner (deployment/gizmo-operator in gizmo-system) runs, but has released none of these objects in") ||
		!strings.Contains(b.Summary, "since they were marked for deletion: it does not finish") || strings.Contains(b.NextStep, "still runs") ||
		!hasAction(b, diagnose.PurgeAction(name, diagnose.FlagRemoveFinalizers, "gizmo.example.com/cleanup")) {
		t.Errorf("blocker %+v", b)
	}
	if len(e.report.Holders) != 1 || len(e.report.Holders[0].Conditions) != 1 || e.report.Holders[0].Conditions[0].Type != "Recoverable" ||
		!strings.Contains(flat(e.human), "gizmos.gizmo.example.com/g1 Recoverable=True (CleanupFailed") {
		t.Errorf("holders %+v\n%s", e.report.Holders, e.human)
	}
}

// The namespace's own finalizers: one in metadata.finalizers and a
// spec.finalizers token, both put there by an operator that may update
// namespaces (and their finalize subresource), which names itself in the
// namespace's owner references.
func TestOwnerInferredForANamespaceFinalizer(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	spaces, err := cluster.EnsureClusterCRD(ctx, "tenancy.example.com", "Space", "spaces")
	plugintest.Must(t, err)
	op := installOperator(t, "tenancy-system", "tenancy-operator", 1, writes("tenancy.example.com", "spaces"),
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces/finalize"}, Verbs: []string{"update"}})
	space, err := op.Client.Dynamic.Resource(spaces).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "tenancy.example.com/v1", "kind": "Space", "metadata": map[string]any{"name": name}}}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	t.Cleanup(func() {
		_ = cluster.Dynamic.Resource(spaces).Delete(context.Background(), name, metav1.DeleteOptions{})
	})

	// The operator creates the namespace with its token, then sets its
	// metadata finalizer and owner.
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.NamespaceSpec{Finalizers: []v1.FinalizerName{v1.FinalizerKubernetes, "tenancy.example.com/finalize"}}}
	_, err = op.Client.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	plugintest.Must(t, err)
	patch := fmt.Sprintf(`{"metadata":{"finalizers":["tenancy.example.com/space"],"ownerReferences":[{"apiVersion":"tenancy.example.com/v1","kind":"Space","name":%q,"uid":%q}]}}`,
		name, space.GetUID())
	_, err = op.Client.Kube.CoreV1().Namespaces().Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	plugintest.Must(t, err)
	t.Cleanup(func() { releaseNamespace(name) })

	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	// The controller empties it and removes its own token; the others stay.
	plugintest.Must(t, wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		ns, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return err == nil && len(ns.Spec.Finalizers) == 1, err
	}))

	e := explain(t, cp.Kubeconfig, name)
	e.agrees(t)
	meta := e.blocker(t, diagnose.BlockerNamespaceFinalizer, "tenancy.example.com/space: deployment tenancy-system/tenancy-operator (running)",
		"kubectl logs -n tenancy-system deployment/tenancy-operator")
	token := e.blocker(t, diagnose.BlockerNamespaceFinalizer, "tenancy.example.com/finalize: deployment tenancy-system/tenancy-operator (running)",
		"kubectl logs -n tenancy-system deployment/tenancy-operator")
	for _, want := range []string{`set by field manager "tenancy-operator" on namespace/` + name,
		"serviceaccount tenancy-system/tenancy-operator may update it through ClusterRole/tenancy-operator",
		"the namespace's owner Space " + name + " (tenancy.example.com/v1) is there"} {
		if !strings.Contains(strings.Join(meta.Evidence, "\n"), want) {
			t.Errorf("metadata finalizer's evidence lacks %q: %q", want, meta.Evidence)
		}
	}
	if !strings.Contains(strings.Join(token.Evidence, "\n"), "serviceaccount tenancy-system/tenancy-operator may update it through ClusterRole/tenancy-operator") {
		t.Errorf("token's evidence: %q", token.Evidence)
	}
	// The token's setter is not recorded: spec.finalizers is an atomic
	// list, and the controller's finalize took it over when it removed its
	// own token. RBAC alone names the owner: likely.
	for fin, confidence := range map[string]owners.Confidence{"tenancy.example.com/space": owners.Certain, "tenancy.example.com/finalize": owners.Likely} {
		f := finalizerDoc(t, e, fin)
		if in := f.OwnerState.Inferred; f.OwnerState.State != diagnose.OwnerRunningReady || in == nil || in.Confidence != confidence ||
			in.Object == nil || in.Object.State != owners.ObjectPresent || in.Object.Name != name {
			t.Errorf("%s: owner %+v, inferred %+v", fin, f.OwnerState, in)
		}
	}
}

// releaseNamespace takes every finalizer off a namespace the test left
// held, so that it goes.
func releaseNamespace(name string) {
	ctx := context.Background()
	_, _ = cluster.Kube.CoreV1().Namespaces().Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	ns, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		ns.Spec.Finalizers = nil
		_, _ = cluster.Kube.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
	}
}

// An operator deployed in the namespace it serves, deleted with it: its
// ServiceAccount is bound cluster-wide, but lived there. Before the
// deletion, --if-deleted predicts it; after, explain names it at once,
// whatever --grace, and its step (the purge flag) works.
func TestOwnerDeletedWithItsNamespace(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	gvr, err := cluster.EnsureCRD(ctx, "widget-ops.example.com", "Widget", "widgets")
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	op := installOperator(t, name, "widget-operator", 1, writes("widget-ops.example.com", "widgets"))
	createObject(t, gvr, "Widget", name, "w1")
	finalize(t, op, gvr, name, "w1", "widget-ops.example.com/cleanup")

	e := explain(t, cp.Kubeconfig, name, "--if-deleted")
	e.blocker(t, diagnose.BlockerOwnerDeleted, "runs as it, in this namespace, being deleted with it", "--remove-finalizers=widget-ops.example.com/cleanup")

	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)
	plugintest.Must(t, wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cluster.Kube.AppsV1().Deployments(name).Get(ctx, "widget-operator", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}))

	e = explain(t, cp.Kubeconfig, name, "--grace=1h")
	e.agrees(t)
	if e.code != 3 {
		t.Errorf("exit %d, want 3 (stuck at once)\n%s", e.code, e.human)
	}
	b := e.blocker(t, diagnose.BlockerOwnerDeleted, "serviceaccount "+name+"/widget-operator may update it through ClusterRole/widget-operator",
		"nothing will remove them: kubectl ns-doctor purge "+name+" --remove-finalizers=widget-ops.example.com/cleanup")
	if !strings.Contains(b.Summary, "whose owner lived in this namespace and was deleted with it: nothing will remove them") ||
		!strings.Contains(strings.Join(b.Evidence, "\n"), "it lived in this namespace and was deleted with it") {
		t.Errorf("blocker %+v", b)
	}
	if f := finalizerDoc(t, e, "widget-ops.example.com/cleanup"); f.OwnerState.State != diagnose.OwnerDeletedWithNamespace {
		t.Errorf("owner %+v", f.OwnerState)
	}
	if !strings.Contains(e.human, "DeletedWithNamespace") {
		t.Errorf("the RUNNING column does not say it:\n%s", e.human)
	}

	// The step, as given, gets the namespace deleted.
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", name, "--remove-finalizers=widget-ops.example.com/cleanup",
		"--force", "--yes", "--backup-dir", t.TempDir(), "--timeout=60s")
	if r.Code != 0 {
		t.Errorf("purge: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// A catalogued finalizer whose usual workload is not there, while the
// cluster shows another running owner (a renamed install): the evidence
// says both, and the liveness follows the cluster, certain.
func TestCatalogueOwnerCheckedAgainstTheCluster(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	gvr, err := cluster.EnsureCRD(ctx, "monitoring.coreos.com", "Prometheus", "prometheuses")
	plugintest.Must(t, err)
	op := installOperator(t, "monitoring", "kube-prometheus-stack-operator", 1, writes("monitoring.coreos.com", "prometheuses"))
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	createObject(t, gvr, "Prometheus", name, "k8s")
	finalize(t, op, gvr, name, "k8s", "monitoring.coreos.com/status-cleanup")

	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)
	e := explain(t, cp.Kubeconfig, name)
	f := finalizerDoc(t, e, "monitoring.coreos.com/status-cleanup")
	if !f.Known || f.Owner != "Prometheus Operator" || f.OwnerState.State != diagnose.OwnerRunningReady {
		t.Errorf("finalizer %+v", f)
	}
	for _, want := range []string{"none of its usual workloads found: deployment default/prometheus-operator",
		"the cluster shows another owner than the catalogue's: certain owner",
		"deployment monitoring/kube-prometheus-stack-operator runs as it: 1/1 ready"} {
		if !strings.Contains(f.OwnerState.Evidence, want) {
			t.Errorf("evidence lacks %q: %q", want, f.OwnerState.Evidence)
		}
	}
}

// A catalogued operator installed in the very namespace it serves (its
// usual workload found there, by name): its catalogue entry says who it
// is, and the namespace says it goes with it. --if-deleted predicts it
// while it runs; once deleted, explain says so at once.
func TestCatalogueOwnerDeletedWithItsNamespace(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	gvr, err := cluster.EnsureCRD(ctx, "monitoring.coreos.com", "Prometheus", "prometheuses")
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	op := installOperator(t, name, "prometheus-operator", 1, writes("monitoring.coreos.com", "prometheuses"))
	createObject(t, gvr, "Prometheus", name, "k8s")
	finalize(t, op, gvr, name, "k8s", "monitoring.coreos.com/status-cleanup")

	e := explain(t, cp.Kubeconfig, name, "--if-deleted")
	e.blocker(t, diagnose.BlockerOwnerDeleted, "deployment "+name+"/prometheus-operator: 1/1 ready, in this namespace: it goes with it",
		"--remove-finalizers=monitoring.coreos.com/status-cleanup")

	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)
	e = explain(t, cp.Kubeconfig, name, "--grace=1h")
	e.agrees(t)
	b := e.blocker(t, diagnose.BlockerOwnerDeleted, "monitoring.coreos.com/status-cleanup: owner Prometheus Operator",
		"nothing will remove them: kubectl ns-doctor purge "+name+" --remove-finalizers=monitoring.coreos.com/status-cleanup")
	if !strings.Contains(b.Summary, "whose owner lived in this namespace and was deleted with it") || e.code != 3 {
		t.Errorf("exit %d, blocker %+v", e.code, b)
	}
	if f := finalizerDoc(t, e, "monitoring.coreos.com/status-cleanup"); !f.Known || f.OwnerState.State != diagnose.OwnerDeletedWithNamespace {
		t.Errorf("finalizer %+v", f)
	}
}
