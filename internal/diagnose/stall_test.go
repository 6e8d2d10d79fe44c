package diagnose_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/printer"
)

// A running owner that will never release: its holder says what it waits
// for does not exist, or the field manager that set the finalizer last
// wrote the holder long before its deletion and never since. The report
// says waiting will not help, and the step acts (restore what is missing,
// or strip) before the log. A write since the deletion, one just before
// it, a write by someone else only, or a holder that only fails, make no
// such claim: the step stays the owner's log.
func TestRunningOwnerThatWillNotRelease(t *testing.T) {
	deleted := now.Add(-5 * time.Minute)
	writes := func(manager string, at time.Time) []HolderWrites {
		return []HolderWrites{{Resource: "widgets.example.com", Name: "w", Last: map[string]time.Time{manager: at, "kube-controller-manager": now}}}
	}
	missing := Holder{Resource: "widgets.example.com", Name: "w", Conditions: []HolderCondition{{Type: "Ready", Status: "False", Reason: "CleanupFailed",
		Message: `reading credentials: secrets "vault-token" not found`, Error: true, Missing: true}}}
	failing := Holder{Resource: "widgets.example.com", Name: "w", Conditions: []HolderCondition{{Type: "Ready", Status: "False", Reason: "CleanupFailed",
		Message: "bucket acme-logs: AccessDenied", Error: true}}}
	for _, tc := range []struct {
		name    string
		holders []Holder
		writes  []HolderWrites
		cause   StallCause // "" for none
		summary string
		step    string
	}{
		{"waits on what does not exist", []Holder{missing}, nil, StallWaitsOnMissing,
			"their owner (deployment/acme-operator in acme-system) runs, but widgets.example.com/w says what it waits for does not exist: waiting will not help",
			`waiting will not help: restore what widgets.example.com/w says is missing (reading credentials: secrets "vault-token" not found), and its owner can finish; if it cannot come back: kubectl ns-doctor purge demo --remove-finalizers=acme.example.com/cleanup`},
		{"no write since long before the deletion", nil, writes("acme-operator", deleted.Add(-time.Hour)), StallNoWriteSinceDeletion,
			"runs, but has not written widgets.example.com/w since 1h0m0s before it was marked for deletion: it is not acting on them, and waiting will not help",
			"waiting will not help: kubectl ns-doctor purge demo --remove-finalizers=acme.example.com/cleanup (stripping leaks what the owner was to clean up); to learn first why it ignores them: kubectl logs -n acme-system deployment/acme-operator"},
		{"a write since the deletion", nil, writes("acme-operator", deleted.Add(time.Minute)), "", "", "kubectl logs -n acme-system deployment/acme-operator"},
		{"a write just before the deletion", nil, writes("acme-operator", deleted.Add(-time.Minute)), "", "", "kubectl logs -n acme-system deployment/acme-operator"},
		{"writes by someone else only", nil, writes("kubectl-edit", deleted.Add(-time.Hour)), "", "", "kubectl logs -n acme-system deployment/acme-operator"},
		{"a failure that names nothing missing", []Holder{failing}, nil, "", "", "kubectl logs -n acme-system deployment/acme-operator"},
	} {
		obs := with(observation(), widgets, terminatingItem("w", 5*time.Minute, "acme.example.com/cleanup"))
		obs.Evidence.Owners = map[string]OwnerState{"acme.example.com/cleanup": inferred(OwnerRunningReady, acmeOperator, false)}
		obs.Evidence.Holders, obs.Evidence.Writes = tc.holders, tc.writes
		b := blockerOf(t, Diagnose(obs), BlockerFinalizers)
		f := b.Facts.(*FinalizerFacts)
		w := printer.WordsOf(b)
		switch {
		case tc.cause == "" && f.Stall != nil:
			t.Errorf("%s: stall claimed: %+v", tc.name, f.Stall)
		case tc.cause == "" && (strings.Contains(w.Summary, "waiting will not help") || !strings.HasPrefix(b.Actions[0].Target, "deployment/")):
			t.Errorf("%s: words %+v, actions %+v", tc.name, w, b.Actions)
		case tc.cause != "" && (f.Stall == nil || f.Stall.Cause != tc.cause):
			t.Errorf("%s: stall %+v", tc.name, f.Stall)
		case tc.cause != "" && !strings.Contains(w.Summary, tc.summary):
			t.Errorf("%s: summary %q", tc.name, w.Summary)
		case !strings.Contains(w.NextStep, tc.step):
			t.Errorf("%s: step %q", tc.name, w.NextStep)
		}
	}
}
