package purge

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// A plan that would not finish ends with what would hold the namespace,
// each with the flag that gets past it; a plan that finishes has none.
func TestPlanSaysWhatWouldHold(t *testing.T) {
	r, err := purger(stuck(), Options{}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !holds(r, diagnose.BlockerFinalizers, diagnose.FlagRemoveFinalizers) {
		t.Fatalf("holding %+v", r.Holding)
	}
	for _, h := range r.Holding {
		if h.Blocker.Kind == diagnose.BlockerControllerNotRunning {
			t.Errorf("purge runs the controller's pass itself: %+v", h)
		}
	}
	r, err = purger(stuck(), Options{Escalations: Asked{diagnose.FlagRemoveFinalizers: {"example.com/*"}}}).Run(context.Background())
	if err != nil || len(r.Holding) != 0 || !r.Finalize.Would {
		t.Fatalf("with the escalation: %v, holding %+v, finalize %+v", err, r.Holding, r.Finalize)
	}
	if len(r.Flags) != 1 || r.Flags[0].Flag != diagnose.FlagRemoveFinalizers || r.Flags[0].Value != "example.com/*" {
		t.Errorf("the run's own flags: %+v", r.Flags)
	}
}

// Refusals that only an outside action clears (Forbidden here), the same
// two passes running with nothing changed: the run stops at once, well
// before its timeout, and says what holds the namespace.
func TestForceStopsWhenWaitingCannotHelp(t *testing.T) {
	c := stuck()
	c.Fail = func(verb string, gvr schema.GroupVersionResource, ns, name string) error {
		if gvr == widgetsGVR && (verb == "delete-collection" || verb == "patch") {
			return apierrors.NewForbidden(gvr.GroupResource(), name, errors.New(`User "alice" cannot deletecollection resource "widgets" in API group "example.com"`))
		}
		return nil
	}
	events := make(chan Event, 1000)
	p := purger(c, Options{DryRun: DryRunNone, BackupDir: t.TempDir(), Timeout: 10 * time.Minute, Escalations: Asked{diagnose.FlagRemoveFinalizers: {"example.com/*"}}, Events: events})
	r, err := p.Run(context.Background())
	close(events)
	if err != nil || r.Stop == nil || r.Stop.Reason != StopBlocked || r.Outcome != OutcomeRemaining {
		t.Fatalf("err %v, outcome %s, stop %+v", err, r.Outcome, r.Stop)
	}
	var refused []Failure
	for _, f := range r.Failures {
		if f.Resource == "widgets.example.com" {
			refused = append(refused, f)
		}
	}
	if len(refused) == 0 || refused[0].Refusal == nil || refused[0].Refusal.By != diagnose.RefusedByRBAC || refused[0].Refusal.User != "alice" || refused[0].Count < 2 {
		t.Errorf("failures %+v: want the refusal named, counted once per pass", r.Failures)
	}
	var kinds []EventKind
	for e := range events {
		if e.Namespace != "ns" {
			t.Errorf("event for %q", e.Namespace)
		}
		if !slices.Contains(kinds, e.Kind) {
			kinds = append(kinds, e.Kind)
		}
	}
	for _, want := range []EventKind{EventBackup, EventPass, EventRequest, EventPassEnded, EventWaiting, EventDone} {
		if !slices.Contains(kinds, want) {
			t.Errorf("no %s event among %v", want, kinds)
		}
	}
}

// A transient refusal (a webhook's backend that may come back) keeps the
// run going until its timeout, as the controller would.
func TestForceKeepsGoingWhileWaitingMayHelp(t *testing.T) {
	c := stuck()
	c.Fail = func(verb string, gvr schema.GroupVersionResource, ns, name string) error {
		if gvr == widgetsGVR && verb == "delete-collection" {
			return apierrors.NewInternalError(errors.New(`failed calling webhook "flaky.example.com": connection refused`))
		}
		return nil
	}
	r, err := purger(c, Options{DryRun: DryRunNone, BackupDir: t.TempDir(), Timeout: 3 * time.Second}).Run(context.Background())
	if err != nil || r.Stop == nil || r.Stop.Reason != StopTimeout {
		t.Fatalf("err %v, stop %+v", err, r.Stop)
	}
}

// The API server's warnings are kept once each, and sent as events.
func TestServerWarningsKeptOnce(t *testing.T) {
	events := make(chan Event, 10)
	run := newRun(&Purger{Opts: Options{Events: events}}, &Report{Namespace: "ns"})
	run.serverWarning("deprecated here")
	run.serverWarning("deprecated here")
	close(events)
	if len(run.report.Warnings) != 1 || run.report.Warnings[0].Kind != WarnAPIServer || run.report.Warnings[0].Text != "deprecated here" {
		t.Errorf("warnings %+v", run.report.Warnings)
	}
	n := 0
	for e := range events {
		if e.Kind == EventWarning && e.Err == "deprecated here" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d warning events, want 1", n)
	}
}

// Options.gives tells which next steps a run already takes.
func TestOptionsGive(t *testing.T) {
	o := Asked{diagnose.FlagRemoveFinalizers: {"example.com/*"}, diagnose.FlagBypassWebhook: {"guard"}, diagnose.FlagForceDeletePods: nil}
	for _, tc := range []struct {
		a    diagnose.Action
		want bool
	}{
		{diagnose.PurgeAction("ns", diagnose.FlagRemoveFinalizers, "example.com/a,example.com/b"), true},
		{diagnose.PurgeAction("ns", diagnose.FlagRemoveFinalizers, "example.com/a,other.io/b"), false},
		{diagnose.PurgeAction("ns", diagnose.FlagBypassWebhook, "guard"), true},
		{diagnose.PurgeAction("ns", diagnose.FlagBypassWebhook, "other"), false},
		{diagnose.PurgeAction("ns", diagnose.FlagForceDeletePods, ""), true},
		{diagnose.PurgeAction("ns", diagnose.FlagRemoveNamespaceFinalizers, ""), false},
		{diagnose.PurgeAction("ns", "", ""), true},
	} {
		if got := o.Gives(tc.a); got != tc.want {
			t.Errorf("%+v: %v, want %v", tc.a, got, tc.want)
		}
	}
	flags := Options{Orphans: true, Escalations: Asked{diagnose.FlagRemoveAllFinalizers: nil, diagnose.FlagFinalizeDespiteDiscovery: nil,
		diagnose.FlagRemoveNamespaceFinalizers: nil, diagnose.FlagDeleteNamespace: nil}}.flags("ns")
	if len(flags) != 5 {
		t.Errorf("escalations %+v", flags)
	}
}
