package purge

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// revive re-creates the former namespace and deletes it again at once: the
// API server refuses every change but deletion to content of a namespace
// that does not exist (NamespaceLifecycle admission), so finalizers can be
// removed only through a namespace of that name. Once terminating, it is
// an ordinary purge: the passes go on with the real namespace. A plan
// plays it, and says so.
func (r *run) revive(ctx context.Context) error {
	r.revived = true
	r.l.warn(Warning{Kind: WarnRevivalNeeded, Name: r.ns()})
	a := r.actor()
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.ns(), Labels: map[string]string{revivedLabel: "true"}}}
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
func (r *run) needsRevival(content *deletion.ContentResult) bool {
	if !r.Opts.Orphans || r.revived {
		return false
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
func (r *run) namespaceFinalizers(ctx context.Context, ns *v1.Namespace) (int, error) {
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
	r.report.Finalize.Cause, r.report.Finalize.Kept = FinalizeNamespaceHeld, ns.Finalizers
	return 0, stopIfPlan(r, r.blocked())
}
