package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
	"github.com/ns-doctor/ns-doctor/test/support/scenario"
)

// An operator of our own runs, and its object says in its own status that
// what its cleanup waits for does not exist (a Secret of the namespace,
// deleted with it). Waiting will not help: the report says so, and the
// step is to restore what is missing, or to strip, before the log.
func TestRunningOwnerWaitsOnWhatDoesNotExist(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	gvr, err := cluster.EnsureCRD(ctx, "lockbox.example.org", "Lockbox", "lockboxes")
	plugintest.Must(t, err)
	op := installOperator(t, "lockbox-system", "lockbox-controller", 1, writes("lockbox.example.org", "lockboxes", "lockboxes/status"))
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	createObject(t, gvr, "Lockbox", name, "m1",
		condition("Ready", "False", "CredentialsMissing", `reading credentials: secrets "lockbox-token" not found`))
	finalize(t, op, gvr, name, "m1", "lockbox.example.org/seal")

	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)
	e := explain(t, cp.Kubeconfig, name)
	e.agrees(t)
	b := e.blocker(t, diagnose.BlockerFinalizers, `lockboxes.lockbox.example.org/m1 condition Ready=False (CredentialsMissing): reading credentials: secrets "lockbox-token" not found`,
		`waiting will not help: restore what lockboxes.lockbox.example.org/m1 says is missing (reading credentials: secrets "lockbox-token" not found), and its owner can finish; if it cannot come back: kubectl ns-doctor purge `+name+` --remove-finalizers=lockbox.example.org/seal`)
	if !strings.Contains(b.Summary, "their owner (deployment/lockbox-controller in lockbox-system) runs, but lockboxes.lockbox.example.org/m1 says what it waits for does not exist: waiting will not help") ||
		!hasAction(b, diagnose.Action{Kind: diagnose.ActionOwnerLogs, Target: "deployment/lockbox-controller", Of: "lockbox-system"}) {
		t.Errorf("blocker %+v", b)
	}
}

// ageWrites moves every managedFields entry of field manager to an hour
// ago, as if it had last written the object then: the API server keeps
// the managedFields a client sends whole.
func ageWrites(t *testing.T, gvr schema.GroupVersionResource, namespace, name, manager string) {
	t.Helper()
	ctx := context.Background()
	obj, err := cluster.Dynamic.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	plugintest.Must(t, err)
	entries := obj.GetManagedFields()
	old := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	aged := false
	for k := range entries {
		if entries[k].Manager == manager {
			entries[k].Time, aged = &old, true
		}
	}
	if !aged {
		t.Fatalf("no managedFields entry of %s on %s: %+v", manager, name, entries)
	}
	obj.SetManagedFields(entries)
	_, err = cluster.Dynamic.Resource(gvr).Namespace(namespace).Update(ctx, obj, metav1.UpdateOptions{})
	plugintest.Must(t, err)
}

// lockboxOperator: an operator of our own, its object held by its
// finalizer, and its writes aged an hour before the namespace's deletion.
func lockboxOperator(t *testing.T, name, system string) (*scenario.Operator, schema.GroupVersionResource) {
	t.Helper()
	ctx := context.Background()
	gvr, err := cluster.EnsureCRD(ctx, "lockbox.example.org", "Lockbox", "lockboxes")
	plugintest.Must(t, err)
	op := installOperator(t, system, system+"-controller", 1, writes("lockbox.example.org", "lockboxes", "lockboxes/status"))
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	createObject(t, gvr, "Lockbox", name, "s1", condition("Ready", "True", "Sealed", "sealed"))
	finalize(t, op, gvr, name, "s1", "lockbox.example.org/seal")
	ageWrites(t, gvr, name, "s1", system+"-controller")
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)
	return op, gvr
}

// The operator runs, but the field manager that set the finalizer last
// wrote its object an hour before the deletion and never since: it is not
// acting on it. Waiting will not help: the step strips, the log second.
func TestRunningOwnerNotActingSinceTheDeletion(t *testing.T) {
	name := plugintest.UniqueName(t)
	lockboxOperator(t, name, "lockbox-idle")
	e := explain(t, cp.Kubeconfig, name)
	b := e.blocker(t, diagnose.BlockerFinalizers, `lockboxes.lockbox.example.org/s1: last written by field manager "lockbox-idle-controller" at `,
		"waiting will not help: kubectl ns-doctor purge "+name+" --remove-finalizers=lockbox.example.org/seal (stripping leaks what the owner was to clean up); to learn first why it ignores them: kubectl logs -n lockbox-idle deployment/lockbox-idle-controller")
	if !strings.Contains(b.Summary, "runs, but has not written lockboxes.lockbox.example.org/s1 since 1h") ||
		!strings.Contains(b.Summary, "before it was marked for deletion: it is not acting on them, and waiting will not help") {
		t.Errorf("summary %q", b.Summary)
	}
}

// The counter-example: the same aged object, but its operator writes its
// status after the deletion (it is at work). No claim that waiting will
// not help: the step is its log, as for any running owner.
func TestRunningOwnerActingSinceTheDeletion(t *testing.T) {
	name := plugintest.UniqueName(t)
	op, gvr := lockboxOperator(t, name, "lockbox-busy")
	_, err := op.Client.Dynamic.Resource(gvr).Namespace(name).Patch(context.Background(), "s1", types.MergePatchType,
		[]byte(`{"status":{"phase":"Unsealing"}}`), metav1.PatchOptions{})
	plugintest.Must(t, err)
	e := explain(t, cp.Kubeconfig, name)
	b := e.blocker(t, diagnose.BlockerFinalizers, "", "kubectl logs -n lockbox-busy deployment/lockbox-busy-controller")
	if strings.Contains(b.Summary+b.NextStep, "waiting will not help") || strings.Contains(strings.Join(b.Evidence, "\n"), "nothing since") {
		t.Errorf("a stall claimed of an owner at work: %+v", b)
	}
}

