package purge

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
)

// ErrNamespaceExists: --orphans names a namespace that exists; its content
// is not orphaned, and purging it is an ordinary purge.
var ErrNamespaceExists = errors.New("the namespace exists")

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

// namespaceClient is the run's view of the namespace: the API server's, or
// for a former namespace an in-memory one whose finalize only ends the
// passes (there is nothing to finalize).
func (r *run) namespaceClient(ns *v1.Namespace) deletion.NamespaceClient {
	if r.Opts.Orphans {
		return deletion.NewPlanNamespaces(ns)
	}
	return r.Clients.Kube.CoreV1().Namespaces()
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
// an ordinary purge: the passes go on with the real namespace.
func (r *run) revive(ctx context.Context) error {
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.Opts.Namespace, Labels: map[string]string{revivedLabel: "true"}}}
	nsc := r.Clients.Kube.CoreV1().Namespaces()
	_, err := nsc.Create(ctx, ns, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Someone created it since purge looked: what is left is theirs now.
		return fmt.Errorf("namespace %s was created meanwhile, so its content is no longer orphaned: purge stops (purge it without --orphans if it should go)", ns.Name)
	}
	if err != nil {
		return fmt.Errorf("re-creating namespace %s to remove its leftovers' finalizers: %w", ns.Name, err)
	}
	r.change("created namespace %s: the API server accepts finalizer removals only in a namespace that exists", ns.Name)
	if err := nsc.Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting namespace %s again: %w", ns.Name, err)
	}
	r.change("deleted namespace %s again: purge finishes its deletion", ns.Name)
	r.revived = true
	r.deleter.NsClient = nsc
	return nil
}

// needsRevival tells whether a pass over a former namespace left objects
// whose finalizers the escalations strip.
func (r *run) needsRevival(content *deletion.ContentResult) bool {
	if !r.Opts.Orphans || r.revived || !r.Opts.Escalations.strips() {
		return false
	}
	held := make([]string, 0, len(content.Totals.FinalizersToNumRemaining))
	for f := range content.Totals.FinalizersToNumRemaining {
		held = append(held, f)
	}
	return len(r.Opts.Escalations.match(held)) > 0
}
