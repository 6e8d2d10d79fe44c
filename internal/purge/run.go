package purge

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/finalizers"
	"github.com/ns-doctor/ns-doctor/internal/inspect"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

type schemaGVR = schema.GroupVersionResource

// run is one purge run's state: the report it fills, the writer every
// write goes through, the controller's deleter it drives pass after pass
// (built once), and what it remembers between passes.
type run struct {
	*Purger
	// insp is the Purger's Inspector, or the run's own.
	insp   *inspect.Inspector
	report *Report
	w      writer
	rec    *recorder
	// deleter is upstream's, built once per run.
	deleter *deletion.NamespacedResourcesDeleter
	disc    *kube.Discovery
	obs     *diagnose.Observation
	// reported remembers the resources whose deletion is already listed
	// among the changes: later passes re-send the same request.
	reported map[string]bool
	// rc notices content created anew while purge deletes it.
	rc *recreations
	// stripped remembers the finalizers purge removed per object, so one
	// a live controller puts back is reported, not removed again.
	stripped map[string][]string
	// revived: a former namespace was re-created (and deleted again) so
	// its leftovers' finalizers could be removed.
	revived bool
	// acted counts the escalations' changes so far.
	acted int
	// nodes caches the state of the pods' nodes.
	nodes map[string]NodeState
	// mu guards the report's warnings, changes and failures: the API
	// server's warnings arrive from client-go's goroutines.
	mu sync.Mutex
	// passFailures are this pass's refused requests; lastState is what
	// the pass before left (what remains, what was refused), to tell a
	// pass that changed nothing.
	passFailures []Failure
	lastState    string
	// lastNS is the namespace as the last pass read it, lastContent what
	// its content pass found.
	lastNS      *v1.Namespace
	lastContent *deletion.ContentResult
	started     time.Time
}

func newRun(p *Purger, r *Report) *run {
	insp := p.Inspector
	if insp == nil {
		insp = inspect.New(p.Clients, inspect.Config{Compact: true})
	}
	return &run{Purger: p, insp: insp, report: r, reported: map[string]bool{}, rc: newRecreations(), stripped: map[string][]string{}, started: time.Now()}
}

func (r *run) ns() string { return r.report.Namespace }

// do runs purge on ns: the reads and checks before anything is changed,
// the bypasses, the namespace's own DELETE when asked, then the passes.
func (r *run) do(ctx context.Context, ns *v1.Namespace) error {
	deleted := ns
	if ns.DeletionTimestamp == nil {
		// A plan plays the namespace as deleted now.
		deleted = ns.DeepCopy()
		now := metav1.NewTime(r.now())
		deleted.DeletionTimestamp = &now
	}
	if err := r.prepare(ctx, ns, deleted); err != nil {
		return err
	}
	restore, err := r.applyBypass(ctx)
	if err != nil {
		return err
	}
	defer restore()
	if ns.DeletionTimestamp == nil {
		if err := r.deleteNamespace(ctx, ns); err != nil {
			return err
		}
	}
	if r.Opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, time.Now().Add(r.Opts.Timeout))
		defer cancel()
	}
	r.deleter = r.newDeleter()
	r.report.Flags = r.Opts.escalations(r.ns())
	err = r.passes(ctx)
	r.holding(context.WithoutCancel(ctx))
	return err
}

// prepare is everything before the first change: it undoes (or, in a
// plan, notes) what a run killed while it bypassed a webhook left behind,
// reads what the run needs, builds the writer, and for real checks every
// permission the run needs and opens the backup.
func (r *run) prepare(ctx context.Context, ns, deleted *v1.Namespace) error {
	if r.Opts.DryRun != DryRunNone || r.needsSnapshot() {
		if err := r.leftovers(ctx); err != nil {
			return err
		}
		obs, err := r.snapshot(ctx, deleted)
		if err != nil {
			return err
		}
		r.obs = &obs
		if err := r.resolveBypass(ctx, obs); err != nil {
			return err
		}
	} else if err := r.discoverWithLeftovers(ctx); err != nil {
		return err
	}
	if r.Opts.DryRun != DryRunNone {
		r.w = r.planWriter(deleted)
		return nil
	}
	snap := &deletion.Snapshot{}
	if r.obs != nil {
		snap = r.obs.Snapshot
	}
	missing, err := r.missingPermissions(ctx, ns, r.disc, snap)
	if err != nil {
		return err
	}
	if r.report.MissingPermissions = missing; len(missing) > 0 {
		r.report.Outcome = OutcomeRefused
		return ErrMissingPermissions
	}
	return r.openBackup(ns)
}

