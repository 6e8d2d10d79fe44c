package purge

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ns-doctor/ns-doctor/internal/apierror"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/inspect"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// afterEscalation is the wait before the pass after escalations acted.
const afterEscalation = 100 * time.Millisecond

// maxPlanPasses bounds a plan: each escalation that acts needs one more
// pass, and a pass that changes nothing ends the plan.
const maxPlanPasses = 8

// passLoop is a run's passes: the escalations that act once before the
// first, then the controller's Delete and the escalations that act on what
// it left, until the namespace goes or the run stops. It receives what
// preflight prepared (the writer among it) and owns what one pass hands
// the next; what it needs of the run is named here.
type passLoop struct {
	ns   string
	opts *Options
	// clients read a pod's node for the escalations and prove unreadable
	// objects; every other request goes through the writer.
	clients *kube.Clients
	l       *ledger
	// report is the ledger's; read it only where no escalation writes.
	report  *Report
	actions []action
	rc      *recreations
	insp    *inspect.Inspector
	now     func() time.Time
	started time.Time
	emit    func(Event)
	// pre is preflight's result: the scope, the writer, its tally, the
	// mode, the backup.
	pre prepared
	// disc is the discovery of this pass; lastNS the namespace as the last
	// pass read it.
	disc   *kube.Discovery
	lastNS *v1.Namespace
	// discoveries is the discovery the runs of RunMany share (nil alone).
	discoveries *discoveryCache
	// revived: a former namespace was re-created (and deleted again) so
	// its leftovers' finalizers could be removed.
	revived bool
	// deleter is upstream's, built once per run; rec records each
	// pass's requests through it.
	deleter *deletion.NamespacedResourcesDeleter
	rec     *recorder
	// reported remembers the resources whose deletion is already listed
	// among the changes: later passes re-send the same request.
	reported map[string]bool
	// acted counts the escalations' changes so far.
	acted int
	// lastState is what the pass before left (what remains, what was
	// refused), to tell a pass that changed nothing; lastContent what its
	// content pass found.
	lastState   string
	lastContent *deletion.ContentResult
}

// passes repeats Delete until the namespace is gone, the escalations
// between passes, waiting estimate/2+1 s between passes as the namespace
// controller requeues (a plan does not wait: it ends when a pass changes
// nothing). An API server that is briefly away (restart, overload) is
// retried with backoff until the timeout; any other error stops the run
// cleanly.
func (r *passLoop) passes(ctx context.Context) error {
	backoff := retryBackoff()
	for pass := 1; ; {
		var awaited []schema.GroupVersionResource
		wait, acted, err := r.onePass(ctx, pass)
		var stop *stopError
		switch {
		case errors.Is(err, errGone):
			r.l.end(OutcomePlanned, nil)
			if r.pre.real {
				r.l.end(OutcomeGone, nil)
			}
			return nil
		case !r.pre.real:
			r.l.end(OutcomePlanned, nil)
			if err != nil || acted == 0 || pass == maxPlanPasses {
				return nil
			}
			pass++
			continue
		case errors.As(err, &stop):
			r.l.end(OutcomeRemaining, stop.stop)
			return nil
		case err != nil && cutShort(ctx) != nil:
			return r.stopped(ctx, cutShort(ctx))
		case err != nil && transient(err):
			wait = backoff.Step()
			r.l.warn(Warning{Kind: WarnServerRetried})
			r.emit(Event{Kind: EventRetrying, Err: err.Error(), Until: time.Now().Add(wait), For: WaitAPIServer})
		case err != nil:
			return r.stopped(ctx, err)
		case r.stalled(acted):
			// The same refusals, nothing changed: only an outside action
			// clears them, and waiting until --timeout would not help.
			r.l.end(OutcomeRemaining, &Stop{Reason: StopBlocked, After: time.Since(r.started).Round(time.Second).String()})
			return nil
		default:
			pass, backoff = pass+1, retryBackoff()
			r.emit(Event{Kind: EventWaiting, Until: time.Now().Add(wait), For: r.waitingFor(), Remaining: r.report.Remaining})
			if acted == 0 {
				// After escalations acted the wait is short and the next
				// pass's own list sees what they left: watching for it
				// would cost one more list per type.
				awaited = r.awaited()
			}
		}
		if err := r.sleep(ctx, wait, awaited); err != nil {
			return r.stopped(ctx, err)
		}
	}
}

