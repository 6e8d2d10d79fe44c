package purge

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/compat"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/kube/kubetest"
)

var widgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// stuck is a terminating namespace "ns" holding a plain and a held
// ConfigMap, a Secret, a widget waiting for its operator, and an
// unscheduled pod.
func stuck() *kubetest.Cluster {
	c := kubetest.New()
	c.Serve(widgetsGVR, "Widget", kubetest.AllVerbs)
	c.AddNamespace("ns", time.Minute)
	c.Add(kubetest.ConfigMaps, kubetest.Object("ConfigMap", "ns", "plain"))
	c.Add(kubetest.ConfigMaps, kubetest.Object("ConfigMap", "ns", "held", "example.com/hold"))
	c.Add(kubetest.Secrets, kubetest.Object("Secret", "ns", "creds"))
	c.Add(widgetsGVR, kubetest.Object("Widget", "ns", "w1", "example.com/cleanup"))
	c.Add(kubetest.Pods, kubetest.Pod("ns", "unscheduled", "", 30))
	return c
}

// testPurger runs one namespace's purge.
type testPurger struct {
	*Purger
	name string
}

func (p testPurger) Run(ctx context.Context) (*Report, error) { return p.Purger.Run(ctx, p.name) }

func purger(c *kubetest.Cluster, opts Options) testPurger { return purgerIn(c, "ns", opts) }

func purgerIn(c *kubetest.Cluster, name string, opts Options) testPurger {
	if opts.Timeout == 0 {
		opts.Timeout = time.Minute
	}
	opts.OrderedDeletion = compat.Ordering{Ordered: true}
	return testPurger{Purger: &Purger{Clients: c.Clients(), Opts: opts}, name: name}
}

// askedIf asks for the escalation of flag when on.
func askedIf(on bool, flag string) Asked {
	if !on {
		return nil
	}
	return Asked{flag: nil}
}

func hasFailure(r *Report, verb, resource, name string) bool {
	return slices.ContainsFunc(r.Failures, func(f Failure) bool { return f.Verb == verb && f.Resource == resource && f.Name == name })
}

// holds tells whether the report says kind holds the namespace, with flag
// as the step past it.
func holds(r *Report, kind diagnose.BlockerKind, flag string) bool {
	return slices.ContainsFunc(r.Holding, func(h Hold) bool { return h.Blocker.Kind == kind && h.Step != nil && h.Step.Flag == flag })
}

func hasWarning(r *Report, kind WarningKind) bool {
	return slices.ContainsFunc(r.Warnings, func(w Warning) bool { return w.Kind == kind })
}

// writes are the requests that would change the cluster.
func writes(c *kubetest.Cluster) []string {
	var out []string
	for _, r := range c.Requests {
		if (strings.HasPrefix(r, "delete") || strings.HasPrefix(r, "patch") || strings.HasPrefix(r, "create")) && !strings.HasSuffix(r, "(dry run)") {
			out = append(out, r)
		}
	}
	return out
}