// The setter taken for the runner: an operator of our own whose
// ServiceAccount is shared with a Deployment of another name (it runs,
// 1/1 ready), while the finalizer was set by a field manager of another
// name. That Deployment is no evidence that the remover runs: the owner is
// not called Running, the evidence says why, and the step is not that
// Deployment's log. Class 7: no workload of the cluster is that field
// manager either (by name, labels or binary): the setter runs nowhere, so
// the owner is not running (NotFound), with that evidence, not Unknown.
func TestSetterNotTakenForTheRunner(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	gvr, err := cluster.EnsureCRD(ctx, "lockbox.example.org", "Lockbox", "lockboxes")
	plugintest.Must(t, err)
	op := installOperator(t, "vault-dashboards", "dashboard", 1, writes("lockbox.example.org", "lockboxes", "lockboxes/status"))
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	createObject(t, gvr, "Lockbox", name, "r1")
	_, err = op.Client.Dynamic.Resource(gvr).Namespace(name).Patch(ctx, "r1", types.MergePatchType,
		[]byte(`{"metadata":{"finalizers":["lockbox.example.org/reap"]}}`), metav1.PatchOptions{FieldManager: "lockbox-reaper"})
	plugintest.Must(t, err)
	t.Cleanup(func() {
		_, _ = cluster.Dynamic.Resource(gvr).Namespace(name).Patch(context.Background(), "r1", types.MergePatchType,
			[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})

	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)
	e := explain(t, cp.Kubeconfig, name)
	f := finalizerDoc(t, e, "lockbox.example.org/reap")
	if f.OwnerState.State != diagnose.OwnerNotFound || f.OwnerState.Inferred == nil || !f.OwnerState.Inferred.Unmatched || !f.OwnerState.Inferred.SetterNowhere {
		t.Errorf("owner %+v", f.OwnerState)
	}
	b := e.blocker(t, diagnose.BlockerFinalizers,
		"deployment vault-dashboards/dashboard runs as it (1/1 ready), but neither its name nor its containers' names or binaries match the field manager that set it, and no workload of the cluster does (",
		"--remove-finalizers=lockbox.example.org/reap")
	if !strings.Contains(strings.Join(b.Evidence, "\n"), "read: by name, labels or binary): the setter runs nowhere, so nothing removes it") {
		t.Errorf("evidence %q", b.Evidence)
	}
	if hasAction(b, diagnose.Action{Kind: diagnose.ActionOwnerLogs}) || strings.Contains(b.Summary, "runs, but has released none") {
		t.Errorf("the setter taken for the runner: %+v", b)
	}
}

// The counter-example: the same shared Deployment, whose container runs
// the setter's binary (command /usr/local/bin/lockbox-reaper): the setter
// runs there, under another workload's name. The owner is Running, the
// setter is not said to run nowhere, and the step is that Deployment's log.
func TestSetterRunsInsideAnotherWorkload(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	gvr, err := cluster.EnsureCRD(ctx, "lockbox.example.org", "Lockbox", "lockboxes")
	plugintest.Must(t, err)
	op := installOperator(t, "vault-tools", "toolbox", 1, writes("lockbox.example.org", "lockboxes", "lockboxes/status"))
	d, err := cluster.Kube.AppsV1().Deployments(op.Namespace).Get(ctx, op.Name, metav1.GetOptions{})
	plugintest.Must(t, err)
	d.Spec.Template.Spec.Containers[0].Command = []string{"/usr/local/bin/lockbox-reaper", "--leader-elect"}
	_, err = cluster.Kube.AppsV1().Deployments(op.Namespace).Update(ctx, d, metav1.UpdateOptions{})
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	createObject(t, gvr, "Lockbox", name, "r1")
	_, err = op.Client.Dynamic.Resource(gvr).Namespace(name).Patch(ctx, "r1", types.MergePatchType,
		[]byte(`{"metadata":{"finalizers":["lockbox.example.org/reap"]}}`), metav1.PatchOptions{FieldManager: "lockbox-reaper"})
	plugintest.Must(t, err)
	t.Cleanup(func() {
		_, _ = cluster.Dynamic.Resource(gvr).Namespace(name).Patch(context.Background(), "r1", types.MergePatchType,
			[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})

	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)
	e := explain(t, cp.Kubeconfig, name)
	f := finalizerDoc(t, e, "lockbox.example.org/reap")
	if in := f.OwnerState.Inferred; f.OwnerState.State != diagnose.OwnerRunningReady || in == nil || in.Unmatched || in.SetterNowhere {
		t.Errorf("owner %+v", f.OwnerState)
	}
	b := e.blocker(t, diagnose.BlockerFinalizers, "", "kubectl logs -n vault-tools deployment/toolbox")
	if strings.Contains(strings.Join(b.Evidence, "\n"), "runs nowhere") {
		t.Errorf("the setter said to run nowhere: %+v", b.Evidence)
	}
}
