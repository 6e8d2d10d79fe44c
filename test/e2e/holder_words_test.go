package e2e

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// ledgers: an operator of our own (ledger-controller, running), whose
// Ledgers in a new namespace each carry the status given and its
// finalizer; the namespace is deleted and the controller has counted
// them. It returns the namespace.
func ledgers(t *testing.T, system string, statuses map[string]map[string]any) string {
	t.Helper()
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	gvr, err := cluster.EnsureCRD(ctx, "ledger.example.org", "Ledger", "ledgers")
	plugintest.Must(t, err)
	op := installOperator(t, system, system+"-controller", 1, writes("ledger.example.org", "ledgers", "ledgers/status"))
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	for object, status := range statuses {
		createWithStatus(t, gvr, "Ledger", name, object, status)
		finalize(t, op, gvr, name, object, "ledger.example.org/close")
	}
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)
	return name
}

// holderDoc is the holder the JSON names, or nil.
func holderDoc(e explained, name string) *diagnose.Holder {
	return holderNamed(e, "ledgers.ledger.example.org", name)
}

// Class 8: the vocabulary is the API conventions' and kstatus's, words
// are words, and a count of none is none. Conditions of our own making:
// Stalled=True and Degraded=True are trouble, in their own words; a
// Progressing=True that says "0 errors" and "failover", a Reconciling=True
// at work "in user namespaces", a Reconciling=False are not, and their
// object is not named at all.
func TestHolderTroubleInTheConventionsWords(t *testing.T) {
	name := ledgers(t, "ledger-conv", map[string]map[string]any{
		"stalled":  {"conditions": []any{condition("Stalled", "True", "ReconcileStalled", "ledger stalled: the archive bucket refused the final write")}},
		"degraded": {"conditions": []any{condition("Degraded", "True", "ReplicaLost", "2 of 3 replicas lost")}},
		"fine": {"conditions": []any{
			condition("Progressing", "True", "Closing", "0 errors so far; failover to replica b complete"),
			condition("Reconciling", "True", "Closing", "moving what is left in user namespaces"),
			condition("Ready", "True", "Open", "ready")}},
	})
	e := explain(t, cp.Kubeconfig, name)
	e.agrees(t)
	for object, want := range map[string]string{"stalled": "Stalled", "degraded": "Degraded"} {
		h := holderDoc(e, object)
		if h == nil || len(h.Conditions) != 1 || h.Conditions[0].Type != want || !h.Conditions[0].Error {
			t.Errorf("holder %s: %+v", object, h)
		}
	}
	if h := holderDoc(e, "fine"); h != nil || strings.Contains(flat(e.human), "ledgers.ledger.example.org/fine ") {
		t.Errorf("words that only look like trouble taken for it: %+v\n%s", h, e.human)
	}
	b := e.blocker(t, diagnose.BlockerFinalizers, "ledgers.ledger.example.org/stalled condition Stalled=True (ReconcileStalled): ledger stalled", "says why it is not released")
	if strings.Contains(strings.Join(b.Evidence, "\n"), "/fine ") {
		t.Errorf("evidence names the fine ledger: %+v", b.Evidence)
	}
}

// The counter-example: every holder only looks like trouble (a count of
// none, a word inside another, kstatus's Reconciling at work or done): not
// one holder line, and the step is the running owner's log, quoting no
// holder.
func TestHolderWordsThatOnlyLookLikeTrouble(t *testing.T) {
	name := ledgers(t, "ledger-calm", map[string]map[string]any{
		"calm": {"conditions": []any{
			condition("Progressing", "True", "Closing", "0 errors; failover to replica b complete"),
			condition("Reconciling", "False", "Done", "done"),
			condition("Synced", "True", "Synced", "errors: 0")}},
		"busy": {"conditions": []any{condition("Reconciling", "True", "Closing", "closing the books of user namespaces")}},
	})
	e := explain(t, cp.Kubeconfig, name)
	b := e.blocker(t, diagnose.BlockerFinalizers, "", "kubectl logs -n ledger-calm deployment/ledger-calm-controller")
	if len(e.report.Holders) != 0 || strings.Contains(b.NextStep, "says why it is not released") || strings.Contains(e.human, "What the holders say") {
		t.Errorf("trouble read into calm words: holders %+v, step %q\n%s", e.report.Holders, b.NextStep, e.human)
	}
}