// planWriter plays the run over the snapshot: predicted (client) or with
// every write sent as a dry run first (server).
func (r *run) planWriter(ns *v1.Namespace) *planWriter {
	w := &planWriter{plan: deletion.NewPlanOps(r.obs.Snapshot), ns: deletion.NewPlanNamespaces(ns), exists: !r.Opts.Orphans,
		bypassed: r.unlessBypassed, clients: r.Clients, now: r.now}
	if r.Opts.DryRun == DryRunServer {
		w.server = r.Clients
		return w
	}
	w.rejections = diagnose.PredictRejections(*r.obs, r.bypassedNames())
	w.plan.DeleteErrs, w.ns.FinalizeErr = w.rejections.Delete, w.rejections.Finalize
	return w
}

// openBackup saves the namespace, then builds the writer that saves
// everything else before changing it.
func (r *run) openBackup(ns *v1.Namespace) error {
	dir := r.Opts.BackupDir
	if dir == "" {
		var err error
		if dir, err = backup.DefaultDir(ns.Name, r.now()); err != nil {
			return err
		}
	}
	bk, err := backup.New(dir)
	if err != nil {
		return err
	}
	u, err := toUnstructured(savedNamespace(ns, r.Opts.Orphans), "v1", "Namespace")
	if err != nil {
		return err
	}
	if err := bk.SaveNamespace(u); err != nil {
		return err
	}
	var former *deletion.PlanNamespaces
	if r.Opts.Orphans {
		former = deletion.NewPlanNamespaces(ns)
	}
	r.w = newRealWriter(r.Clients, bk, r.rc, former, r.now)
	r.report.BackupDir = bk.Dir
	r.emit(Event{Kind: EventBackup, Dir: bk.Dir})
	return nil
}

// needsSnapshot tells whether a force run needs the snapshot before its
// first pass: the strips' permission check and the bypass read it. Else
// the first pass's own lists are the only reads, as for the controller.
func (r *run) needsSnapshot() bool {
	return r.Opts.strips() || len(r.Opts.BypassWebhook) > 0
}

// snapshot discovers the API and reads what the namespace holds, the same
// way explain does (shared discovery, metadata sweep, webhooks, backends).
func (r *run) snapshot(ctx context.Context, ns *v1.Namespace) (diagnose.Observation, error) {
	in := r.inspector()
	obs, err := in.Observe(ctx, ns, r.inspectOptions())
	if err != nil {
		return obs, err
	}
	r.disc = in.Discovery()
	r.discoveries.seed(r.disc)
	// explain reads pods as metadata only; purge reads them as the
	// controller does (spec and status, never printed), so a plan knows
	// which pods a kubelet holds and which go at once.
	if in.Census().Skips(ns.Name, deletion.PodsGVR) {
		obs.Snapshot.PodSpecsUnknown = false
	} else if pods, err := (kube.PodLister{Client: r.Clients.Kube}).ListPods(ctx, ns.Name); err == nil {
		obs.Snapshot.Pods, obs.Snapshot.PodSpecsUnknown = pods, false
	}
	return obs, nil
}

// discoverWithLeftovers is the first read of a force run that needs no
// snapshot: discovery, with the undoing of a killed run's bypasses at
// once (over a slow link each round trip counts; neither needs the other).
func (r *run) discoverWithLeftovers(ctx context.Context) error {
	restored := make(chan error, 1)
	go func() { restored <- r.leftovers(ctx) }()
	disc, err := r.inspector().Discover(ctx)
	if err == nil {
		r.disc = disc
		r.discoveries.seed(disc)
	}
	return errors.Join(<-restored, err)
}

// inspector is the run's reader, shared with the other namespaces' runs
// (Run gives each run one). Plain objects are counted, not kept: a pass
// deletes them at once, and a 100k-object namespace fits in tens of MiB.
func (r *run) inspector() *inspect.Inspector { return r.insp }

// inspectOptions are what the run asks of each diagnosis: the cluster's
// deletion order.
func (r *run) inspectOptions() inspect.Options {
	return inspect.Options{Ordering: r.Opts.OrderedDeletion}
}

