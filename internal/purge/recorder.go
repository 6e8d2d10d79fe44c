package purge

import (
	"context"
	"sort"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
)

// recorder wraps one pass's operations to report every request, how many
// objects it reached and the server's answer, and the finalizers of what
// the recount found. A pass may send requests concurrently.
type recorder struct {
	inner deletion.Operations
	// count tells how many objects a request reaches; countAfter asks it
	// once the request is done (a force run counts what it saved first).
	count      func(gvr schemaGVR) int
	countAfter bool
	status     StepStatus // Planned or Sent, when the request succeeds
	pass       int
	// skipped tells whether the inner operations spared a request.
	skipped func(gvr schemaGVR) bool
	// onStep is told of each request recorded.
	onStep func(Step)

	mu         sync.Mutex
	steps      []Step
	finalizers map[schemaGVR]map[string]int
}

func newRecorder(inner deletion.Operations, count func(schemaGVR) int, countAfter bool, status StepStatus, pass int) *recorder {
	return &recorder{inner: inner, count: count, countAfter: countAfter, status: status, pass: pass, finalizers: map[schemaGVR]map[string]int{}}
}

var _ deletion.Operations = (*recorder)(nil)

func (r *recorder) record(verb string, gvr schemaGVR, name string, n int, status StepStatus, err error) {
	s := Step{Pass: r.pass, Verb: verb, Resource: deletion.ResourceName(gvr), Name: name, Objects: n, Status: status}
	if err != nil {
		s.Status, s.Error = StepFailed, err.Error()
	}
	r.mu.Lock()
	r.steps = append(r.steps, s)
	r.mu.Unlock()
	if r.onStep != nil {
		r.onStep(s)
	}
}

// DeleteCollection records a deletecollection.
func (r *recorder) DeleteCollection(ctx context.Context, gvr schemaGVR, ns string) error {
	n := 0
	if !r.countAfter {
		n = r.count(gvr)
	}
	err := r.inner.DeleteCollection(ctx, gvr, ns)
	if r.countAfter {
		n = r.count(gvr)
	}
	status := r.status
	if r.skipped != nil && r.skipped(gvr) {
		status = StepSkipped
	}
	r.record("deletecollection", gvr, "", n, status, err)
	return err
}

// Delete records the deletion of one item.
func (r *recorder) Delete(ctx context.Context, gvr schemaGVR, ns, name string) error {
	err := r.inner.Delete(ctx, gvr, ns, name)
	r.record("delete", gvr, name, 1, r.status, err)
	return err
}

// List keeps the finalizers of what the list found.
func (r *recorder) List(ctx context.Context, gvr schemaGVR, ns string) (*metav1.PartialObjectMetadataList, error) {
	list, err := r.inner.List(ctx, gvr, ns)
	if err == nil && list != nil {
		counts := map[string]int{}
		for _, item := range list.Items {
			for _, f := range item.Finalizers {
				counts[f]++
			}
		}
		r.mu.Lock()
		r.finalizers[gvr] = counts
		r.mu.Unlock()
	}
	return list, err
}

// Steps are the recorded requests in a stable order whatever order they
// were sent in: pods first (ordered deletion sends them first), then by
// resource, each resource's requests in the order they were sent.
func (r *recorder) Steps() []Step {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]Step(nil), r.steps...)
	pods := deletion.ResourceName(deletion.PodsGVR)
	sort.SliceStable(out, func(i, j int) bool {
		if (out[i].Resource == pods) != (out[j].Resource == pods) {
			return out[i].Resource == pods
		}
		return out[i].Resource < out[j].Resource
	})
	return out
}

func (r *recorder) finalizersOf(gvr schemaGVR) map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.finalizers[gvr]) == 0 {
		return nil
	}
	return r.finalizers[gvr]
}
