package purge

import (
	"context"
	"errors"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/inspect"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// prepared is preflight's result, what the rest of the pipeline receives:
// what the run knows before its first change (the escalations' scope), the
// writer chosen once and its tally, the mode, and the backup.
type prepared struct {
	scope
	w     writer
	tally tally
	// real tells whether writes change the cluster: a plan's outcome is
	// Planned, it keeps every pass's steps and only the first pass's
	// conditions, and plays what purge would do once a wait is over.
	real bool
	// backup is where real writes save (nil in plans).
	backup *backup.Writer
}

// preflight is a run's first stage, everything before the first change,
// with what it needs of the run named: it undoes (or, in a plan, notes)
// what a killed run left behind (each escalation's leftovers), reads what
// the run needs, lets the escalations read what they act on (bad input
// only the cluster shows stops the run here), builds the writer, and for
// real checks every permission the run needs (internal/access) and opens
// the backup. It returns what the run knows before its first change.
type preflight struct {
	ns      string
	opts    *Options
	clients *kube.Clients
	l       *ledger
	actions []action
	insp    *inspect.Inspector
	// rc notices content created anew: the real writer feeds it.
	rc *recreations
	// discoveries and shared are what the runs of RunMany share: the
	// discovery, and reads such as the leftovers' (nil for one run).
	discoveries *discoveryCache
	shared      *sharedReads
	now         func() time.Time
	emit        func(Event)
}

// prepare is the preflight of ns (deleted: as a plan plays it).
func (p *preflight) prepare(ctx context.Context, ns, deleted *v1.Namespace) (prepared, error) {
	// Nothing was refused yet: whether a former namespace must be revived
	// is the server's version's answer alone.
	s := scope{ns: ns, orphans: p.opts.Orphans, revive: mustRevive(p.opts, &Report{})}
	if p.opts.DryRun != DryRunNone || p.needsSnapshot() {
		if err := p.undoLeftovers(ctx); err != nil {
			return prepared{}, err
		}
		obs, disc, err := p.snapshot(ctx, deleted)
		if err != nil {
			return prepared{}, err
		}
		s.obs, s.snap, s.disc = &obs, obs.Snapshot, disc
	} else {
		disc, err := p.discoverWithLeftovers(ctx)
		if err != nil {
			return prepared{}, err
		}
		s.disc = disc
	}
	if err := p.resolve(ctx, s); err != nil {
		return prepared{}, err
	}
	if p.opts.DryRun != DryRunNone {
		w := p.planWriter(deleted, s)
		return prepared{scope: s, w: w, tally: planTally{ops: w.ops}}, nil
	}
	if s.snap == nil {
		s.snap = &deletion.Snapshot{}
	}
	if err := p.checkAccess(ctx, s); err != nil {
		return prepared{}, err
	}
	return p.openBackup(ctx, ns, s)
}

// checkAccess asks, once, about every permission the force run needs
// (needs): a *access.MissingError, with the report listing each, refuses
// the run before any change.
func (p *preflight) checkAccess(ctx context.Context, s scope) error {
	if p.opts.AccessChecked {
		return nil
	}
	missing, err := access.Missing(ctx, p.clients.Kube.AuthorizationV1(), needs(s, p.opts.Orphans, p.actions))
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		p.l.update(func(rep *Report) { rep.MissingPermissions, rep.Outcome = missing, OutcomeRefused })
		return &access.MissingError{Missing: missing}
	}
	return nil
}

// resolve lets each escalation read what it will act on, before the
// writer exists: its reads go straight to the cluster.
func (p *preflight) resolve(ctx context.Context, s scope) error {
	refused := func(ctx context.Context, gvr schemaGVR, err error) *diagnose.Refusal {
		return refusedBy(ctx, p.insp, p.opts.inspectOptions(), formerNamespace(p.ns, p.now()), s.disc, gvr, err)
	}
	a := newActor(p.ns, clusterReader{clients: p.clients}, p.l, true, refused, p.clients)
	for _, act := range p.actions {
		if res, ok := act.(resolver); ok {
			if err := res.resolve(ctx, a, s); err != nil {
				return err
			}
		}
	}
	return nil
}

// needsSnapshot tells whether a force run needs the snapshot before its
// first pass: an escalation's permission check or its reads need what the
// namespace holds. Else the first pass's own lists are the only reads, as
// for the controller.
func (p *preflight) needsSnapshot() bool {
	needs := false
	p.opts.Escalations.each(func(e *Escalation, _ []string) { needs = needs || e.snapshot })
	return needs
}