// newDeleter is upstream's NewNamespacedResourcesDeleter with this run's
// writer, discovery and escalations.
func (r *run) newDeleter() *deletion.NamespacedResourcesDeleter {
	r.rec = newRecorder(r.w, r.requestDone, r.whoRefused)
	var ops deletion.Operations = r.rec
	pods := r.w.pods()
	if census := r.inspector().Census(); census != nil && r.Opts.DryRun != DryRunClient {
		c := censusOps{Operations: r.rec, pods: pods, census: census, namespace: r.ns()}
		ops, pods = c, c
	}
	return &deletion.NamespacedResourcesDeleter{
		NsClient: r.w.namespaces(), Ops: ops, Pods: pods,
		DiscoverResourcesFn: func() ([]*metav1.APIResourceList, error) { return r.disc.Resources, r.disc.Err },
		FinalizerToken:      deletion.FinalizerToken, OrderedDeletion: r.Opts.OrderedDeletion.Ordered,
		Workers: r.Opts.Workers, Now: r.now,
		FinalizeDespiteDiscoveryFailure: r.Opts.FinalizeDespiteDiscoveryFailure,
		RemoveNamespaceFinalizers:       r.Opts.RemoveNamespaceFinalizers,
	}
}

// rediscover is a later pass's discovery: afresh, as the controller does,
// or shared with the other namespaces purged together.
func (r *run) rediscover() (*kube.Discovery, error) {
	if r.discoveries != nil {
		return r.discoveries.get(r.Clients)
	}
	return kube.Discover(r.Clients.Discovery)
}

// recordContent fills the report's remaining content and conditions from
// one content pass.
func (r *run) recordContent(content *deletion.ContentResult, first bool) {
	r.report.Remaining = []Remaining{}
	if content == nil {
		return
	}
	for gvr, n := range content.Totals.GVRToNumRemaining {
		r.report.Remaining = append(r.report.Remaining, Remaining{Resource: deletion.ResourceName(gvr), Count: n, Finalizers: r.rec.finalizersOf(gvr)})
	}
	sort.Slice(r.report.Remaining, func(i, j int) bool { return r.report.Remaining[i].Resource < r.report.Remaining[j].Resource })
	// A plan's later passes are what purge would do: the controller writes
	// the first one's conditions now.
	if first || r.w.real() {
		r.report.Conditions = conditionsOf(content.Conditions)
	}
}

func conditionsOf(conds []v1.NamespaceCondition) []Condition {
	out := []Condition{}
	for _, c := range conds {
		out = append(out, Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return out
}

// notFinalized records why a pass did not finalize.
func notFinalized(f *Finalize, res deletion.Result, err error) {
	f.Would = false
	c := res.Content
	switch {
	case c == nil:
	case c.Err != nil && deletion.OnlyDiscoveryFailed(c.Err) && c.Estimate == 0:
		f.Cause = FinalizeDiscoveryFailed
	case c.Err != nil:
		f.Cause, f.Error = FinalizeDeletionErrors, c.Err.Error()
	case c.Estimate > 0:
		f.Cause, f.Estimate, f.PodsFirst = FinalizeContentRemains, c.Estimate, c.PodsBlocked
	}
	var rre *deletion.ResourcesRemainingError
	if c != nil && c.Err == nil && errors.As(err, &rre) {
		f.Estimate = rre.Estimate
	}
}

// finalized records a pass that finalized the namespace (or would).
func (r *run) finalized(res deletion.Result) {
	f := &r.report.Finalize
	f.Would, f.Done = true, r.w.real()
	f.Remove = tokens(res.Dropped)
	f.Kept = nil
	for _, t := range res.Namespace.Spec.Finalizers {
		if !slices.Contains(res.Dropped, t) {
			f.Kept = append(f.Kept, string(t))
		}
	}
	switch {
	case res.Content != nil && res.Content.Err != nil:
		f.Cause = FinalizeDespiteDiscovery
	case r.acted > 0:
		f.Cause = FinalizeAfterEscalations
	default:
		f.Cause = FinalizeNothingRemains
	}
	switch {
	case r.Opts.Orphans:
		r.changed(Change{Kind: ChangeNoLeftovers, Name: r.ns()})
	case len(f.Remove) > 0:
		r.changed(Change{Kind: ChangeFinalized, Name: r.ns(), Finalizers: f.Remove})
	}
}

func tokens(names []v1.FinalizerName) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, string(n))
	}
	return out
}

func without(list, drop []string) []string {
	out := []string{}
	for _, x := range list {
		if !slices.Contains(drop, x) {
			out = append(out, x)
		}
	}
	return out
}

