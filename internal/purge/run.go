package purge

import (
	"context"
	"errors"
	"slices"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/inspect"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

type schemaGVR = schema.GroupVersionResource

// A run is one namespace's purge, a pipeline of stages, each a type of
// its own that names what it needs of the run: the preflight
// (preflight.go: the snapshot, the escalations' reads, the writer, the
// access check and the backup) returns what the rest receives (prepared);
// then the passes (passes.go, a passLoop: the escalations that act before
// the first pass, the controller's Delete, then the escalations that act
// on what each left), and what holds the namespace when it stays
// (holding.go). The run keeps only what every stage shares; everything it
// reports goes through its ledger.
type run struct {
	*Purger
	// insp is the Purger's Inspector, or the run's own.
	insp *inspect.Inspector
	l    *ledger
	// report is the ledger's; read it only where no pass runs.
	report *Report
	// actions are the escalations asked for, at work in this run.
	actions []action
	// rc notices content created anew while purge deletes it.
	rc      *recreations
	started time.Time
}

func newRun(p *Purger, r *Report) *run {
	insp := p.Inspector
	if insp == nil {
		insp = inspect.New(p.Clients, inspect.Config{Compact: true})
	}
	return &run{Purger: p, insp: insp, l: newLedger(r, p.now), report: r, rc: newRecreations(),
		actions: startActions(p.Opts.Escalations), started: time.Now()}
}

func (r *run) ns() string { return r.report.Namespace }

// do runs the pipeline on ns.
func (r *run) do(ctx context.Context, ns *v1.Namespace) error {
	deleted := ns
	if ns.DeletionTimestamp == nil {
		// A plan plays the namespace as deleted now.
		deleted = ns.DeepCopy()
		now := metav1.NewTime(r.now())
		deleted.DeletionTimestamp = &now
	}
	pre, err := r.preflight().prepare(ctx, ns, deleted)
	if err != nil {
		return err
	}
	if pre.backup != nil {
		// Counted once the run is over, the bypasses' undoing included.
		defer r.l.update(func(rep *Report) { rep.BackedUp = pre.backup.Count() })
	}
	loop := r.passLoop(pre)
	undo, err := loop.beforePasses(ctx)
	defer undo()
	if err != nil {
		return err
	}
	if r.Opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, time.Now().Add(r.Opts.Timeout))
		defer cancel()
	}
	r.l.update(func(rep *Report) { rep.Flags, rep.Escalations = r.Opts.flags(r.ns()), r.Opts.Escalations.Used() })
	loop.deleter = loop.newDeleter()
	err = loop.passes(ctx)
	loop.holding(context.WithoutCancel(ctx))
	return err
}

// preflight is the run's first stage, with what it needs.
func (r *run) preflight() *preflight {
	return &preflight{ns: r.ns(), opts: &r.Opts, clients: r.Clients, l: r.l, actions: r.actions, insp: r.insp, rc: r.rc,
		discoveries: r.discoveries, shared: r.shared, now: r.now, emit: r.emit}
}

// passLoop is the run's passes over what preflight prepared, with what
// they need.
func (r *run) passLoop(pre prepared) *passLoop {
	return &passLoop{ns: r.ns(), opts: &r.Opts, clients: r.Clients, l: r.l, report: r.report, actions: r.actions, rc: r.rc,
		insp: r.insp, now: r.now, started: r.started, emit: r.emit,
		pre: pre, disc: pre.disc, discoveries: r.discoveries, reported: map[string]bool{}}
}

// beforePasses runs the escalations that act once, before the first pass;
// the undo returned undoes what they asked to undo, in reverse order.
func (r *passLoop) beforePasses(ctx context.Context) (func(), error) {
	var undos []func()
	undo := func() {
		for _, u := range slices.Backward(undos) {
			u()
		}
	}
	for _, a := range r.actions {
		b, ok := a.(beforePasses)
		if !ok {
			continue
		}
		u, err := b.before(ctx, r.actor(), r.pre.scope)
		if err != nil {
			return undo, err
		}
		undos = append(undos, u)
	}
	return undo, nil
}

// actor is what the escalations act through: the run's writer.
func (r *passLoop) actor() actor {
	a := newActor(r.ns, r.pre.w, r.l, r.pre.real, r.whoRefused, r.clients)
	if r.pre.real {
		// A plan's escalations read the plan's own state instead.
		a.seen = r.rec.listed
	}
	return a
}

// newActor is an actor whose reads and writes go through w; real is the
// mode, which only its until answers by (a plan plays what purge would do
// once a wait is over).
func newActor(ns string, w channel, l *ledger, real bool, refused func(context.Context, schemaGVR, error) *diagnose.Refusal, clients *kube.Clients) *runActor {
	return &runActor{ns: ns, w: w, l: l, real: real, refused: refused,
		nodeOf: func(ctx context.Context, name string) (*v1.Node, error) {
			return clients.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		}}
}

// inspectOptions are what a run asks of each diagnosis: the cluster's
// deletion order.
func (o *Options) inspectOptions() inspect.Options {
	return inspect.Options{Ordering: o.OrderedDeletion}
}

