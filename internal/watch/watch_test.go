package watch

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/kube/kubetest"
	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// words says what the engine hands over, so the tests read it back.
type words struct{}

func (words) Stuck(r diagnose.Report) string {
	var kinds []string
	for _, b := range r.Blocking() {
		kinds = append(kinds, string(b.Kind)+" "+b.Subject)
	}
	return "stuck: " + strings.Join(kinds, "; ")
}

func (words) Janitor(r *purge.Report, err error) string {
	if err != nil {
		return "janitor error: " + err.Error()
	}
	return "janitor " + string(r.Outcome) + " " + r.Mode.String()
}

// testWatcher is a watcher over an in-memory cluster, its informer synced.
func testWatcher(t *testing.T, c *kubetest.Cluster, opts Options) (*Watcher, *record.FakeRecorder) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	rec := record.NewFakeRecorder(20)
	w := &Watcher{Clients: c.Clients(), Opts: opts, Words: words{}, Metrics: NewMetrics(), Recorder: rec}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return w, rec
}

func heldCluster() *kubetest.Cluster {
	c := kubetest.New()
	c.AddNamespace("stuck", 10*time.Minute)
	c.Add(kubetest.ConfigMaps, kubetest.Object("ConfigMap", "stuck", "held", "example.com/gone"))
	c.AddNamespace("young", time.Minute)
	c.Add(kubetest.ConfigMaps, kubetest.Object("ConfigMap", "young", "held", "example.com/gone"))
	c.AddNamespace("active", 0)
	return c
}

