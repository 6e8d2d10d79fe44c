package purge

import (
	"context"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/compat"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
)

// formerNamespace stands for a namespace that is gone, so the controller's
// pass runs over what it left in storage (a finalize forced by hand): it
// is terminating since now, holds the kubernetes token, and carries the
// label the API server puts on every namespace, which webhooks select on.
// The API server still serves its content: only creation needs the
// namespace to exist.
func formerNamespace(name string, now time.Time) *v1.Namespace {
	at := metav1.NewTime(now)
	return &v1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelMetadataName: name}, DeletionTimestamp: &at},
		Spec:       v1.NamespaceSpec{Finalizers: []v1.FinalizerName{v1.FinalizerKubernetes}},
	}
}

// savedNamespace is the namespace.yaml of the backup: as it was, or for a
// former namespace a plain one, so re-applying the folder creates it
// before its content.
func savedNamespace(ns *v1.Namespace, former bool) *v1.Namespace {
	if !former {
		return ns
	}
	return &v1.Namespace{TypeMeta: ns.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: ns.Name}}
}

// revivedLabel marks a namespace purge created to reach a former
// namespace's leftovers.
const revivedLabel = "ns-doctor.dev/revived-for-orphans"

// mustRevive tells whether changing a former namespace's leftovers needs
// the namespace re-created: up to 1.36 NamespaceLifecycle admission refuses
// every change but deletion to content of a namespace that does not exist;
// from 1.37 it admits UPDATE and PATCH (kubernetes PR 140661), so
// finalizers are removed in place. An unknown version gets the older path,
// which works on both.
func mustRevive(o *Options, rep *Report) bool {
	return o.Orphans && (!o.OrderedDeletion.Server.Has(compat.UpdateWithoutNamespace) || selectorMetGone(rep))
}

// selectorMetGone tells whether a strip in place met a webhook that selects
// namespaces by label: kube-apiserver cannot read a gone namespace's
// labels and answers 404 for it, so only a namespace of that name lets the
// strip through, as up to 1.36. Its create was not asked in the
// permission check (1.37 needs none without such a webhook).
func selectorMetGone(rep *Report) bool {
	return slices.ContainsFunc(rep.RowsOf(RowStrip), func(s Row) bool { return s.Refusal != nil && s.Refusal.NamespaceGone }) ||
		slices.ContainsFunc(rep.Failures, func(f Failure) bool { return f.Refusal != nil && f.Refusal.NamespaceGone })
}

// revive re-creates the former namespace and deletes it again at once, so
// that finalizers can be removed through a namespace of that name (up to
// 1.36: mustRevive). Once terminating, it is an ordinary purge: the passes
// go on with the real namespace. A plan plays it, and says so.
func (r *passLoop) revive(ctx context.Context) error {
	r.revived = true
	r.l.warn(Warning{Kind: WarnRevivalNeeded, Name: r.ns})
	a := r.actor()
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.ns, Labels: map[string]string{revivedLabel: "true"}}}
	_, err := a.send(ctx, Write{Verb: "create", Resource: namespacesGVR, Name: ns.Name, Object: ns,
		Change: &Change{Kind: ChangeCreatedNamespace, Resource: "namespaces", Name: ns.Name}})
	if apierrors.IsAlreadyExists(err) {
		// Someone created it since purge looked: what is left is theirs now.
		return fmt.Errorf("namespace %s was created meanwhile, so its content is no longer orphaned: purge stops (purge it without --orphans if it should go)", ns.Name)
	}
	if err != nil {
		return fmt.Errorf("re-creating namespace %s to remove its leftovers' finalizers: %w", ns.Name, err)
	}
	if _, err := a.send(ctx, Write{Verb: "delete", Resource: namespacesGVR, Name: ns.Name,
		Change: &Change{Kind: ChangeDeletedNamespaceAgain, Resource: "namespaces", Name: ns.Name}}); err != nil {
		return fmt.Errorf("deleting namespace %s again: %w", ns.Name, err)
	}
	return nil
}

// needsRevival tells whether a pass over a former namespace left objects
// whose finalizers the escalations strip.
func (r *passLoop) needsRevival(content *deletion.ContentResult) bool {
	if !mustRevive(r.opts, r.report) || r.revived {
		return false
	}
	if selectorMetGone(r.report) {
		// Deletions too were refused for the namespace's absence: only a
		// namespace of that name lets anything through.
		return true
	}
	held := make([]string, 0, len(content.Totals.FinalizersToNumRemaining))
	for f := range content.Totals.FinalizersToNumRemaining {
		held = append(held, f)
	}
	for _, a := range r.actions {
		if s, ok := a.(changesLeftovers); ok && s.strips(held) {
			return true
		}
	}
	return false
}

// changesLeftovers is an escalation that changes objects holding these
// finalizers: over a former namespace, only a namespace of that name lets
// it (revive).
type changesLeftovers interface{ strips(held []string) bool }

// namespaceFinalizers handles a finalized namespace that still exists: its
// own metadata.finalizers hold it, which only their owner removes, or an
// escalation (--remove-namespace-finalizers). It returns how many changes
// were made (or would be).
func (r *passLoop) namespaceFinalizers(ctx context.Context, ns *v1.Namespace) (int, error) {
	if len(ns.Finalizers) == 0 {
		return 0, nil // the API server is about to delete it
	}
	for _, a := range r.actions {
		if held, ok := a.(namespaceHeld); ok {
			n, err := held.namespaceHeld(ctx, r.actor(), ns)
			if err != nil {
				return n, stopIfPlan(r, err)
			}
			return n, nil
		}
	}
	r.l.update(func(rep *Report) { rep.Finalize.Cause, rep.Finalize.Kept = FinalizeNamespaceHeld, ns.Finalizers })
	return 0, stopIfPlan(r, blocked(r.started))
}