// awaited are the types whose content the wait before the next pass is
// for: the pods while they go first, else what the pass left still going
// (held by finalizers, or ending gracefully); none when the pass failed to
// delete something (the next pass retries it).
func (r *passLoop) awaited() []schema.GroupVersionResource {
	switch r.waitingFor() {
	case WaitPods:
		return []schema.GroupVersionResource{deletion.PodsGVR}
	case WaitFinalizers:
		if r.lastContent == nil {
			return nil
		}
		out := make([]schema.GroupVersionResource, 0, len(r.lastContent.Totals.GVRToNumRemaining))
		for gvr := range r.lastContent.Totals.GVRToNumRemaining {
			out = append(out, gvr)
		}
		return out
	}
	return nil
}

// sleep waits before the next pass: wait, or until the content it is for
// is gone (contentGone, watched for this wait only), or until ctx ends.
func (r *passLoop) sleep(ctx context.Context, wait time.Duration, awaited []schema.GroupVersionResource) error {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var wake <-chan struct{}
	if len(awaited) > 0 {
		watchCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		wake = contentGone(watchCtx, r.clients, r.ns, awaited)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
	case <-wake:
	}
	return nil
}

// retryBackoff is the wait before retrying an API server that is away:
// 1 s, doubling up to 16 s.
func retryBackoff() *wait.Backoff {
	return &wait.Backoff{Duration: time.Second, Factor: 2, Cap: 16 * time.Second, Steps: math.MaxInt32}
}

// stopError ends the passes with the namespace still there, for a reason
// that is not an error of the run (content kept coming back, a hold only
// an outside action clears).
type stopError struct{ stop *Stop }

// blocked ends a run held by what only an outside action (or an
// escalation it lacks) clears: waiting would not help.
func blocked(started time.Time) error {
	return &stopError{stop: &Stop{Reason: StopBlocked, After: time.Since(started).Round(time.Second).String()}}
}

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
// overloaded, or the connection broke (apierror says which).
func transient(err error) bool {
	return apierror.Classify(err).Transient()
}

// onePass discovers the API afresh (the first pass reuses the snapshot's;
// a plan plays over that one discovery), runs Delete, then the
// escalations; it returns how long to wait before the next pass and how
// many changes the escalations made.
func (r *passLoop) onePass(ctx context.Context, pass int) (time.Duration, int, error) {
	disc, err := r.pre.w.discovery(pass)
	if err != nil {
		return 0, 0, err
	}
	r.disc = disc
	r.deleter.Deletable = r.discoveries.deletable(disc)
	r.pre.tally.startPass()
	r.rec.startPass(pass)
	r.l.startPass()
	r.emit(Event{Kind: EventPass, Pass: pass, Types: len(r.disc.DeletableResources())})
	res, err := r.deleter.Delete(ctx, r.ns)
	if res.Stage == deletion.StageGone && err == nil {
		return 0, 0, errGone
	}
	if res.Namespace != nil && res.Namespace.DeletionTimestamp != nil {
		r.rc.setDeletedAt(res.Namespace.DeletionTimestamp.Time)
	}
	if res.Namespace != nil {
		r.lastNS = res.Namespace
	}
	if res.Content != nil {
		r.lastContent = res.Content
	}
	if cut := cutShort(ctx); cut != nil {
		// A pass cut short reports timeouts, not the namespace: keep the
		// last complete one.
		return 0, 0, cut
	}
	if res.Content == nil && err != nil {
		return 0, 0, err // the namespace could not even be read
	}
	r.l.update(func(rep *Report) { rep.Passes = pass })
	r.recordPass(ctx, res, pass)
	// What the pass left, before the escalations act on it: their
	// refusals show in the next pass's line, and in the report.
	r.emit(Event{Kind: EventPassEnded, Pass: pass, Remaining: r.report.Remaining, Failures: r.l.thisPass(), Estimate: estimateOf(res),
		Deleted: deleted(r.rec.Steps(), r.report.Remaining)})
	return r.afterPass(ctx, res, err)
}