func events(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// A namespace terminating past --after is diagnosed: an Event naming its
// blocker, its series; one younger is left for later; an Active one and
// one that went have nothing.
func TestSyncDiagnosesThoseTerminatingPastAfter(t *testing.T) {
	c := heldCluster()
	w, rec := testWatcher(t, c, Options{After: 5 * time.Minute, Resync: time.Minute})
	ctx := context.Background()
	for _, name := range []string{"stuck", "young", "active", "gone"} {
		if err := w.sync(ctx, name); err != nil {
			t.Fatalf("sync %s: %v", name, err)
		}
	}
	got := events(rec)
	// No controller works on the in-memory cluster: that is its blocker.
	if len(got) != 1 || !strings.HasPrefix(got[0], "Warning NamespaceStuck stuck: ControllerNotRunning") {
		t.Errorf("events %q, want one NamespaceStuck naming the blocker", got)
	}
	want := `
# HELP nsdoctor_namespace_blocker 1 per blocker of a terminating namespace: its kind and what it names (subject).
# TYPE nsdoctor_namespace_blocker gauge
nsdoctor_namespace_blocker{kind="ControllerNotRunning",namespace="stuck",subject=""} 1
# HELP nsdoctor_namespace_stuck 1 when the last diagnosis of the terminating namespace says Stuck, else 0; absent before the first diagnosis.
# TYPE nsdoctor_namespace_stuck gauge
nsdoctor_namespace_stuck{namespace="stuck"} 1
`
	if err := testutil.GatherAndCompare(w.Metrics.Registry, strings.NewReader(want), "nsdoctor_namespace_blocker", "nsdoctor_namespace_stuck"); err != nil {
		t.Error(err)
	}
	// Both terminating namespaces have their age, diagnosed or not.
	if n := testutil.CollectAndCount(w.Metrics, "nsdoctor_namespace_terminating_seconds"); n != 2 {
		t.Errorf("%d terminating_seconds series, want 2", n)
	}
	// The same diagnosis again is no change; the Event is recorded again
	// (the recorder's correlator makes it a count).
	if changed := w.state.set("stuck", mustReport(t, w, "stuck")); changed {
		t.Error("the same diagnosis counted as a change")
	}
}

func mustReport(t *testing.T, w *Watcher, name string) diagnose.Report {
	t.Helper()
	ns, err := w.lister.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := w.diagnose(context.Background(), ns)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A namespace forgotten takes its series with it, and says so once.
func TestForgetRemovesSeries(t *testing.T) {
	c := heldCluster()
	w, _ := testWatcher(t, c, Options{After: 0, Resync: time.Minute})
	var changes []Change
	w.OnChange = func(ch Change) { changes = append(changes, ch) }
	if err := w.sync(context.Background(), "stuck"); err != nil {
		t.Fatal(err)
	}
	w.forget("stuck")
	w.forget("stuck")
	if n := testutil.CollectAndCount(w.Metrics, "nsdoctor_namespace_blocker", "nsdoctor_namespace_stuck"); n != 0 {
		t.Errorf("%d series left for a forgotten namespace", n)
	}
	if len(changes) != 2 || changes[0].Report == nil || changes[1].Report != nil {
		t.Errorf("changes %+v, want the diagnosis then one 'gone'", changes)
	}
}

// The janitor: only a namespace its selector chooses, once it has been
// terminating for its After, a server dry run by default; never a
// system namespace; not twice within its After.
func TestJanitorChoosesOnlyItsNamespaces(t *testing.T) {
	c := heldCluster()
	c.AddNamespace("kube-system", 10*time.Minute)
	c.AddNamespace("ci-1", 10*time.Minute)
	c.Add(kubetest.ConfigMaps, kubetest.Object("ConfigMap", "ci-1", "held", "example.com/gone"))
	clients := c.Clients()
	for _, name := range []string{"ci-1", "kube-system"} {
		if _, err := clients.Kube.CoreV1().Namespaces().Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"labels":{"ci":"true"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	selector, _ := labels.Parse("ci=true")
	w, rec := testWatcher(t, c, Options{After: 0, Resync: time.Minute, Janitor: &JanitorOptions{
		Selector: selector, After: 5 * time.Minute,
		Purge: purge.Options{DryRun: purge.DryRunServer, Escalations: purge.Asked{diagnose.FlagRemoveFinalizers: {"example.com/*"}}, Timeout: time.Minute, Workers: 4},
	}})
	ctx := context.Background()
	for _, name := range []string{"stuck", "kube-system", "ci-1", "ci-1"} {
		if err := w.sync(ctx, name); err != nil {
			t.Fatalf("sync %s: %v", name, err)
		}
		// The janitor runs apart; here, after each diagnosis.
		for w.janitorQueue.Len() > 0 {
			w.processJanitor(ctx)
		}
	}
	var planned []string
	for _, e := range events(rec) {
		if strings.Contains(e, ReasonPurgePlanned) || strings.Contains(e, ReasonPurged) || strings.Contains(e, ReasonPurgeFailed) {
			planned = append(planned, e)
		}
	}
	if len(planned) != 1 || !strings.Contains(planned[0], "Normal NamespacePurgePlanned janitor Planned server") {
		t.Errorf("janitor events %q, want one server dry run (ci-1 only, once)", planned)
	}
	if cm := c.Get(kubetest.ConfigMaps, "ci-1", "held"); cm == nil || len(cm.GetFinalizers()) != 1 {
		t.Errorf("a dry run changed ci-1's configmap: %v", cm)
	}
	if n := testutil.ToFloat64(w.Metrics.janitor.WithLabelValues("dry-run", resultGone)); n != 1 {
		t.Errorf("janitor counter dry-run/gone = %v, want 1", n)
	}
}

func TestVerdictBoundsItsSeries(t *testing.T) {
	r := diagnose.Report{Verdict: diagnose.Verdict{State: diagnose.StateStuck}}
	long := strings.Repeat("é", 200)
	for i := range 30 {
		r.Blockers = append(r.Blockers, diagnose.Blocker{Kind: diagnose.BlockerFinalizers, Subject: string(rune('a'+i)) + long})
	}
	r.Blockers = append(r.Blockers, r.Blockers[0])
	v := verdictOf(r)
	if len(v.blockers) != maxBlockerSeries {
		t.Errorf("%d series, want %d", len(v.blockers), maxBlockerSeries)
	}
	for _, b := range v.blockers {
		if len(b.subject) > maxSubject+3 || !strings.HasSuffix(b.subject, "...") || strings.ContainsRune(b.subject, '\uFFFD') {
			t.Errorf("subject %q not cut on a rune boundary within %d bytes", b.subject, maxSubject)
		}
	}
	if v := verdictOf(diagnose.Report{Verdict: diagnose.Verdict{State: diagnose.StateTerminating}, Blockers: r.Blockers}); len(v.blockers) != 0 || v.stuck {
		t.Errorf("a namespace not stuck exports blockers: %+v", v)
	}
	if got := cutMessage(strings.Repeat("ü", 1000)); len(got) > maxEventMessage || !strings.HasSuffix(got, "...") {
		t.Errorf("message of %d bytes", len(got))
	}
}

func TestJanitorOutcome(t *testing.T) {
	for _, c := range []struct {
		mode           purge.DryRun
		r              *purge.Report
		err            error
		action, result string
	}{
		{purge.DryRunServer, &purge.Report{Outcome: purge.OutcomePlanned}, nil, "dry-run", resultGone},
		{purge.DryRunServer, &purge.Report{Outcome: purge.OutcomePlanned, Holding: []purge.Hold{{}}}, nil, "dry-run", resultRemaining},
		{purge.DryRunNone, &purge.Report{Outcome: purge.OutcomeGone}, nil, "purge", resultGone},
		{purge.DryRunNone, &purge.Report{Outcome: purge.OutcomeRemaining}, nil, "purge", resultRemaining},
		{purge.DryRunNone, &purge.Report{Outcome: purge.OutcomeRefused}, access.ErrMissing, "purge", resultRefused},
		{purge.DryRunNone, &purge.Report{}, purge.ErrNotFound, "purge", resultGone},
		{purge.DryRunNone, &purge.Report{}, context.DeadlineExceeded, "purge", resultError},
	} {
		if action, result := janitorOutcome(c.mode, c.r, c.err); action != c.action || result != c.result {
			t.Errorf("%v %+v %v: %s/%s, want %s/%s", c.mode, c.r, c.err, action, result, c.action, c.result)
		}
	}
}

// A watch told to stop takes nothing more from its queue: a queue shut
// down still hands out what it holds, and thousands of namespaces queued
// would each start a diagnosis bound to fail. Nothing is diagnosed, no
// Event recorded, and what was queued stays unforgotten.
func TestStoppingTakesNoMoreFromTheQueue(t *testing.T) {
	w, rec := testWatcher(t, heldCluster(), Options{Resync: time.Minute})
	w.queue.Add("stuck")
	w.queue.Add("young")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w.queue.ShutDown()
	if w.processNext(ctx) {
		t.Error("a worker told to stop asked for more")
	}
	if got := events(rec); len(got) != 0 {
		t.Errorf("a stopping watch diagnosed: %q", got)
	}
	if n := testutil.CollectAndCount(w.Metrics, "nsdoctor_namespace_stuck"); n != 0 {
		t.Errorf("%d stuck series after the stop, want none", n)
	}
}