func TestPlanPredictsThePassAndChangesNothing(t *testing.T) {
	c := stuck()
	r, err := purger(c, Options{}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if w := writes(c); len(w) != 0 {
		t.Fatalf("a client plan sent writes: %v", w)
	}
	if r.Outcome != OutcomePlanned || r.Passes != 1 || r.Finalize.Would || r.Finalize.Cause != FinalizeContentRemains || r.Finalize.Estimate != 15 {
		t.Fatalf("outcome %s, passes %d, finalize %+v", r.Outcome, r.Passes, r.Finalize)
	}
	want := []Remaining{
		{Resource: "configmaps", Count: 1, Finalizers: map[string]int{"example.com/hold": 1}},
		{Resource: "widgets.example.com", Count: 1, Finalizers: map[string]int{"example.com/cleanup": 1}},
	}
	if !reflect.DeepEqual(r.Remaining, want) {
		t.Errorf("remaining %+v, want %+v", r.Remaining, want)
	}
	if len(r.Conditions) != 5 || r.Conditions[3].Message != "Some resources are remaining: configmaps. has 1 resource instances, widgets.example.com has 1 resource instances" {
		t.Errorf("conditions %+v", r.Conditions)
	}
	if r.Steps[0].Resource != "pods" || r.Steps[0].Status != StepPlanned || r.Steps[0].Objects != 1 {
		t.Errorf("first step %+v, want the pods' deletecollection planned", r.Steps[0])
	}
}

// With an escalation the plan plays the force run to its end: strip,
// then a pass that finalizes.
func TestPlanPlaysEscalationsToTheEnd(t *testing.T) {
	c := stuck()
	r, err := purger(c, Options{Escalations: Asked{diagnose.FlagRemoveFinalizers: {"example.com/*"}}}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !r.Finalize.Would || r.Finalize.Cause != FinalizeAfterEscalations || r.Passes != 2 || !reflect.DeepEqual(r.Finalize.Remove, []string{"kubernetes"}) {
		t.Fatalf("passes %d, finalize %+v", r.Passes, r.Finalize)
	}
	var strips []string
	for _, s := range r.RowsOf(RowStrip) {
		strips = append(strips, s.Resource+"/"+s.Name+":"+string(s.Status))
	}
	if !reflect.DeepEqual(strips, []string{"configmaps/held:Planned", "widgets.example.com/w1:Planned"}) {
		t.Errorf("strips %v", strips)
	}
	if len(r.Remaining) != 0 || r.Conditions[3].Reason != "SomeResourcesRemain" {
		t.Errorf("remaining %+v (want none in the end), conditions %+v (want the first pass's)", r.Remaining, r.Conditions)
	}
	if w := writes(c); len(w) != 0 {
		t.Errorf("writes %v", w)
	}
}

// A server dry run sends every write with dryRun=All; the server's
// refusals are reported, and a refused strip is not played.
func TestServerDryRunReportsRefusals(t *testing.T) {
	c := stuck()
	c.Fail = func(verb string, gvr schema.GroupVersionResource, ns, name string) error {
		if verb == "patch" && gvr == widgetsGVR {
			return apierrors.NewInternalError(errors.New(`failed calling webhook "deny.example.com"`))
		}
		return nil
	}
	r, err := purger(c, Options{DryRun: DryRunServer, Escalations: Asked{diagnose.FlagRemoveAllFinalizers: nil}}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if w := writes(c); len(w) != 0 {
		t.Fatalf("a server dry run sent real writes: %v", w)
	}
	if len(c.RequestsMatching("delete-collection configmaps ns/ (dry run)")) == 0 || len(c.RequestsMatching("patch configmaps ns/held (dry run)")) == 0 {
		t.Errorf("dry runs not sent: %v", c.Requests)
	}
	failed := false
	for _, s := range r.RowsOf(RowStrip) {
		failed = failed || (s.Name == "w1" && s.Status == RowFailed && strings.Contains(s.Error, "deny.example.com"))
	}
	if !failed || r.Finalize.Would || !hasFailure(r, "strip", "widgets.example.com", "w1") {
		t.Errorf("rows %+v, finalize %+v, failures %v", r.Rows, r.Finalize, r.Failures)
	}
}

func TestForceStripsSavesAndFinishes(t *testing.T) {
	c := stuck()
	dir := filepath.Join(t.TempDir(), "backup")
	r, err := purger(c, Options{DryRun: DryRunNone, BackupDir: dir, Escalations: Asked{diagnose.FlagRemoveFinalizers: {"example.com/*"}}}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcome != OutcomeGone || !r.Finalize.Done || c.Namespace("ns") != nil {
		t.Fatalf("outcome %s, finalize %+v, namespace %+v", r.Outcome, r.Finalize, c.Namespace("ns"))
	}
	saved, err := backup.Saved(dir)
	if err != nil || len(saved) != 5 || r.BackedUp != 5 {
		t.Errorf("backup holds %v (report %d, %v), want the 5 objects", saved, r.BackedUp, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "namespace.yaml")); err != nil {
		t.Errorf("namespace not saved: %v", err)
	}
	for _, want := range []Change{
		{Kind: ChangeStrippedFinalizers, Resource: "configmaps", Name: "held", Finalizers: []string{"example.com/hold"}},
		{Kind: ChangeFinalized, Name: "ns", Finalizers: []string{"kubernetes"}},
	} {
		if !slices.ContainsFunc(r.Changes, func(c Change) bool { return reflect.DeepEqual(c, want) }) {
			t.Errorf("changes %+v lack %+v", r.Changes, want)
		}
	}
}

// A force pass reads the pods once: the full list that saves them is the
// one the controller's grace-period estimate is made from.
func TestForceEstimatesFromThePodsItSaved(t *testing.T) {
	c := kubetest.New()
	c.AddNamespace("ns", time.Minute)
	c.Add(kubetest.Pods, kubetest.Pod("ns", "on-node", "node-a", 300))
	c.Add(kubetest.ConfigMaps, kubetest.Object("ConfigMap", "ns", "plain"))
	dir := t.TempDir()
	r, err := purger(c, Options{DryRun: DryRunNone, BackupDir: dir, Timeout: 300 * time.Millisecond}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Deleted a minute ago with a grace period of 300 s: the controller
	// waits, and touches nothing else while the pod remains.
	if r.Finalize.Estimate != 300 || !r.Finalize.PodsFirst || c.Get(kubetest.ConfigMaps, "ns", "plain") == nil {
		t.Fatalf("finalize %+v, configmap %v", r.Finalize, c.Get(kubetest.ConfigMaps, "ns", "plain"))
	}
	// Per pass: the full list, and the recount of metadata after the
	// deletion; no list of its own for the estimate. And per wait after a
	// pass (each pass here: the timeout ends the run in a wait), the list
	// its watch of the pods going starts from.
	full, other := c.RequestsMatching("full list pods ns/"), c.RequestsMatching("list pods ns/")
	if r.Passes == 0 || len(full) != r.Passes || len(other) != 2*r.Passes {
		t.Errorf("%d passes listed pods %d times in full and %d times otherwise, want once in full a pass, twice otherwise", r.Passes, len(full), len(other))
	}
	if saved, err := backup.Saved(dir); err != nil || !slices.Contains(saved, "pods.core.json/on-node") {
		t.Errorf("backup holds %v (%v), want the pod", saved, err)
	}
}

func TestForceStopsAtTheTimeoutWithoutEscalations(t *testing.T) {
	c := stuck()
	r, err := purger(c, Options{DryRun: DryRunNone, BackupDir: t.TempDir(), Timeout: 300 * time.Millisecond}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcome != OutcomeRemaining || r.Stop == nil || r.Stop.Reason != StopTimeout || r.Finalize.Done {
		t.Fatalf("outcome %s, stop %+v", r.Outcome, r.Stop)
	}
	if got := c.Names(kubetest.ConfigMaps, "ns"); !reflect.DeepEqual(got, []string{"held"}) {
		t.Errorf("configmaps left %v, want the held one", got)
	}
}

func TestForceRefusesWithoutPermissions(t *testing.T) {
	c := stuck()
	c.Allowed = func(a kubetest.ResourceAttributes) bool {
		return a.Verb != "deletecollection" || a.Resource != "secrets"
	}
	r, err := purger(c, Options{DryRun: DryRunNone, BackupDir: t.TempDir()}).Run(context.Background())
	if !errors.Is(err, access.ErrMissing) || r.Outcome != OutcomeRefused || !reflect.DeepEqual(r.MissingPermissions, []access.Permission{{Verb: "deletecollection", Resource: "secrets", Namespace: "ns"}}) {
		t.Fatalf("err %v, outcome %s, missing %v", err, r.Outcome, r.MissingPermissions)
	}
	if w := writes(c); len(w) != 0 {
		t.Errorf("writes without permission: %v", w)
	}
}

func TestDiscoveryFailureAndItsEscalation(t *testing.T) {
	for _, despite := range []bool{false, true} {
		c := kubetest.New()
		c.AddNamespace("ns", time.Minute)
		c.FailedGroups = map[schema.GroupVersion]error{{Group: "metrics.k8s.io", Version: "v1beta1"}: errors.New("stale GroupVersion discovery: metrics.k8s.io/v1beta1")}
		for _, mode := range []DryRun{DryRunClient, DryRunNone} {
			r, err := purger(c, Options{DryRun: mode, BackupDir: t.TempDir(), Timeout: 300 * time.Millisecond,
				Escalations: askedIf(despite, diagnose.FlagFinalizeDespiteDiscovery)}).Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			wantCause := FinalizeDiscoveryFailed
			if despite {
				wantCause = FinalizeDespiteDiscovery
			}
			if r.Finalize.Cause != wantCause || r.Finalize.Would != despite {
				t.Errorf("despite=%v mode=%s: finalize %+v", despite, mode, r.Finalize)
			}
			if mode == DryRunNone && (r.Outcome == OutcomeGone) != despite {
				t.Errorf("despite=%v: outcome %s", despite, r.Outcome)
			}
		}
	}
}

// Tokens other systems own, and the namespace's own metadata.finalizers,
// are left to their owners unless the escalation says otherwise.
func TestNamespaceFinalizers(t *testing.T) {
	for _, tc := range []struct {
		name      string
		escalate  bool
		mode      DryRun
		wantCause FinalizeCause
		wantErr   string
		wantGone  bool
	}{
		{"plan, kept", false, DryRunClient, FinalizeOtherTokens, "", false},
		{"plan, removed", true, DryRunClient, FinalizeNothingRemains, "", false},
		{"force, kept", false, DryRunNone, FinalizeOtherTokens, "", false},
		{"force, removed", true, DryRunNone, FinalizeNothingRemains, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := kubetest.New()
			c.AddNamespace("ns", time.Minute, "kubernetes", "example.com/other")
			r, err := purger(c, Options{DryRun: tc.mode, BackupDir: t.TempDir(), Escalations: askedIf(tc.escalate, diagnose.FlagRemoveNamespaceFinalizers)}).Run(context.Background())
			if (err != nil) != (tc.wantErr != "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			}
			if r.Finalize.Cause != tc.wantCause || (c.Namespace("ns") == nil) != tc.wantGone {
				t.Errorf("finalize %+v, namespace %+v", r.Finalize, c.Namespace("ns"))
			}
			if !tc.escalate && !hasWarning(r, WarnTokensKept) {
				t.Errorf("no warning about the kept token: %v", r.Warnings)
			}
			if !tc.escalate && !holds(r, diagnose.BlockerNamespaceFinalizer, diagnose.FlagRemoveNamespaceFinalizers) {
				t.Errorf("the report does not say what holds it and which flag gets past it: %+v", r.Holding)
			}
			if tc.mode == DryRunNone && !tc.escalate && (r.Stop == nil || r.Stop.Reason != StopBlocked) {
				t.Errorf("a token only its owner removes: stop %+v, want Blocked", r.Stop)
			}
		})
	}
}

func TestActiveAndMissingNamespaces(t *testing.T) {
	c := kubetest.New()
	c.AddNamespace("ns", 0)
	if _, err := purger(c, Options{}).Run(context.Background()); !errors.Is(err, ErrActive) {
		t.Errorf("active: %v", err)
	}
	if _, err := purgerIn(c, "missing", Options{}).Run(context.Background()); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing: %v", err)
	}
	r, err := purger(c, Options{Escalations: Asked{diagnose.FlagDeleteNamespace: nil}}).Run(context.Background())
	if err != nil || r.Steps[0].Resource != "namespaces" || r.Steps[0].Status != StepPlanned || !r.Finalize.Would || c.Namespace("ns").DeletionTimestamp != nil {
		t.Fatalf("plan of an active namespace: %v, steps %+v, finalize %+v", err, r.Steps, r.Finalize)
	}
	r, err = purger(c, Options{DryRun: DryRunNone, Escalations: Asked{diagnose.FlagDeleteNamespace: nil}, BackupDir: t.TempDir()}).Run(context.Background())
	if err != nil || r.Outcome != OutcomeGone || r.Changes[0].Kind != ChangeDeletedActiveNamespace {
		t.Fatalf("force on an active namespace: %v, outcome %s, changes %v", err, r.Outcome, r.Changes)
	}
}

// A briefly unavailable API server is retried; an error not worth
// retrying stops the run with the report of what was done.
func TestForceRetriesTransientErrors(t *testing.T) {
	c := kubetest.New()
	c.AddNamespace("ns", time.Minute)
	failures := 1
	c.Fail = func(verb string, gvr schema.GroupVersionResource, ns, name string) error {
		if gvr.Resource == "namespaces" && verb == "get" && failures > 0 {
			failures--
			return apierrors.NewServiceUnavailable("restarting")
		}
		return nil
	}
	p := purger(c, Options{DryRun: DryRunNone, BackupDir: t.TempDir()})
	c.Fail = nil // the first GET is Run's own, before the passes
	r, err := p.Run(context.Background())
	if err != nil || r.Outcome != OutcomeGone {
		t.Fatalf("err %v, outcome %s", err, r.Outcome)
	}
	c2 := kubetest.New()
	c2.AddNamespace("ns", time.Minute)
	p = purger(c2, Options{DryRun: DryRunNone, BackupDir: t.TempDir()})
	c2.Fail = func(verb string, gvr schema.GroupVersionResource, ns, name string) error {
		if gvr.Resource == "namespaces" && verb == "create" {
			return apierrors.NewForbidden(gvr.GroupResource(), name, errors.New("no finalize for you"))
		}
		return nil
	}
	r, err = p.Run(context.Background())
	if err == nil || r.Outcome != OutcomeRemaining || r.Stop == nil || r.Stop.Reason != StopError || r.Finalize.Cause != FinalizeRejected {
		t.Fatalf("err %v, outcome %s, stop %+v, finalize %+v", err, r.Outcome, r.Stop, r.Finalize)
	}
}

func TestParseDryRun(t *testing.T) {
	for in, want := range map[string]DryRun{"client": DryRunClient, "server": DryRunServer, "none": DryRunNone} {
		got, err := ParseDryRun(in)
		if err != nil || got != want || got.String() != in {
			t.Errorf("%q: %v, %v", in, got, err)
		}
		text, _ := got.MarshalText()
		var back DryRun
		if err := back.UnmarshalText(text); err != nil || back != want {
			t.Errorf("%q does not round-trip: %v", in, err)
		}
	}
	if _, err := ParseDryRun("all"); err == nil || !strings.Contains(err.Error(), "use client, server or none") {
		t.Errorf("all: %v", err)
	}
}

func TestEscalationsMatch(t *testing.T) {
	fins := []string{"example.com/a", "example.com/b", "other.io/c"}
	if got := matchFinalizers([]string{"example.com/*"}, false, fins); !reflect.DeepEqual(got, fins[:2]) {
		t.Errorf("glob: %v", got)
	}
	if got := matchFinalizers(nil, true, fins); !reflect.DeepEqual(got, fins) {
		t.Errorf("all: %v", got)
	}
	if got := matchFinalizers(nil, false, fins); len(got) != 0 {
		t.Errorf("none asked: %v", got)
	}
}
