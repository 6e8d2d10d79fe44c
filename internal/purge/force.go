package purge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// force purges for real: permissions checked up front, everything saved
// before it is changed, the controller's Delete repeated the way its work
// queue repeats it until the namespace is gone or the timeout expires.
func (r *run) force(ctx context.Context, ns *v1.Namespace) error {
	missing, err := r.preflight(ctx, ns)
	if err != nil {
		return err
	}
	if r.report.MissingPermissions = missing; len(missing) > 0 {
		r.report.Outcome = OutcomeRefused
		return ErrMissingPermissions
	}
	r.reported, r.rc, r.stripped = map[string]bool{}, newRecreations(), map[string][]string{}
	if r.bk, err = r.openBackup(ns); err != nil {
		return err
	}
	r.report.BackupDir = r.bk.Dir
	defer func() { r.report.BackedUp = r.bk.Count() }()
	restore, err := r.applyBypass(ctx)
	if err != nil {
		return err
	}
	defer restore()
	if ns.DeletionTimestamp == nil {
		if err := r.Clients.Kube.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("deleting namespace %s: %w", ns.Name, err)
		}
		r.change("deleted namespace %s (it was Active)", ns.Name)
	}
	ctx, cancel := context.WithDeadline(ctx, time.Now().Add(r.Opts.Timeout))
	defer cancel()
	// Each pass sets the operations and the pod lister: both save first.
	r.deleter = r.newDeleter(r.namespaceClient(ns), nil, nil)
	return r.passes(ctx)
}

// preflight is everything before the first change: it undoes what a run
// killed while it bypassed a webhook left behind, reads what the first
// pass needs, and returns the permissions the user lacks. Without
// escalations that read the snapshot, the undoing and the reads go at
// once (over a slow link each round trip counts): the permission check
// changes nothing. The snapshot reads the webhooks, so it waits for them
// to be restored.
func (r *run) preflight(ctx context.Context, ns *v1.Namespace) ([]string, error) {
	if r.needsSnapshot() {
		if err := r.restoreLeftovers(ctx); err != nil {
			return nil, err
		}
		obs, err := r.snapshot(ctx, ns)
		if err != nil {
			return nil, err
		}
		if err := r.resolveBypass(ctx, obs); err != nil {
			return nil, err
		}
		return r.missingPermissions(ctx, ns, r.disc, obs.Snapshot)
	}
	restored := make(chan error, 1)
	go func() { restored <- r.restoreLeftovers(ctx) }()
	var missing []string
	err := r.discoverOnly(ctx)
	if err == nil {
		missing, err = r.missingPermissions(ctx, ns, r.disc, &deletion.Snapshot{})
	}
	return missing, cmp.Or(<-restored, err)
}

