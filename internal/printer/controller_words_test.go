package printer

import (
	"strings"
	"testing"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// The controller's failure that ns-doctor could not explain is said in
// the controller's words, with ns-doctor's own value beside it and what
// was looked at; a type that fails elsewhere is said with the controller's
// words and where; the verdict says when waiting will not finish it; each
// new step has words of its own.
func TestControllersWordIsSaid(t *testing.T) {
	since := time.Date(2026, 12, 6, 11, 36, 3, 0, time.UTC)
	u := diagnose.Blocker{Kind: diagnose.BlockerUnexplainedFailure, Subject: "NamespaceDeletionContentFailure",
		Facts: &diagnose.UnexplainedFacts{Condition: "NamespaceDeletionContentFailure",
			Controller: diagnose.ConditionValue{Status: "True", Reason: "ContentDeletionFailed", Message: "Failed to delete all resource types, 1 remaining: storage is (re)initializing", LastTransitionTime: &since},
			Computed:   &diagnose.ConditionValue{Status: "False", Reason: "ContentDeleted", Message: "All content successfully deleted, may be waiting on finalization"},
			Probed:     []string{"widgets.example.com"}},
		Actions: []diagnose.Action{{Kind: diagnose.ActionServerDryRun, Namespace: "demo"}, {Kind: diagnose.ActionControllerLogs, Namespace: "demo"}}}
	w := WordsOf(u)
	evidence := strings.Join(w.Evidence, "\n")
	for _, want := range []string{"the namespace controller: Failed to delete all resource types, 1 remaining: storage is (re)initializing",
		"ns-doctor's own pass: False ContentDeleted", "listed across namespaces, and answering: widgets.example.com", "failing since 2026-12-06T11:36:03Z"} {
		if !strings.Contains(evidence, want) {
			t.Errorf("evidence lacks %q:\n%s", want, evidence)
		}
	}
	if !strings.Contains(w.Summary, "(DeletionContentFailure=True ContentDeletionFailed)") ||
		w.NextStep != "kubectl ns-doctor purge demo --dry-run=server  # sends the namespace controller's requests as dry runs: each answer says what fails; and: read kube-controller-manager's log for namespace demo: the namespace controller logs each request that failed" {
		t.Errorf("words %+v", w)
	}

	elsewhere := diagnose.Blocker{Kind: diagnose.BlockerListFailed, Subject: "widgets.example.com",
		Facts: &diagnose.ListFacts{Resource: "widgets.example.com", Error: "the server is currently unable to handle the request", Elsewhere: true,
			Controller: "Failed to delete all resource types, 1 remaining: ...", Unreadable: []string{"team-b/w1"}},
		Actions: []diagnose.Action{{Kind: diagnose.ActionGetResourceEverywhere, Namespace: "demo", Target: "widgets.example.com"}}}
	w = WordsOf(elsewhere)
	if !strings.HasPrefix(w.Summary, "the namespace controller cannot delete widgets.example.com here, though ns-doctor lists none in this namespace") ||
		w.Evidence[0] != "the namespace controller's last pass: Failed to delete all resource types, 1 remaining: ..." ||
		!strings.Contains(strings.Join(w.Evidence, "\n"), "what cannot be read is elsewhere: team-b/w1") ||
		w.NextStep != "kubectl get widgets.example.com --all-namespaces  # it fails across namespaces: fix the API behind it (CRD, conversion webhook, aggregated API)" {
		t.Errorf("elsewhere %+v", w)
	}

	path := ActionWords(diagnose.Action{Kind: diagnose.ActionCheckAPIServicePath, Target: "v1.example.com", Of: "ops/api"})
	if !strings.HasPrefix(path, "check the path from kube-apiserver to service ops/api, whose endpoints are ready") {
		t.Errorf("path step %q", path)
	}

	stall := diagnose.Blocker{Kind: diagnose.BlockerFinalizers, Subject: "example.com/x", Facts: &diagnose.FinalizerFacts{Stall: &diagnose.Stall{Cause: diagnose.StallWaitsOnMissing}}}
	r := diagnose.Report{Namespace: diagnose.Namespace{Name: "demo"}, Verdict: diagnose.Verdict{State: diagnose.StateStuck}, Blockers: []diagnose.Blocker{stall}}
	if got := VerdictSummary(r); !strings.HasSuffix(got, "; waiting will not finish it (FinalizersRemaining: example.com/x)") {
		t.Errorf("verdict %q", got)
	}
	r.Blockers[0].Facts = &diagnose.FinalizerFacts{}
	if got := VerdictSummary(r); strings.Contains(got, "waiting") {
		t.Errorf("verdict %q", got)
	}
}