// recordPass fills the report from one pass: its requests (every pass of
// a plan, the last one of a force run), the deletions among the changes,
// what remains, what was refused.
func (r *passLoop) recordPass(ctx context.Context, res deletion.Result, pass int) {
	steps := r.rec.Steps()
	r.l.update(func(rep *Report) {
		if r.pre.real {
			rep.Steps = steps
		} else {
			rep.Steps = append(rep.Steps, steps...)
		}
	})
	for _, f := range r.rec.failures() {
		r.l.fail(f)
	}
	for _, st := range steps {
		if st.Status == StepSent && st.Objects > 0 {
			if !r.reported[st.Resource] {
				r.reported[st.Resource] = true
				r.l.changed(Change{Kind: ChangeDeletedContent, Verb: st.Verb, Resource: st.Resource, Objects: st.Objects})
			}
		}
	}
	r.recordContent(res.Content, pass == 1)
	c := res.Content
	if c == nil {
		return
	}
	for _, gvr := range c.Failed {
		if !r.rec.failed(gvr) {
			r.l.fail(Failure{Verb: "pass", Resource: deletion.ResourceName(gvr), Error: c.FailedErrs[gvr].Error()})
		}
	}
	if pass == 1 {
		prover{clients: r.clients, ns: r.ns, opts: r.opts, l: r.l}.prove(ctx, c)
	}
	if c.Err != nil && r.disc != nil && len(r.disc.Failed) > 0 {
		obs := r.insp.ObservationOf(ctx, r.namespaceSeen(), &deletion.Snapshot{}, r.disc, r.opts.inspectOptions())
		for gv, err := range r.disc.Failed {
			r.l.fail(Failure{Verb: "discover", Resource: gv.String(), Error: err.Error(), Refusal: diagnose.DiscoveryRefusal(obs, gv, err)})
		}
	}
}

// deleted is how many objects a pass's requests removed: what they
// reached, less what is still there (held by finalizers, terminating).
func deleted(steps []Step, remaining []Remaining) int {
	n := 0
	left := map[string]int{}
	for _, rem := range remaining {
		left[rem.Resource] = rem.Count
	}
	for _, st := range steps {
		if st.Status == StepSent || st.Status == StepPlanned {
			n += st.Objects
		}
	}
	for _, st := range steps {
		if (st.Status == StepSent || st.Status == StepPlanned) && st.Objects > 0 {
			n -= min(left[st.Resource], st.Objects)
			left[st.Resource] = 0
		}
	}
	return max(n, 0)
}

// stalled tells whether this pass ended as the one before (the same
// content left, the same refusals, no escalation acting), refused only in
// ways that an outside action alone clears.
func (r *passLoop) stalled(acted int) bool {
	state := r.passState()
	same := state == r.lastState
	r.lastState = state
	failures := r.l.passFailures()
	if !same || acted > 0 || len(failures) == 0 {
		return false
	}
	for _, f := range failures {
		if f.Refusal == nil || !f.Refusal.Outside {
			return false
		}
	}
	return true
}

// passState is what a pass left, in a word: what remains and what was
// refused.
func (r *passLoop) passState() string {
	var parts []string
	for _, rem := range r.report.Remaining {
		parts = append(parts, fmt.Sprintf("%s=%d%v", rem.Resource, rem.Count, rem.Finalizers))
	}
	for _, f := range r.l.passFailures() {
		parts = append(parts, f.Verb+" "+f.Resource+"/"+f.Name+": "+f.Error)
	}
	sort.Strings(parts)
	return string(r.report.Finalize.Cause) + "|" + strings.Join(parts, "|")
}

func estimateOf(res deletion.Result) int64 {
	if res.Content == nil {
		return 0
	}
	return res.Content.Estimate
}

