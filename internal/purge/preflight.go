package purge

import (
	"context"
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
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

// preflight is everything before the first change: it undoes (or, in a
// plan, notes) what a run killed while it bypassed a webhook left behind,
// reads what the run needs, lets the escalations read what they act on
// (bad input only the cluster shows stops the run here), builds the
// writer, and for real checks every permission the run needs and opens
// the backup. It returns what the run knows before its first change.
func (r *run) preflight(ctx context.Context, ns, deleted *v1.Namespace) (prepared, error) {
	s := scope{ns: ns, orphans: r.Opts.Orphans, revive: r.mustRevive()}
	if r.Opts.DryRun != DryRunNone || r.needsSnapshot() {
		if err := r.leftovers(ctx); err != nil {
			return prepared{}, err
		}
		obs, disc, err := r.snapshot(ctx, deleted)
		if err != nil {
			return prepared{}, err
		}
		s.obs, s.snap, s.disc = &obs, obs.Snapshot, disc
	} else {
		disc, err := r.discoverWithLeftovers(ctx)
		if err != nil {
			return prepared{}, err
		}
		s.disc = disc
	}
	if err := r.resolve(ctx, s); err != nil {
		return prepared{}, err
	}
	if r.Opts.DryRun != DryRunNone {
		w := r.planWriter(deleted, s)
		return prepared{scope: s, w: w, tally: planTally{ops: w.ops}}, nil
	}
	if s.snap == nil {
		s.snap = &deletion.Snapshot{}
	}
	missing, err := r.missingPermissions(ctx, s)
	if err != nil {
		return prepared{}, err
	}
	if len(missing) > 0 {
		r.l.update(func(rep *Report) { rep.MissingPermissions, rep.Outcome = missing, OutcomeRefused })
		return prepared{}, ErrMissingPermissions
	}
	return r.openBackup(ns, s)
}

// resolve lets each escalation read what it will act on, before the
// writer exists: its reads go straight to the cluster.
func (r *run) resolve(ctx context.Context, s scope) error {
	refused := func(ctx context.Context, gvr schemaGVR, err error) *diagnose.Refusal {
		return r.refusedBy(ctx, formerNamespace(r.ns(), r.now()), s.disc, gvr, err)
	}
	a := r.actorOver(clusterReader{clients: r.Clients}, true, refused)
	for _, act := range r.actions {
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
func (r *run) needsSnapshot() bool {
	needs := false
	r.Opts.Escalations.each(func(e *Escalation, _ []string) { needs = needs || e.snapshot })
	return needs
}

// planWriter plays the run over the snapshot: predicted (client) or with
// every write sent as a dry run first (server).
func (r *run) planWriter(ns *v1.Namespace, s scope) *planWriter {
	w := &planWriter{planState: planState{ops: deletion.NewPlanOps(s.obs.Snapshot), ns: deletion.NewPlanNamespaces(ns), disc: s.disc},
		exists: !r.Opts.Orphans, bypassed: r.unlessBypassed, clients: r.Clients}
	if r.Opts.DryRun == DryRunServer {
		w.server = r.Clients
		return w
	}
	w.rejections = diagnose.PredictRejections(*s.obs, r.bypassedNames())
	w.ops.DeleteErrs, w.ns.FinalizeErr = w.rejections.Delete, w.rejections.Finalize
	return w
}

// openBackup saves the namespace, then builds the writer that saves
// everything else before changing it.
func (r *run) openBackup(ns *v1.Namespace, s scope) (prepared, error) {
	dir := r.Opts.BackupDir
	if dir == "" {
		var err error
		if dir, err = backup.DefaultDir(ns.Name, r.now()); err != nil {
			return prepared{}, err
		}
	}
	bk, err := backup.New(dir, "purge")
	if err != nil {
		return prepared{}, err
	}
	u, err := toUnstructured(savedNamespace(ns, r.Opts.Orphans), "v1", "Namespace")
	if err != nil {
		return prepared{}, err
	}
	if err := bk.SaveNamespace(u); err != nil {
		return prepared{}, err
	}
	var former *deletion.PlanNamespaces
	if r.Opts.Orphans {
		former = deletion.NewPlanNamespaces(ns)
	}
	w := newRealWriter(r.Clients, bk, r.rc, former)
	w.disc, w.rediscover = s.disc, r.rediscover
	r.l.update(func(rep *Report) { rep.BackupDir = bk.Dir })
	r.emit(Event{Kind: EventBackup, Dir: bk.Dir})
	return prepared{scope: s, w: w, tally: realTally{content: w.content}, real: true, backup: bk}, nil
}

// snapshot discovers the API and reads what the namespace holds, the same
// way explain does (shared discovery, metadata sweep, webhooks, backends).
func (r *run) snapshot(ctx context.Context, ns *v1.Namespace) (diagnose.Observation, *kube.Discovery, error) {
	in := r.inspector()
	obs, err := in.Observe(ctx, ns, r.inspectOptions())
	if err != nil {
		return obs, nil, err
	}
	disc := in.Discovery()
	r.discoveries.seed(disc)
	// explain reads pods as metadata only; purge reads them as the
	// controller does (spec and status, never printed), so a plan knows
	// which pods a kubelet holds and which go at once.
	if in.Census().Skips(ns.Name, deletion.PodsGVR) {
		obs.Snapshot.PodSpecsUnknown = false
	} else if pods, err := (kube.PodLister{Client: r.Clients.Kube}).ListPods(ctx, ns.Name); err == nil {
		obs.Snapshot.Pods, obs.Snapshot.PodSpecsUnknown = pods, false
	}
	return obs, disc, nil
}

// discoverWithLeftovers is the first read of a force run that needs no
// snapshot: discovery, with the undoing of a killed run's bypasses at
// once (over a slow link each round trip counts; neither needs the other).
func (r *run) discoverWithLeftovers(ctx context.Context) (*kube.Discovery, error) {
	restored := make(chan error, 1)
	go func() { restored <- r.leftovers(ctx) }()
	disc, err := r.inspector().Discover(ctx)
	if err == nil {
		r.discoveries.seed(disc)
	} else {
		disc = nil
	}
	return disc, errors.Join(<-restored, err)
}

// leftovers undoes the bypasses of this namespace an earlier run left
// behind (it was killed before restoring), before anything else; a plan
// says it would.
func (r *run) leftovers(ctx context.Context) error {
	lists, errs := r.webhookConfigurations(ctx)
	for i, err := range errs {
		switch {
		case err == nil:
		case r.Opts.DryRun != DryRunNone:
			lists[i] = nil // a plan only notes them
		case apierrors.IsForbidden(err) && !r.Opts.Escalations.Has(diagnose.FlagBypassWebhook):
			lists[i] = nil // without the escalation, no run of this user could have left one
		default:
			return fmt.Errorf("looking for webhook configurations a killed run left bypassed: %w", err)
		}
	}
	for i, k := range webhookKinds {
		if lists[i] == nil {
			continue
		}
		for _, cfg := range lists[i].Items {
			if _, ok := cfg.GetAnnotations()[bypassAnnotation+r.ns()]; ok {
				if err := r.leftover(ctx, k.kind, &cfg); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// leftover restores one configuration a killed run left bypassed (a plan
// only says so). It runs before the run has a writer or a backup: it
// removes only what purge itself added.
func (r *run) leftover(ctx context.Context, kind string, cfg *unstructured.Unstructured) error {
	if r.Opts.DryRun != DryRunNone {
		r.l.warn(Warning{Kind: WarnBypassLeftover, Resource: kind, Name: cfg.GetName()})
		return nil
	}
	by := bypassRow(kind, cfg.GetName(), Bypass{Webhooks: webhookNames(cfg)})
	by.Status, by.Why = RowDone, BypassLeftover
	read := func(ctx context.Context, gvr schema.GroupVersionResource, _, name string) (*unstructured.Unstructured, error) {
		return r.Clients.Dynamic.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
	}
	send := func(ctx context.Context, wr Write) (Sent, error) {
		if err := (sender{clients: r.Clients}).send(ctx, wr); err != nil {
			return Sent{}, err
		}
		r.l.changed(*wr.Change)
		return Sent{ForReal: true}, nil
	}
	_, err := patchConfig(ctx, read, send, gvrOfKind(kind), by.Name, func(c *unstructured.Unstructured) error { return includeNamespace(c, r.ns()) },
		&Change{Kind: ChangeRestoredWebhook, Resource: kind, Name: by.Name})
	if err != nil && !apierrors.IsNotFound(err) {
		r.l.fail(Failure{Verb: "restore", Resource: kind, Name: by.Name, Error: err.Error()})
		return fmt.Errorf("restoring %s %s, left bypassed by an earlier run: %s", strings.ToLower(kind), by.Name, err)
	}
	r.l.warn(Warning{Kind: WarnBypassLeftover, Resource: kind, Name: by.Name, Restored: true})
	r.l.update(func(rep *Report) { rep.Rows = append(rep.Rows, by) })
	return nil
}