func (r *run) openBackup(ns *v1.Namespace) (*backup.Writer, error) {
	dir := r.Opts.BackupDir
	if dir == "" {
		var err error
		if dir, err = backup.DefaultDir(ns.Name, r.now()); err != nil {
			return nil, err
		}
	}
	bk, err := backup.New(dir)
	if err != nil {
		return nil, err
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(savedNamespace(ns, r.Opts.Orphans))
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion("v1")
	u.SetKind("Namespace")
	if err := bk.SaveNamespace(u); err != nil {
		return nil, err
	}
	r.progress("backup: %s", dir)
	return bk, nil
}

// passes repeats Delete until the namespace is gone, waiting estimate/2+1 s
// between passes as the namespace controller requeues. An API server that
// is briefly away (restart, overload) is retried with backoff until the
// timeout; any other error stops the run cleanly.
func (r *run) passes(ctx context.Context) error {
	backoff := time.Second
	defer r.observe(func(p *Progress) { p.Done, p.Until, p.For = true, time.Time{}, "" })
	for pass := 1; ; {
		wait, err := r.onePass(ctx, pass)
		var stop *stopError
		switch {
		case errors.Is(err, errGone):
			r.report.Outcome = OutcomeGone
			return nil
		case errors.As(err, &stop):
			r.report.Outcome, r.report.Stop = OutcomeRemaining, stop.stop
			return nil
		case err != nil && cutShort(ctx) != nil:
			return r.stopped(ctx, cutShort(ctx))
		case err != nil && transient(err):
			r.progress("the API server is unavailable (%v); retrying in %s", err, backoff)
			r.report.Warnings = appendNew(r.report.Warnings, "the API server was unavailable for a while; purge retried")
			wait, backoff = backoff, min(2*backoff, 16*time.Second)
			r.waiting(wait, "the API server")
		case err != nil:
			return r.stopped(ctx, err)
		default:
			pass, backoff = pass+1, time.Second
			r.waiting(wait, r.waitingFor())
		}
		select {
		case <-ctx.Done():
			return r.stopped(ctx, ctx.Err())
		case <-time.After(wait):
		}
	}
}

var errGone = errors.New("namespace gone")

// stopError ends the passes with the namespace still there, for a reason
// that is not an error of the run (content kept coming back).
type stopError struct{ stop *Stop }

func (e *stopError) Error() string { return string(e.stop.Reason) }

// cutShort tells whether the run's deadline has passed, even before the
// context's timer says so: near the deadline, client-go's rate limiter
// already refuses requests ("would exceed context deadline"), and such a
// pass says nothing about the namespace.
func cutShort(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if deadline, ok := ctx.Deadline(); ok && !time.Now().Before(deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// transient tells errors worth retrying: the server is restarting,
// overloaded, or the connection broke.
func transient(err error) bool {
	if apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsTimeout(err) || apierrors.IsInternalError(err) {
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF)
}

// onePass discovers the API afresh (the first pass reuses the snapshot's),
// runs Delete, then the escalations; it returns how long to wait before
// the next pass.
func (r *run) onePass(ctx context.Context, pass int) (time.Duration, error) {
	if pass > 1 {
		disc, err := r.rediscover()
		if err != nil {
			return 0, err
		}
		r.disc = disc
	}
	counts := newCounts()
	// Not held back by client-go's rate limit once the server showed it
	// runs priority and fairness: several namespaces at once would share
	// one bucket and wait on it, not on the server.
	real := kube.NewMetadataOps(r.Clients, false)
	saving := &backupOps{inner: real, bk: r.bk, dyn: r.Clients, counts: counts, rc: r.rc}
	rec := newRecorder(saving, counts.get, true, StepSent, 0)
	rec.skipped = func(gvr schemaGVR) bool { return counts.state(gvr) == skipped }
	rec.onStep = r.stepDone
	r.observe(func(p *Progress) {
		p.Pass, p.Types, p.TypesDone, p.Until, p.For = pass, len(r.disc.DeletableResources()), 0, time.Time{}, ""
	})
	r.deleter.Ops, r.deleter.Pods = rec, saving
	res, err := r.deleter.Delete(ctx, r.Opts.Namespace)
	if res.Stage == deletion.StageGone && err == nil {
		return 0, errGone
	}
	if res.Namespace != nil && res.Namespace.DeletionTimestamp != nil {
		r.rc.setDeletedAt(res.Namespace.DeletionTimestamp.Time)
	}
	if cut := cutShort(ctx); cut != nil {
		// A pass cut short reports timeouts, not the namespace: keep the
		// last complete one.
		return 0, cut
	}
	if res.Content == nil && err != nil {
		return 0, err // the namespace could not even be read
	}
	r.report.Passes = pass
	r.recordForcePass(rec, res, pass)
	return r.afterPass(ctx, res, err)
}

// afterPass acts on where Delete ended: the namespace's own finalizers, a
// finalize with other systems' tokens left, or content that remains.
func (r *run) afterPass(ctx context.Context, res deletion.Result, err error) (time.Duration, error) {
	rep := r.report
	var chased []string
	if res.Content != nil {
		chased = r.noteRecreated()
	}
	switch res.Stage {
	case deletion.StageAlreadyFinalized:
		return time.Second, r.namespaceFinalizers(ctx, res.Namespace)
	case deletion.StageNotDeleting:
		return 0, fmt.Errorf("namespace %s is not being deleted (it was re-created?)", r.Opts.Namespace)
	case deletion.StageFinalized:
		if err != nil {
			rep.Finalize = Finalize{Cause: FinalizeRejected, Error: err.Error()}
			return 0, fmt.Errorf("finalizing namespace %s: %w", r.Opts.Namespace, err)
		}
		// Finalized with nothing else holding it, it is gone at once: look
		// again without waiting.
		if err := r.finalizedNow(res); err != nil {
			return 0, err
		}
		return 0, r.goneAfterFinalize(ctx, res)
	}
	if res.Content.Err != nil {
		rep.Errors = appendNew(rep.Errors, res.Content.Err.Error())
	}
	notFinalized(&rep.Finalize, res, err)
	if len(chased) > 0 {
		return 0, &stopError{stop: r.rc.stop(chased)}
	}
	if r.needsRevival(res.Content) {
		return 0, r.revive(ctx)
	}
	acted := 0
	if r.Opts.Escalations.strips() && len(stripCandidates(res.Content)) > 0 {
		acted += r.stripRemaining(ctx, res.Content)
	}
	if r.Opts.Escalations.ForceDeletePods && res.Content.Totals.GVRToNumRemaining[deletion.PodsGVR] > 0 {
		acted += r.forceDeletePods(ctx)
	}
	if acted > 0 {
		return time.Second, nil
	}
	return time.Duration(res.Content.Estimate/2+1) * time.Second, nil
}

// recordForcePass fills the report from one pass, and the progress line.
func (r *run) recordForcePass(rec *recorder, res deletion.Result, pass int) {
	rep := r.report
	rep.Steps = rec.Steps()
	for _, st := range rep.Steps {
		if st.Objects > 0 && st.Status == StepSent && !r.reported[st.Resource] {
			r.reported[st.Resource] = true
			r.change("%s %s: %d objects, saved first", st.Verb, st.Resource, st.Objects)
		}
	}
	r.recordContent(rec, res.Content)
	var parts []string
	for _, rem := range rep.Remaining {
		parts = append(parts, fmt.Sprintf("%s=%d", rem.Resource, rem.Count))
	}
	switch {
	case res.Content == nil:
	case len(parts) == 0:
		r.progress("pass %d: no content remains", pass)
	default:
		r.progress("pass %d: remaining %s (estimate %ds)", pass, strings.Join(parts, ", "), res.Content.Estimate)
	}
}

// finalizedNow reports a finalize call; tokens other systems own may be
// left, which only their owner (or --remove-namespace-finalizers) removes.
func (r *run) finalizedNow(res deletion.Result) error {
	rep := r.report
	finalized(&rep.Finalize, res, 1)
	rep.Finalize.Done = true
	switch {
	case r.Opts.Orphans:
		r.change("no leftovers of former namespace %s remain", r.Opts.Namespace)
	case len(rep.Finalize.Remove) > 0:
		r.change("finalized namespace %s (removed spec.finalizers %v)", r.Opts.Namespace, rep.Finalize.Remove)
	}
	if len(rep.Finalize.Kept) > 0 {
		rep.Finalize.Cause = FinalizeOtherTokens
		return fmt.Errorf("spec.finalizers holds %v, which only their owner removes: re-run with --remove-namespace-finalizers if it is gone", rep.Finalize.Kept)
	}
	return nil
}

// goneAfterFinalize confirms with one GET that a namespace finalized with
// both finalizer lists empty is gone (the API server deletes it in the
// finalize request itself), instead of a whole pass with its discovery.
func (r *run) goneAfterFinalize(ctx context.Context, res deletion.Result) error {
	ns := res.Namespace
	if ns == nil || len(ns.Spec.Finalizers) > 0 || len(ns.Finalizers) > 0 {
		return nil
	}
	if _, err := r.deleter.NsClient.Get(ctx, r.Opts.Namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return errGone
	}
	return nil
}

// namespaceFinalizers handles a finalized namespace that still exists: its
// own metadata.finalizers hold it.
func (r *run) namespaceFinalizers(ctx context.Context, ns *v1.Namespace) error {
	if len(ns.Finalizers) == 0 {
		return nil // the API server is about to delete it
	}
	if !r.Opts.Escalations.RemoveNamespaceFinalizers {
		r.report.Finalize.Cause, r.report.Finalize.Kept = FinalizeNamespaceHeld, ns.Finalizers
		return fmt.Errorf("namespace metadata.finalizers holds %v: their owner must remove them, or use --remove-namespace-finalizers", ns.Finalizers)
	}
	if err := r.patchNamespaceFinalizers(ctx, ns, false); err != nil {
		return fmt.Errorf("removing metadata.finalizers of namespace %s: %w", ns.Name, err)
	}
	r.change("removed metadata.finalizers %v of namespace %s", ns.Finalizers, ns.Name)
	return nil
}

// noteRecreated reports what came back in this pass and returns the types
// purge stops chasing.
func (r *run) noteRecreated() []string {
	chased := r.rc.endPass()
	r.report.Recreated = r.rc.list()
	for _, o := range r.report.Recreated {
		r.report.Warnings = appendNew(r.report.Warnings, fmt.Sprintf("%s/%s was created anew while the namespace was terminating: a controller still creates it", o.Resource, o.Name))
	}
	return chased
}

// stopped ends a force run early, keeping the report of what was done.
func (r *run) stopped(ctx context.Context, err error) error {
	rep := r.report
	rep.Outcome = OutcomeRemaining
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		rep.Stop = &Stop{Reason: StopInterrupted}
		return nil
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		rep.Stop = &Stop{Reason: StopTimeout, Timeout: r.Opts.Timeout.String()}
		return nil
	}
	rep.Stop = &Stop{Reason: StopError, Error: err.Error()}
	return err
}

func (r *run) change(format string, args ...any) {
	r.report.Changes = append(r.report.Changes, fmt.Sprintf(format, args...))
}

// observe changes the run's progress and tells the observer.
func (r *run) observe(change func(*Progress)) {
	if r.Opts.Observer == nil {
		return
	}
	r.progressMu.Lock()
	r.live.Namespace = r.Opts.Namespace
	change(&r.live)
	p := r.live
	p.Remaining = slices.Clone(p.Remaining)
	r.progressMu.Unlock()
	r.Opts.Observer(p)
}

// stepDone counts a pass's request: one more type done, and the objects
// it deleted.
func (r *run) stepDone(s Step) {
	r.observe(func(p *Progress) {
		if s.Verb == "deletecollection" {
			p.TypesDone++
		}
		if s.Status == StepSent {
			p.Deleted += s.Objects
		}
	})
}

// waiting tells what the run waits for before its next pass, and until
// when.
func (r *run) waiting(d time.Duration, what string) {
	r.observe(func(p *Progress) {
		p.Until, p.For = time.Now().Add(d), what
		p.Remaining = slices.Clone(r.report.Remaining)
		slices.SortStableFunc(p.Remaining, func(a, b Remaining) int { return b.Count - a.Count })
	})
}

// waitingFor names what the last pass left waiting.
func (r *run) waitingFor() string {
	switch {
	case r.report.Finalize.PodsFirst:
		return "pods to terminate"
	case r.report.Finalize.Cause == FinalizeContentRemains:
		return "finalizers"
	case r.report.Finalize.Cause == FinalizeDeletionErrors:
		return "a retry of failed deletions"
	}
	return "the next pass"
}

// rediscover is a later pass's discovery: afresh, as the controller does,
// or shared with the other namespaces purged together.
func (r *run) rediscover() (*kube.Discovery, error) {
	if r.discoveries != nil {
		return r.discoveries.get(r.Clients)
	}
	return kube.Discover(r.Clients.Discovery)
}
