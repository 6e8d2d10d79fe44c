package printer

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// An Event names every blocker with its subject and the first one's next
// step, and the text from the cluster in it cannot drive a terminal.
func TestWatchWordsStuck(t *testing.T) {
	r := diagnose.Report{
		Verdict:   diagnose.Verdict{State: diagnose.StateStuck},
		Namespace: diagnose.Namespace{Name: "demo"},
		Content:   []diagnose.Content{{Resource: "configmaps", Count: 3}},
		Blockers: []diagnose.Blocker{
			{Kind: diagnose.BlockerFinalizers, Subject: "example.com/gone\x1b[31m", Facts: &diagnose.FinalizerFacts{},
				Actions: []diagnose.Action{{Kind: diagnose.ActionCheckOwner}, diagnose.PurgeAction("demo", diagnose.FlagRemoveFinalizers, "example.com/gone")}},
			{Kind: diagnose.BlockerForbidden, Subject: "secrets"},
			{Kind: diagnose.BlockerControllerNotRunning},
		},
	}
	msg := WatchWords{}.Stuck(r)
	for _, want := range []string{"3 object(s) left", "FinalizersRemaining example.com/gone", "ControllerNotRunning",
		"kubectl ns-doctor purge demo --remove-finalizers=example.com/gone", "kubectl ns-doctor explain demo"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Event message lacks %q:\n%s", want, msg)
		}
	}
	if strings.ContainsRune(msg, '\x1b') || strings.Contains(msg, "ListForbidden") {
		t.Errorf("Event message has an escape or a blocker that holds nothing:\n%q", msg)
	}
}

func TestWatchWordsJanitor(t *testing.T) {
	hold := purge.Hold{Blocker: diagnose.Blocker{Kind: diagnose.BlockerFinalizers, Subject: "example.com/kept", Facts: &diagnose.FinalizerFacts{},
		Actions: []diagnose.Action{{Kind: diagnose.ActionCheckOwner}, diagnose.PurgeAction("ci-1", diagnose.FlagRemoveFinalizers, "example.com/kept")}}}
	for _, c := range []struct {
		r    *purge.Report
		err  error
		want []string
	}{
		{&purge.Report{Namespace: "ci-1", Mode: purge.DryRunServer, Outcome: purge.OutcomePlanned, Steps: make([]purge.Step, 4), Rows: []purge.Row{{Kind: purge.RowStrip, Name: "a", Status: purge.RowPlanned}, {Kind: purge.RowStrip, Name: "b", Status: purge.RowPlanned}}},
			nil, []string{"server dry run", "--purge-force", "4 request(s)", "2 finalizer removal(s)", "would then be gone"}},
		{&purge.Report{Namespace: "ci-1", Mode: purge.DryRunServer, Outcome: purge.OutcomePlanned, Holding: []purge.Hold{hold}},
			nil, []string{"it would remain, held by FinalizersRemaining"}},
		{&purge.Report{Namespace: "ci-1", Mode: purge.DryRunNone, Outcome: purge.OutcomeGone, Passes: 2, BackedUp: 5, BackupDir: "/backups/ci-1-x"},
			nil, []string{"purged", "gone after 2 pass(es)", "5 object(s) saved in /backups/ci-1-x"}},
		{&purge.Report{Namespace: "ci-1", Mode: purge.DryRunNone}, errors.New("boom"), []string{"purge of namespace ci-1 failed: boom"}},
		{nil, errors.New("boom"), []string{"failed: boom"}},
	} {
		msg := WatchWords{}.Janitor(c.r, c.err)
		for _, want := range c.want {
			if !strings.Contains(msg, want) {
				t.Errorf("janitor message lacks %q:\n%s", want, msg)
			}
		}
	}
}

func TestWatchLine(t *testing.T) {
	at := time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC)
	if got := WatchLine(at, "demo", nil, 0, ""); got != "2026-11-25T06:00:00Z demo: gone (or no longer terminating)" {
		t.Errorf("gone line %q", got)
	}
	r := &diagnose.Report{Namespace: diagnose.Namespace{Name: "demo"}, Verdict: diagnose.Verdict{State: diagnose.StateStuck}}
	if got := WatchLine(at, "demo", r, 90*time.Second, ""); !strings.HasSuffix(got, "(terminating for 1m30s)") || !strings.Contains(got, "demo: stuck") {
		t.Errorf("diagnosis line %q", got)
	}
}

// Over many clusters the same namespace may run in two: each is its own
// run, named context/namespace.
func TestProgressByContext(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, false, true)
	p.ByContext = true
	for _, ctx := range []string{"prod", "stage"} {
		p.Show(purge.Event{Namespace: "ci-1", Context: ctx, Kind: purge.EventPassEnded, Pass: 1, Remaining: []purge.Remaining{{Resource: "widgets", Count: 2}}})
	}
	p.Close()
	for _, want := range []string{"prod/ci-1: pass 1: remaining widgets=2", "stage/ci-1: pass 1: remaining widgets=2"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("lacks %q:\n%s", want, buf.String())
		}
	}
}