// afterPass acts on where Delete ended: the namespace's own finalizers, a
// finalize with other systems' tokens left, or content that remains, which
// the escalations act on.
func (r *passLoop) afterPass(ctx context.Context, res deletion.Result, err error) (time.Duration, int, error) {
	var chased []string
	if res.Content != nil {
		chased = r.noteRecreated()
	}
	switch res.Stage {
	case deletion.StageAlreadyFinalized:
		acted, err := r.namespaceFinalizers(ctx, res.Namespace)
		return time.Second, acted, err
	case deletion.StageNotDeleting:
		return 0, 0, stopIfPlan(r, fmt.Errorf("namespace %s is not being deleted (it was re-created?)", r.ns))
	case deletion.StageFinalized:
		if err != nil {
			r.l.update(func(rep *Report) { rep.Finalize = Finalize{Cause: FinalizeRejected, Error: err.Error()} })
			r.l.fail(Failure{Verb: "finalize", Resource: "namespaces", Name: r.ns, Error: err.Error()})
			return 0, 0, stopIfPlan(r, fmt.Errorf("finalizing namespace %s: %w", r.ns, err))
		}
		if kept := r.finalized(res).Kept; len(kept) > 0 {
			// Only their owners remove the tokens other systems set.
			r.l.update(func(rep *Report) { rep.Finalize.Cause = FinalizeOtherTokens })
			r.l.warn(Warning{Kind: WarnTokensKept, Finalizers: kept})
			return 0, 0, stopIfPlan(r, blocked(r.started))
		}
		// The finalize call changed the namespace: the next pass sees what
		// still holds it (its own metadata.finalizers).
		return 0, 1, r.goneAfterFinalize(ctx, res)
	}
	r.l.update(func(rep *Report) { notFinalized(&rep.Finalize, res, err) })
	if len(chased) > 0 {
		return 0, 0, &stopError{stop: r.rc.stop(chased)}
	}
	acted := 0
	if r.needsRevival(res.Content) {
		if err := r.revive(ctx); err != nil {
			return 0, 0, err
		}
	}
	for _, a := range r.actions {
		if after, ok := a.(afterPass); ok {
			acted += after.afterPass(ctx, r.actor(), res.Content)
		}
	}
	r.acted += acted
	if acted > 0 {
		// What the escalations changed is done when their requests
		// return (an object stripped of its last finalizer, a pod deleted
		// with grace 0, is gone then): the next pass need not wait long.
		return afterEscalation, acted, nil
	}
	return time.Duration(res.Content.Estimate/2+1) * time.Second, 0, nil
}

// goneAfterFinalize tells whether a namespace finalized with both
// finalizer lists empty is gone (the API server deletes it in the finalize
// request itself, instead of a whole pass with its discovery): the
// finalize answer says so when it is the API server's (ShouldDeleteDuringUpdate:
// terminating, no finalizers, no grace left); else one GET confirms.
func (r *passLoop) goneAfterFinalize(ctx context.Context, res deletion.Result) error {
	ns := res.Namespace
	if ns == nil || len(ns.Spec.Finalizers) > 0 || len(ns.Finalizers) > 0 {
		return nil
	}
	if r.pre.real && deletedByFinalize(ns) {
		return errGone
	}
	if _, err := r.deleter.NsClient.Get(ctx, r.ns, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return errGone
	}
	return nil
}

// deletedByFinalize tells whether the API server's answer to a finalize
// is the namespace it deleted in that request: terminating, both finalizer
// lists empty, and no grace period left (what the registry checks before
// deleting during an update). An answer without a UID is not the server's
// (a former namespace's, played in memory).
func deletedByFinalize(ns *v1.Namespace) bool {
	grace := ns.DeletionGracePeriodSeconds
	return ns.UID != "" && ns.DeletionTimestamp != nil && len(ns.Spec.Finalizers) == 0 && len(ns.Finalizers) == 0 &&
		(grace == nil || *grace == 0)
}

// noteRecreated reports what came back in this pass and returns the types
// purge stops chasing.
func (r *passLoop) noteRecreated() []string {
	chased := r.rc.endPass()
	recreated := r.rc.list()
	r.l.update(func(rep *Report) { rep.Recreated = recreated })
	for _, o := range recreated {
		r.l.warn(Warning{Kind: WarnRecreated, Resource: o.Resource, Name: o.Name})
	}
	return chased
}

// stopped ends a force run early, keeping the report of what was done.
func (r *passLoop) stopped(ctx context.Context, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		r.l.end(OutcomeRemaining, &Stop{Reason: StopInterrupted})
		return nil
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		r.l.end(OutcomeRemaining, &Stop{Reason: StopTimeout, Timeout: r.opts.Timeout.String()})
		return nil
	}
	r.l.end(OutcomeRemaining, &Stop{Reason: StopError, Error: err.Error()})
	return err
}

// waitingFor names what the last pass left waiting.
func (r *passLoop) waitingFor() WaitReason {
	switch {
	case r.report.Finalize.PodsFirst:
		return WaitPods
	case r.report.Finalize.Cause == FinalizeContentRemains:
		return WaitFinalizers
	case r.report.Finalize.Cause == FinalizeDeletionErrors:
		return WaitRetry
	}
	return WaitNextPass
}
