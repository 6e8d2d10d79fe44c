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

// actor is all an escalation may do: read what it decides from, send
// writes through the run's writer, which alone knows whether the run
// plans, asks the server for dry runs or acts, and record what became of
// them in the run's ledger.
type actor struct {
	namespace string
	w         channel
	l         *ledger
	// refused says who refused a request.
	refused func(ctx context.Context, gvr schema.GroupVersionResource, err error) *diagnose.Refusal
	// node reads a pod's node, as it is (a plan too: it says where pods
	// run).
	node func(ctx context.Context, name string) (*v1.Node, error)
}

// read reads an object an escalation is about to change (a plan: as it
// plays it).
func (a *actor) read(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	return a.w.read(ctx, gvr, namespace, name)
}

// list lists what an escalation may change.
func (a *actor) list(ctx context.Context, gvr schema.GroupVersionResource, namespace string) (*metav1.PartialObjectMetadataList, error) {
	return a.w.list(ctx, gvr, namespace)
}

// listPods lists the namespace's pods in full.
func (a *actor) listPods(ctx context.Context) ([]v1.Pod, error) {
	return a.w.listPods(ctx, a.namespace)
}

// until says how long until t, and whether to act now: a plan plays what
// purge would do once a wait is over.
func (a *actor) until(t time.Time) (time.Duration, bool) { return a.w.until(t) }

// send sends a write; the change it makes is recorded once it is made.
func (a *actor) send(ctx context.Context, wr Write) (Sent, error) {
	sent, err := a.w.send(ctx, wr)
	if err == nil && sent.ForReal && wr.Change != nil {
		a.l.changed(*wr.Change)
	}
	return sent, err
}

// record changes the report (an escalation's own section of it).
func (a *actor) record(fn func(r *Report)) { a.l.update(fn) }

// step records a request of an escalation's own.
func (a *actor) step(s Step) { a.l.step(s) }

// warn records a warning once.
func (a *actor) warn(w Warning) bool { return a.l.warn(w) }

// fail records a refused request, with who refused it.
func (a *actor) fail(ctx context.Context, gvr schema.GroupVersionResource, f Failure, err error) *diagnose.Refusal {
	f.Error, f.Refusal = err.Error(), a.refused(ctx, gvr, err)
	a.l.fail(f)
	return f.Refusal
}
