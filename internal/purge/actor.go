package purge

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// actor is all an escalation may do, and an interface so that nothing
// else is in reach: read what it decides from (as the writer sees it: a
// plan reads its own simulated state), send writes through the run's
// writer, which alone knows whether the run plans, asks the server for
// dry runs or acts, and record what became of them in the run's ledger.
type actor interface {
	// namespace is the namespace the run purges.
	namespace() string
	// read reads an object the escalation is about to change.
	read(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error)
	// list lists what the escalation may change.
	list(ctx context.Context, gvr schema.GroupVersionResource, namespace string) (*metav1.PartialObjectMetadataList, error)
	// listed is what the pass's recount of gvr found moments ago (nil
	// when it listed none): an escalation starts from it rather than
	// listing again.
	listed(gvr schema.GroupVersionResource) *metav1.PartialObjectMetadataList
	// saved tells whether the run's backup holds the object in full: a
	// write may then start from its metadata alone.
	saved(gvr schema.GroupVersionResource, name string) bool
	// listPods lists the namespace's pods in full.
	listPods(ctx context.Context) ([]v1.Pod, error)
	// node reads a pod's node, as it is (a plan too: it says where pods
	// run).
	node(ctx context.Context, name string) (*v1.Node, error)
	// until says how long until t, and whether to act now: a plan plays
	// what purge would do once a wait is over.
	until(t time.Time) (time.Duration, bool)
	// now is the run's clock.
	now() time.Time
	// send sends a write; the change it makes is recorded once it is made.
	send(ctx context.Context, wr Write) (Sent, error)
	// record changes the report (the escalation's own section of it).
	record(fn func(r *Report))
	// step records a request of the escalation's own.
	step(s Step)
	// warn records a warning once; it tells whether it was new.
	warn(w Warning) bool
	// fail records a refused request, with who refused it.
	fail(ctx context.Context, gvr schema.GroupVersionResource, f Failure, err error) *diagnose.Refusal
}

// runActor is a run's actor.
type runActor struct {
	ns string
	w  channel
	l  *ledger
	// real is the mode: a plan plays what purge would do once a wait is
	// over. Only until answers by it.
	real bool
	// refused says who refused a request.
	refused func(ctx context.Context, gvr schema.GroupVersionResource, err error) *diagnose.Refusal
	nodeOf  func(ctx context.Context, name string) (*v1.Node, error)
	// seen is the pass's recount of a type; nil before the passes.
	seen func(gvr schema.GroupVersionResource) *metav1.PartialObjectMetadataList
}

func (a *runActor) namespace() string { return a.ns }

func (a *runActor) read(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	return a.w.read(ctx, gvr, namespace, name)
}

func (a *runActor) list(ctx context.Context, gvr schema.GroupVersionResource, namespace string) (*metav1.PartialObjectMetadataList, error) {
	return a.w.list(ctx, gvr, namespace)
}

func (a *runActor) listed(gvr schema.GroupVersionResource) *metav1.PartialObjectMetadataList {
	if a.seen == nil {
		return nil
	}
	return a.seen(gvr)
}

func (a *runActor) saved(gvr schema.GroupVersionResource, name string) bool {
	return a.w.saved(gvr, name)
}

func (a *runActor) listPods(ctx context.Context) ([]v1.Pod, error) {
	return a.w.listPods(ctx, a.ns)
}

func (a *runActor) node(ctx context.Context, name string) (*v1.Node, error) {
	return a.nodeOf(ctx, name)
}

func (a *runActor) until(t time.Time) (time.Duration, bool) {
	wait := t.Sub(a.now())
	return wait, wait <= 0 || !a.real
}

func (a *runActor) now() time.Time { return a.l.now() }

func (a *runActor) send(ctx context.Context, wr Write) (Sent, error) {
	sent, err := a.w.send(ctx, wr)
	if err == nil && sent.ForReal && wr.Change != nil {
		a.l.changed(*wr.Change)
	}
	return sent, err
}

func (a *runActor) record(fn func(r *Report)) { a.l.update(fn) }

func (a *runActor) step(s Step) { a.l.step(s) }

func (a *runActor) warn(w Warning) bool { return a.l.warn(w) }

func (a *runActor) fail(ctx context.Context, gvr schema.GroupVersionResource, f Failure, err error) *diagnose.Refusal {
	f.Error = err.Error()
	if a.refused != nil {
		f.Refusal = a.refused(ctx, gvr, err)
	}
	a.l.fail(f)
	return f.Refusal
}
