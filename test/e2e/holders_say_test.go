package e2e

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// createWithStatus creates a custom resource as a user would (no
// finalizer), with the status its controller wrote.
func createWithStatus(t *testing.T, gvr schema.GroupVersionResource, kind, namespace, name string, status map[string]any) {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec":     map[string]any{"size": "small"},
		"status":   status,
	}}
	_, err := cluster.Dynamic.Resource(gvr).Namespace(namespace).Create(context.Background(), obj, metav1.CreateOptions{})
	plugintest.Must(t, err)
}

// holderNamed is the holder the report names, or nil.
func holderNamed(e explained, resource, name string) *diagnose.Holder {
	for k, h := range e.report.Holders {
		if h.Resource == resource && h.Name == name {
			return &e.report.Holders[k]
		}
	}
	return nil
}

// An operator nobody catalogued whose controller says why it cannot
// release its objects in its own words: a condition of failure under its
// own prefix, True (as ACK's are), on one; a status.error field of its
// own on another, with no condition at all. Both are under what the
// holders say, and the step starts with what the holder says is wrong,
// before the owner's log and the strip. A third object of the same kind,
// whose status is good news only, is not named.
func TestHolderSaysWhyInItsOwnWords(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	gvr, err := cluster.EnsureCRD(ctx, "vaultline.example.net", "Locker", "lockers")
	plugintest.Must(t, err)
	op := installOperator(t, "vaultline-system", "vaultline-controller", 1, writes("vaultline.example.net", "lockers", "lockers/status"))
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	createObject(t, gvr, "Locker", name, "l1",
		condition("Ready", "True", "Available", "locker is up"),
		condition("Vaultline.Recoverable", "True", "", "LockerNotEmpty: locker l1 still holds 3 items"))
	createWithStatus(t, gvr, "Locker", name, "l2", map[string]any{"phase": "Deleting", "error": "volume vol-7 is in use by instance i-42"})
	createWithStatus(t, gvr, "Locker", name, "l3", map[string]any{"phase": "Ready", "message": "Reconciled successfully",
		"conditions": []any{condition("Ready", "True", "Available", "no error since the last restart"), condition("Vaultline.Synced", "True", "Synced", "in sync")}})
	for _, o := range []string{"l1", "l2", "l3"} {
		finalize(t, op, gvr, name, o, "vaultline.example.net/release")
	}

	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)
	e := explain(t, cp.Kubeconfig, name)
	e.agrees(t)
	b := e.blocker(t, diagnose.BlockerFinalizers, "lockers.vaultline.example.net/l1 condition Vaultline.Recoverable=True: LockerNotEmpty: locker l1 still holds 3 items",
		"lockers.vaultline.example.net/l1 says why it is not released (condition Vaultline.Recoverable=True: LockerNotEmpty: locker l1 still holds 3 items): fix that")
	if !strings.Contains(strings.Join(b.Evidence, "\n"), "lockers.vaultline.example.net/l2 status.error: volume vol-7 is in use by instance i-42") ||
		!hasAction(b, diagnose.Action{Kind: diagnose.ActionOwnerLogs, Target: "deployment/vaultline-controller", Of: "vaultline-system"}) ||
		!hasAction(b, diagnose.Action{Kind: diagnose.ActionPurge, Flag: diagnose.FlagRemoveFinalizers, Value: "vaultline.example.net/release"}) {
		t.Errorf("blocker %+v", b)
	}
	human := flat(e.human)
	for _, want := range []string{"lockers.vaultline.example.net/l1 Vaultline.Recoverable=True", "LockerNotEmpty: locker l1 still holds 3 items",
		"lockers.vaultline.example.net/l2 status.error: volume vol-7 is in use by instance i-42"} {
		if !strings.Contains(human, want) {
			t.Errorf("the human view lacks %q:\n%s", want, e.human)
		}
	}
	if h := holderNamed(e, "lockers.vaultline.example.net", "l2"); h == nil || len(h.Fields) != 1 || h.Fields[0].Field != "status.error" {
		t.Errorf("holder l2 %+v", h)
	}
	if h := holderNamed(e, "lockers.vaultline.example.net", "l3"); h != nil || strings.Contains(human, "lockers.vaultline.example.net/l3 ") {
		t.Errorf("good news named as a holder's trouble: %+v\n%s", h, e.human)
	}
}

// The counter-example: the same operator's objects, whose status says
// only good news (Ready=True and a Synced of its own prefix, a message
// that mentions an error long cleared, a phase that is not trouble). Not
// one holder line, and the step is the running owner's log, quoting
// nothing.
func TestHolderGoodNewsIsNoReason(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	gvr, err := cluster.EnsureCRD(ctx, "vaultline.example.net", "Locker", "lockers")
	plugintest.Must(t, err)
	op := installOperator(t, "vaultline-quiet", "vaultline-quiet-controller", 1, writes("vaultline.example.net", "lockers", "lockers/status"))
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	createWithStatus(t, gvr, "Locker", name, "q1", map[string]any{"phase": "Ready", "message": "Reconciled successfully",
		"conditions": []any{condition("Ready", "True", "Available", "no error since the last restart"), condition("Vaultline.Synced", "True", "Synced", "in sync")}})
	createWithStatus(t, gvr, "Locker", name, "q2", map[string]any{"state": "Deleting", "reason": "DeleteRequested"})
	for _, o := range []string{"q1", "q2"} {
		finalize(t, op, gvr, name, o, "vaultline.example.net/quiet")
	}

	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)
	e := explain(t, cp.Kubeconfig, name)
	b := e.blocker(t, diagnose.BlockerFinalizers, "", "kubectl logs -n vaultline-quiet deployment/vaultline-quiet-controller")
	if strings.Contains(b.NextStep, "says why it is not released") || len(e.report.Holders) != 0 || strings.Contains(e.human, "What the holders say") {
		t.Errorf("good news taken for a reason: step %q, holders %+v\n%s", b.NextStep, e.report.Holders, e.human)
	}
}
