package purge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// force purges for real: permissions checked up front, everything saved
// before it is changed, passes repeated the controller's way until the
// namespace is gone or the timeout expires.
func (p *Purger) force(ctx context.Context, r *Report, ns *v1.Namespace) error {
	disc, obs, err := p.snapshot(ctx, ns)
	if err != nil {
		return err
	}
	if r.MissingPermissions, err = p.missingPermissions(ctx, ns, disc, obs.Snapshot); err != nil {
		return err
	}
	if len(r.MissingPermissions) > 0 {
		r.Outcome, r.Message = OutcomeRefused, "permissions missing: nothing was changed"
		return ErrMissingPermissions
	}
	p.reported, p.rc, p.stripped = map[string]bool{}, newRecreations(), map[string][]string{}
	bk, err := p.openBackup(ns)
	if err != nil {
		return err
	}
	r.BackupDir = bk.Dir
	defer func() { r.BackedUp = bk.Count() }()
	if ns.DeletionTimestamp == nil {
		if err := p.Clients.Kube.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("deleting namespace %s: %w", ns.Name, err)
		}
		r.change("deleted namespace %s (it was Active)", ns.Name)
	}
	deadline := time.Now().Add(p.Opts.Timeout)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	return p.passes(ctx, r, bk, disc)
}

func (p *Purger) openBackup(ns *v1.Namespace) (*backup.Writer, error) {
	dir := p.Opts.BackupDir
	if dir == "" {
		var err error
		if dir, err = backup.DefaultDir(ns.Name, p.now()); err != nil {
			return nil, err
		}
	}
	bk, err := backup.New(dir)
	if err != nil {
		return nil, err
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ns)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion("v1")
	u.SetKind("Namespace")
	if err := bk.SaveNamespace(u); err != nil {
		return nil, err
	}
	p.progress("backup: %s", dir)
	return bk, nil
}

// passes repeats the deletion pass until the namespace is gone, waiting
// estimate/2+1 s between passes as the namespace controller requeues. An
// API server that is briefly away (restart, overload) is retried with
// backoff until the timeout; any other error stops the run cleanly.
func (p *Purger) passes(ctx context.Context, r *Report, bk *backup.Writer, disc *kube.Discovery) error {
	nsClient := p.Clients.Kube.CoreV1().Namespaces()
	backoff := time.Second
	for pass := 1; ; {
		wait, err := func() (time.Duration, error) {
			ns, err := nsClient.Get(ctx, r.Namespace, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				r.Outcome, r.Message = OutcomeGone, fmt.Sprintf("namespace %s is gone", r.Namespace)
				return 0, errGone
			}
			if err != nil {
				return 0, err
			}
			if pass > 1 {
				if disc, err = kube.Discover(p.Clients.Discovery); err != nil {
					return 0, err
				}
			}
			return p.onePass(ctx, r, bk, disc, ns, pass)
		}()
		var chasing *chasingError
		switch {
		case errors.Is(err, errGone):
			return nil
		case errors.As(err, &chasing):
			r.Outcome, r.Message = OutcomeRemaining, chasing.msg
			return nil
		case err != nil && cutShort(ctx) != nil:
			return p.stopped(r, ctx, cutShort(ctx))
		case err != nil && transient(err):
			p.progress("the API server is unavailable (%v); retrying in %s", err, backoff)
			r.Warnings = appendNew(r.Warnings, "the API server was unavailable for a while; purge retried")
			wait, backoff = backoff, min(2*backoff, 16*time.Second)
		case err != nil:
			return p.stopped(r, ctx, err)
		default:
			pass, backoff = pass+1, time.Second
		}
		select {
		case <-ctx.Done():
			return p.stopped(r, ctx, ctx.Err())
		case <-time.After(wait):
		}
	}
}

var errGone = errors.New("namespace gone")

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

// chasingError stops the passes: content keeps being created anew.
type chasingError struct{ msg string }

func (e *chasingError) Error() string { return e.msg }