// Class 3: the holder's own words whatever the shape of its status: a
// condition without a status field (a type and a message only), an
// object of its own under status (status.operationState: its phase and
// message), a plain status.message under a failed phase. Each is in the
// JSON's holders and in the human view, bounded, and escaped there (a
// terminal control sequence in a message is shown, never sent).
func TestHolderWordsWhateverTheShape(t *testing.T) {
	name := ledgers(t, "ledger-shapes", map[string]map[string]any{
		"nostatus": {"conditions": []any{map[string]any{"type": "DeletionError", "message": "cannot close: the archive refused the seal",
			"lastTransitionTime": "2026-11-24T06:00:00Z"}}},
		"operation": {"operationState": map[string]any{"phase": "Error", "message": "closing failed: archive quota exceeded " + strings.Repeat("q", 1500)}},
		"plain":     {"phase": "Failed", "message": "the archive account is \x1b[31msuspended\x1b[0m"},
	})
	e := explain(t, cp.Kubeconfig, name)
	h := holderDoc(e, "nostatus")
	if h == nil || len(h.Conditions) != 1 || h.Conditions[0].Type != "DeletionError" || h.Conditions[0].Status != "" || !h.Conditions[0].Error {
		t.Errorf("a condition without a status: %+v", h)
	}
	h = holderDoc(e, "operation")
	if h == nil || len(h.Fields) != 2 || h.Fields[0].Field != "status.operationState.message" || h.Fields[1].Field != "status.operationState.phase" ||
		len([]rune(h.Fields[0].Value)) > 1003 {
		t.Errorf("status.operationState: %+v", h)
	}
	h = holderDoc(e, "plain")
	if h == nil || len(h.Fields) != 2 || h.Fields[0].Value != "the archive account is \x1b[31msuspended\x1b[0m" {
		t.Errorf("status.message: %+v", h)
	}
	human := flat(e.human)
	for _, want := range []string{"ledgers.ledger.example.org/nostatus DeletionError", "cannot close: the archive refused",
		"ledgers.ledger.example.org/operation status.operationState.message: closing failed: archive quota exceeded",
		"ledgers.ledger.example.org/plain status.message: the archive account is " + printer.Escape("\x1b[31msuspended")} {
		if !strings.Contains(human, want) {
			t.Errorf("the human view lacks %q:\n%s", want, e.human)
		}
	}
	if strings.Contains(e.human, "\x1b[31m") || !strings.Contains(e.human, printer.Escape("\x1b[31m")) {
		t.Errorf("a control sequence from the cluster reached the terminal unescaped:\n%q", e.human)
	}
	e.blocker(t, diagnose.BlockerFinalizers, "condition DeletionError: cannot close", "says why it is not released")
}

// The counter-example: the same shapes saying good news (a condition
// without a status of a type that is good news, an operationState that
// succeeded with "0 errors", a phase that is no trouble with its message):
// no holder, in the JSON or the human view.
func TestHolderGoodNewsWhateverTheShape(t *testing.T) {
	name := ledgers(t, "ledger-good", map[string]map[string]any{
		"ready":     {"conditions": []any{map[string]any{"type": "Ready", "message": "closed and sealed"}}},
		"succeeded": {"operationState": map[string]any{"phase": "Succeeded", "message": "closed (0 errors)"}},
		"closing":   {"phase": "Closing", "message": "closing the books"},
	})
	e := explain(t, cp.Kubeconfig, name)
	if len(e.report.Holders) != 0 || strings.Contains(e.human, "What the holders say") {
		t.Errorf("good news taken for the holders' trouble: %+v\n%s", e.report.Holders, e.human)
	}
}

// Class 4: the holder's own words say that what its owner waits for does
// not exist (a cluster never configured, in a condition without a
// status), and its owner runs: the verdict says that waiting will not
// finish it, and the first step restores what is missing, the strip
// second, the log third.
func TestWaitingWillNotFinishWhatIsMissing(t *testing.T) {
	name := ledgers(t, "ledger-missing", map[string]map[string]any{
		"remote": {"conditions": []any{map[string]any{"type": "DeletionError",
			"message": `unable to close the remote ledger: cluster "https://10.9.8.7" has not been configured`}}},
	})
	e := explain(t, cp.Kubeconfig, name)
	if e.code != 3 || !strings.Contains(e.report.Verdict.Summary, "waiting will not finish it (FinalizersRemaining: ledger.example.org/close)") {
		t.Errorf("exit %d, verdict %q", e.code, e.report.Verdict.Summary)
	}
	b := e.blocker(t, diagnose.BlockerFinalizers, `ledgers.ledger.example.org/remote condition DeletionError: unable to close the remote ledger`,
		`waiting will not help: restore what ledgers.ledger.example.org/remote says is missing (unable to close the remote ledger: cluster "https://10.9.8.7" has not been configured)`)
	kinds := []diagnose.ActionKind{}
	for _, a := range b.Actions {
		kinds = append(kinds, a.Kind)
	}
	if len(kinds) != 3 || kinds[0] != diagnose.ActionRestoreMissing || kinds[1] != diagnose.ActionPurge || kinds[2] != diagnose.ActionOwnerLogs {
		t.Errorf("steps %v", kinds)
	}
}

// The counter-example: the holder says it is at work (kstatus's
// Reconciling, nothing missing): waiting may help, so nothing says it
// will not, and the step is the running owner's log.
func TestWaitingMayFinishWhatIsAtWork(t *testing.T) {
	name := ledgers(t, "ledger-working", map[string]map[string]any{
		"busy": {"conditions": []any{condition("Reconciling", "True", "Closing", "closing 3 remote entries")}},
	})
	e := explain(t, cp.Kubeconfig, name)
	b := e.blocker(t, diagnose.BlockerFinalizers, "", "kubectl logs -n ledger-working deployment/ledger-working-controller")
	if strings.Contains(e.report.Verdict.Summary+b.Summary+b.NextStep, "will not") || hasAction(b, diagnose.Action{Kind: diagnose.ActionRestoreMissing}) {
		t.Errorf("waiting ruled out for an owner at work: %q\n%+v", e.report.Verdict.Summary, b)
	}
}