// planWriter plays the run over the snapshot: predicted (client) or with
// every write sent as a dry run first (server). What an escalation spares
// the run during it (a bypassed webhook's refusals) it spares the plan.
func (p *preflight) planWriter(ns *v1.Namespace, s scope) *planWriter {
	a := newActor(p.ns, clusterReader{clients: p.clients}, p.l, false, nil, p.clients)
	w := &planWriter{planState: planState{ops: deletion.NewPlanOps(s.obs.Snapshot), ns: deletion.NewPlanNamespaces(ns), disc: s.disc},
		exists: !p.opts.Orphans, spared: spared(p.actions, a), clients: p.clients}
	if p.opts.DryRun == DryRunServer {
		w.server = p.clients
		return w
	}
	w.rejections = diagnose.PredictRejections(*s.obs, spares(p.actions))
	w.ops.DeleteErrs, w.ns.FinalizeErr = w.rejections.Delete, w.rejections.Finalize
	return w
}

// openBackup saves the namespace, then builds the writer that saves
// everything else before changing it.
func (p *preflight) openBackup(ctx context.Context, ns *v1.Namespace, s scope) (prepared, error) {
	dir := p.opts.BackupDir
	if dir == "" {
		var err error
		if dir, err = backup.DefaultDir(ns.Name, p.now()); err != nil {
			return prepared{}, err
		}
	}
	bk, err := backup.New(dir, "purge")
	if err != nil {
		return prepared{}, err
	}
	u, err := toUnstructured(savedNamespace(ns, p.opts.Orphans), "v1", "Namespace")
	if err != nil {
		return prepared{}, err
	}
	if err := bk.SaveNamespace(u); err != nil {
		return prepared{}, err
	}
	var former *deletion.PlanNamespaces
	if p.opts.Orphans {
		former = deletion.NewPlanNamespaces(ns)
	}
	w := newRealWriter(p.clients, bk, p.rc, former)
	w.disc, w.rediscover = s.disc, p.discoveries.rediscoverer(ctx, p.clients)
	p.l.update(func(rep *Report) { rep.BackupDir = bk.Dir })
	p.emit(Event{Kind: EventBackup, Dir: bk.Dir})
	return prepared{scope: s, w: w, tally: realTally{content: w.content}, real: true, backup: bk}, nil
}

// snapshot discovers the API and reads what the namespace holds, the same
// way explain does (shared discovery, metadata sweep, webhooks, backends).
func (p *preflight) snapshot(ctx context.Context, ns *v1.Namespace) (diagnose.Observation, *kube.Discovery, error) {
	obs, err := p.insp.Observe(ctx, ns, p.opts.inspectOptions())
	if err != nil {
		return obs, nil, err
	}
	disc := p.insp.Discovery()
	p.discoveries.seed(disc)
	// explain reads pods as metadata only; purge reads them as the
	// controller does (spec and status, never printed), so a plan knows
	// which pods a kubelet holds and which go at once.
	if p.insp.Census().Skips(ns.Name, deletion.PodsGVR) {
		obs.Snapshot.PodSpecsUnknown = false
	} else if pods, err := (kube.PodLister{Client: p.clients.Kube}).ListPods(ctx, ns.Name); err == nil {
		obs.Snapshot.Pods, obs.Snapshot.PodSpecsUnknown = pods, false
	}
	return obs, disc, nil
}

// discoverWithLeftovers is the first read of a force run that needs no
// snapshot: discovery, with the undoing of a killed run's leftovers at
// once (over a slow link each round trip counts; neither needs the other).
func (p *preflight) discoverWithLeftovers(ctx context.Context) (*kube.Discovery, error) {
	restored := make(chan error, 1)
	go func() { restored <- p.undoLeftovers(ctx) }()
	disc, err := p.insp.Discover(ctx)
	if err == nil {
		p.discoveries.seed(disc)
	} else {
		disc = nil
	}
	return disc, errors.Join(<-restored, err)
}

// undoLeftovers lets every escalation that can leave something behind
// when a run is killed (its leftovers) undo what an earlier run of this
// namespace left, before anything else, whether this run asks for it or
// not; a plan only says it would.
func (p *preflight) undoLeftovers(ctx context.Context) error {
	t := tidying{clients: p.clients, ns: p.ns, l: p.l, plan: p.opts.DryRun != DryRunNone, shared: p.shared}
	for _, e := range escalations {
		if e.leftovers == nil {
			continue
		}
		t.asked = p.opts.Escalations.Has(e.Flag)
		if err := e.leftovers(ctx, t); err != nil {
			return err
		}
	}
	return nil
}