// noteRecreated reports what came back in this pass and returns the types
// purge stops chasing.
func (p *Purger) noteRecreated(r *Report) []string {
	chased := p.rc.endPass()
	r.Recreated = p.rc.list()
	for _, o := range r.Recreated {
		r.Warnings = appendNew(r.Warnings, fmt.Sprintf("%s/%s was created anew while the namespace was terminating: a controller still creates it", o.Resource, o.Name))
	}
	return chased
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

// onePass runs a pass, then strips finalizers or finalizes; it returns how
// long to wait before the next pass.
func (p *Purger) onePass(ctx context.Context, r *Report, bk *backup.Writer, disc *kube.Discovery, ns *v1.Namespace, pass int) (time.Duration, error) {
	r.Passes = pass
	if ns.DeletionTimestamp != nil {
		p.rc.deletedAt = ns.DeletionTimestamp.Time
	}
	if deletion.Finalized(ns) {
		return time.Second, p.namespaceFinalizers(ctx, r, bk, ns)
	}
	real := &deletion.MetadataOps{Client: p.Clients.Metadata, Lister: func(ctx context.Context, gvr schemaGVR, namespace string) (*metav1.PartialObjectMetadataList, error) {
		return kube.ListMetadata(ctx, p.Clients.Metadata, gvr, namespace)
	}}
	counts := map[schemaGVR]int{}
	rec := newRecorder(&backupOps{inner: real, bk: bk, dyn: p.Clients, counts: counts, rc: p.rc}, func(gvr schemaGVR) int { return counts[gvr] }, false)
	result := p.contentDeleter(disc, rec, kube.PodLister{Client: p.Clients.Kube}).DeleteAllContent(ctx, ns)
	if err := cutShort(ctx); err != nil {
		// A pass cut short reports timeouts, not the namespace: keep the
		// last complete one.
		return 0, err
	}
	recordPass(r, rec, result)
	for _, st := range rec.steps {
		if st.Objects > 0 && !strings.HasPrefix(st.Result, "failed") && !p.reported[st.Resource] {
			p.reported[st.Resource] = true
			r.change("%s %s: %d objects, saved first", st.Verb, st.Resource, st.Objects)
		}
	}
	p.reportPass(r, rec, result, pass)
	chased := p.noteRecreated(r)
	if result.Err != nil {
		r.Errors = appendNew(r.Errors, result.Err.Error())
	}
	finalize, reason := p.finalizeDecision(result, disc)
	r.Finalize = Finalize{Would: finalize, Reason: reason}
	if finalize {
		return time.Second, p.finalize(ctx, r, bk, ns)
	}
	if len(chased) > 0 {
		return 0, &chasingError{msg: recreatedMessage(ns.Name, chased, r.Recreated)}
	}
	if p.strips() && len(result.Totals.GVRToNumRemaining) > 0 {
		if n := p.stripRemaining(ctx, r, bk, result, ns.Name); n > 0 {
			return time.Second, nil
		}
	}
	return time.Duration(result.Estimate/2+1) * time.Second, nil
}

func (p *Purger) reportPass(r *Report, rec *recorder, result deletion.Result, pass int) {
	var parts []string
	for _, rem := range r.Remaining {
		parts = append(parts, fmt.Sprintf("%s=%d", rem.Resource, rem.Count))
	}
	if len(parts) == 0 {
		p.progress("pass %d: no content remains", pass)
		return
	}
	p.progress("pass %d: remaining %s (estimate %ds)", pass, strings.Join(parts, ", "), result.Estimate)
}

// finalize removes "kubernetes" (and with the escalation every other token)
// through the finalize subresource, retried on conflict, never across a
// namespace re-created under the same name.
func (p *Purger) finalize(ctx context.Context, r *Report, bk *backup.Writer, ns *v1.Namespace) error {
	drop := dropTokens(ns, p.Opts.RemoveNamespaceFinalizers)
	if len(tokenNames(drop, ns)) == 0 {
		// Only other systems' tokens are left: finalizing again changes
		// nothing, and waiting would only run out the clock.
		return fmt.Errorf("spec.finalizers holds %v, which only their owner removes: re-run with --remove-namespace-finalizers if it is gone", ns.Spec.Finalizers)
	}
	nsClient := p.Clients.Kube.CoreV1().Namespaces()
	if _, err := deletion.RetryOnConflict(ctx, nsClient, ns, deletion.FinalizeFunc(nsClient, drop, false)); err != nil {
		return fmt.Errorf("finalizing namespace %s: %w", ns.Name, err)
	}
	r.Finalize.Done, r.Finalize.Remove = true, tokenNames(drop, ns)
	r.change("finalized namespace %s (removed spec.finalizers %v)", ns.Name, r.Finalize.Remove)
	if kept := deletion.KeptFinalizers(ns, drop); len(kept) > 0 {
		r.Warnings = appendNew(r.Warnings, fmt.Sprintf("spec.finalizers still holds %v: their owner must remove them, or use --remove-namespace-finalizers", kept))
	}
	return nil
}

// namespaceFinalizers handles a finalized namespace that still exists: other
// systems' tokens or metadata.finalizers hold it.
func (p *Purger) namespaceFinalizers(ctx context.Context, r *Report, bk *backup.Writer, ns *v1.Namespace) error {
	if len(ns.Finalizers) == 0 {
		return nil // the API server is about to delete it
	}
	if !p.Opts.RemoveNamespaceFinalizers {
		return fmt.Errorf("namespace metadata.finalizers holds %v: their owner must remove them, or use --remove-namespace-finalizers", ns.Finalizers)
	}
	patch := fmt.Sprintf(`{"metadata":{"resourceVersion":%q,"finalizers":null}}`, ns.ResourceVersion)
	if _, err := p.Clients.Kube.CoreV1().Namespaces().Patch(ctx, ns.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("removing metadata.finalizers of namespace %s: %w", ns.Name, err)
	}
	r.change("removed metadata.finalizers %v of namespace %s", ns.Finalizers, ns.Name)
	return nil
}

// stopped ends a force run early, keeping the report of what was done.
func (p *Purger) stopped(r *Report, ctx context.Context, err error) error {
	r.Outcome = OutcomeRemaining
	if errors.Is(ctx.Err(), context.Canceled) {
		r.Message = fmt.Sprintf("interrupted; everything changed so far is listed below and saved in the backup; re-run purge to continue")
		return nil
	}
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		r.Message = fmt.Sprintf("namespace %s still exists after --timeout=%s; re-run purge to continue where it stopped", r.Namespace, p.Opts.Timeout)
		return nil
	}
	r.Message = fmt.Sprintf("stopped: %v; re-run purge to continue where it stopped", err)
	return err
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