// done is a status for what was sent for real, or would be (a plan).
func done[T any](r *run, real, planned T) T {
	if r.w.real() {
		return real
	}
	return planned
}

// changed records a change made to the cluster; a plan makes none. Before
// the run has its writer, only a force run's undoing of a killed run's
// bypass changes anything.
func (r *run) changed(c Change) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w == nil || r.w.real() {
		r.report.Changes = append(r.report.Changes, c)
	}
}

// warn records a warning once; it tells whether it was new.
func (r *run) warn(w Warning) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if slices.ContainsFunc(r.report.Warnings, func(x Warning) bool { return reflect.DeepEqual(x, w) }) {
		return false
	}
	r.report.Warnings = append(r.report.Warnings, w)
	return true
}

// serverWarning is a warning the API server sent in answer to a write
// (an admission webhook's, or its own): kept once, and shown as it comes.
func (r *run) serverWarning(text string) {
	if r.warn(Warning{Kind: WarnAPIServer, Text: text}) {
		r.emit(Event{Kind: EventWarning, Err: text})
	}
}

// fail records a refused request; the same answer to the same request is
// one failure, counted, with when it came first and last.
func (r *run) fail(f Failure) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	r.passFailures = append(r.passFailures, f)
	for i := range r.report.Failures {
		x := &r.report.Failures[i]
		if x.Verb == f.Verb && x.Resource == f.Resource && x.Name == f.Name && x.Error == f.Error {
			x.Count, x.Last = x.Count+1, now
			return
		}
	}
	f.Count, f.First, f.Last = 1, now, now
	r.report.Failures = append(r.report.Failures, f)
}

// whoRefused says who refused a request, from what the run knows of the
// cluster's webhooks, CRDs and APIServices and their backends.
func (r *run) whoRefused(ctx context.Context, gvr schemaGVR, err error) *diagnose.Refusal {
	if err == nil {
		return nil
	}
	obs := r.inspector().ObservationOf(ctx, r.namespaceSeen(), &deletion.Snapshot{ListErrs: map[schemaGVR]error{gvr: err}}, r.disc, r.inspectOptions())
	return diagnose.WhoRefused(obs, gvr, err)
}

// namespaceSeen is the namespace as the run last read it.
func (r *run) namespaceSeen() *v1.Namespace {
	if r.lastNS != nil {
		return r.lastNS
	}
	return formerNamespace(r.ns(), r.now())
}

// emit sends a progress event, if anyone listens.
func (r *run) emit(e Event) {
	if r.Opts.Events == nil {
		return
	}
	e.Namespace, e.Context, e.At = r.ns(), r.Opts.Context, time.Now()
	r.Opts.Events <- e
}

// requestDone tells the listener of a pass's request.
func (r *run) requestDone(s Step) {
	r.emit(Event{Kind: EventRequest, Step: &s})
}

// leaksOf says, for each finalizer stripped (or to strip), what it costs.
func leaksOf(strips []Strip) []Leak {
	seen := map[string]bool{}
	var out []Leak
	for _, s := range strips {
		for _, f := range s.Finalizers {
			if seen[f] || (s.Status != StripPlanned && s.Status != StripRemoved) {
				continue
			}
			seen[f] = true
			l := Leak{Finalizer: f}
			if e := finalizers.Lookup(f); e != nil {
				l.Owner, l.Leak, l.Source = e.Owner, e.Leak, e.Source
			}
			out = append(out, l)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Finalizer < out[j].Finalizer })
	return out
}

// stripCandidates are the resources whose objects an escalation may strip:
// what the pass left, and what it failed to delete (a webhook refusing the
// DELETE may refuse the finalizer removal too, which the report then says).
func stripCandidates(c *deletion.ContentResult) []schemaGVR {
	set := map[schemaGVR]bool{}
	for gvr := range c.Totals.GVRToNumRemaining {
		set[gvr] = true
	}
	for _, gvr := range c.Failed {
		set[gvr] = true
	}
	out := make([]schemaGVR, 0, len(set))
	for gvr := range set {
		out = append(out, gvr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// errGone ends the passes: the namespace is gone.
var errGone = errors.New("namespace gone")

// errPlanEnds ends a plan's passes: what it plays holds the namespace.
var errPlanEnds = errors.New("nothing more a plan can play")

func stopIfPlan(r *run, err error) error {
	if !r.w.real() {
		return errPlanEnds
	}
	return err
}