// newDeleter is upstream's NewNamespacedResourcesDeleter with this run's
// writer, discovery and escalations.
func (r *passLoop) newDeleter() *deletion.NamespacedResourcesDeleter {
	requestDone := func(s Step) { r.emit(Event{Kind: EventRequest, Step: &s}) }
	r.rec = newRecorder(r.pre.w, r.pre.tally, r.pre.real, requestDone, r.whoRefused)
	var ops deletion.Operations = r.rec
	pods := r.pre.w.pods()
	if census := r.insp.Census(); census != nil && r.opts.DryRun != DryRunClient {
		c := censusOps{Operations: r.rec, pods: pods, census: census, namespace: r.ns, empty: &metav1.PartialObjectMetadataList{}}
		ops, pods = c, c
	}
	d := &deletion.NamespacedResourcesDeleter{
		NsClient: r.pre.w.namespaces(), Ops: ops, Pods: pods,
		DiscoverResourcesFn: func() ([]*metav1.APIResourceList, error) { return r.disc.Resources, r.disc.Err },
		FinalizerToken:      deletion.FinalizerToken, OrderedDeletion: r.opts.OrderedDeletion.Ordered,
		Workers: r.opts.Workers, Now: r.now,
	}
	for _, a := range r.actions {
		if o, ok := a.(deleterOption); ok {
			o.configure(d)
		}
	}
	return d
}

// recordContent fills the report's remaining content and conditions from
// one content pass.
func (r *passLoop) recordContent(content *deletion.ContentResult, first bool) {
	r.l.update(func(rep *Report) {
		rep.Remaining = []Remaining{}
		if content == nil {
			return
		}
		for gvr, n := range content.Totals.GVRToNumRemaining {
			rep.Remaining = append(rep.Remaining, Remaining{Resource: deletion.ResourceName(gvr), Count: n, Finalizers: r.rec.finalizersOf(gvr)})
		}
		sort.Slice(rep.Remaining, func(i, j int) bool { return rep.Remaining[i].Resource < rep.Remaining[j].Resource })
		// A plan's later passes are what purge would do: the controller
		// writes the first one's conditions now.
		if first || r.pre.real {
			rep.Conditions = conditionsOf(content.Conditions)
		}
	})
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

// finalized records a pass that finalized the namespace (or would), and
// returns what it recorded.
func (r *passLoop) finalized(res deletion.Result) Finalize {
	var f Finalize
	r.l.update(func(rep *Report) {
		rep.Finalize.Would, rep.Finalize.Done = true, r.pre.real
		rep.Finalize.Remove = tokens(res.Dropped)
		rep.Finalize.Kept = nil
		for _, t := range res.Namespace.Spec.Finalizers {
			if !slices.Contains(res.Dropped, t) {
				rep.Finalize.Kept = append(rep.Finalize.Kept, string(t))
			}
		}
		switch {
		case res.Content != nil && res.Content.Err != nil:
			rep.Finalize.Cause = FinalizeDespiteDiscovery
		case r.acted > 0:
			rep.Finalize.Cause = FinalizeAfterEscalations
		default:
			rep.Finalize.Cause = FinalizeNothingRemains
		}
		f = rep.Finalize
	})
	if !r.pre.real {
		return f // a plan changes nothing
	}
	switch {
	case r.opts.Orphans:
		r.l.changed(Change{Kind: ChangeNoLeftovers, Name: r.ns})
	case len(f.Remove) > 0:
		r.l.changed(Change{Kind: ChangeFinalized, Name: r.ns, Finalizers: f.Remove})
	}
	return f
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

// serverWarning is a warning the API server sent in answer to a write
// (an admission webhook's, or its own): kept once, and shown as it comes.
func (r *run) serverWarning(text string) {
	if r.l.warn(Warning{Kind: WarnAPIServer, Text: text}) {
		r.emit(Event{Kind: EventWarning, Err: text})
	}
}

// whoRefused says who refused a request, from what the passes know of the
// cluster's webhooks, CRDs and APIServices and their backends.
func (r *passLoop) whoRefused(ctx context.Context, gvr schemaGVR, err error) *diagnose.Refusal {
	return refusedBy(ctx, r.insp, r.opts.inspectOptions(), r.namespaceSeen(), r.disc, gvr, err)
}

// refusedBy says who refused a request, from the namespace and the
// discovery as the run last read them.
func refusedBy(ctx context.Context, in *inspect.Inspector, opts inspect.Options, ns *v1.Namespace, disc *kube.Discovery, gvr schemaGVR, err error) *diagnose.Refusal {
	if err == nil {
		return nil
	}
	obs := in.ObservationOf(ctx, ns, &deletion.Snapshot{ListErrs: map[schemaGVR]error{gvr: err}}, disc, opts)
	return diagnose.WhoRefused(obs, gvr, err)
}

// namespaceSeen is the namespace as the passes last read it.
func (r *passLoop) namespaceSeen() *v1.Namespace {
	if r.lastNS != nil {
		return r.lastNS
	}
	return formerNamespace(r.ns, r.now())
}

// emit sends a progress event, if anyone listens.
func (r *run) emit(e Event) {
	if r.Opts.Events == nil {
		return
	}
	e.Namespace, e.Context, e.At = r.ns(), r.Opts.Context, time.Now()
	r.Opts.Events <- e
}

// errGone ends the passes: the namespace is gone.
var errGone = errors.New("namespace gone")

// errPlanEnds ends a plan's passes: what it plays holds the namespace.
var errPlanEnds = errors.New("nothing more a plan can play")

func stopIfPlan(r *passLoop, err error) error {
	if !r.pre.real {
		return errPlanEnds
	}
	return err
}
