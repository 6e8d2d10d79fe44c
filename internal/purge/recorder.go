package purge

import (
	"context"
	"slices"
	"sort"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// recorder wraps the writer's content operations to report every request
// of a pass, how many objects it reached and the server's answer, and the
// finalizers of what the recount found. A pass may send requests
// concurrently. It is built once per run; startPass begins a pass.
type recorder struct {
	w writer
	t tally
	// real: an accepted request was sent for real, else planned.
	real bool
	// onStep is told of each request recorded; whoRefused says who
	// refused one.
	onStep     func(Step)
	whoRefused func(context.Context, schemaGVR, error) *diagnose.Refusal

	mu         sync.Mutex
	pass       int
	steps      []Step
	finalizers map[schemaGVR]map[string]int
	// refused are this pass's refused requests; listErrs its failed
	// recounts.
	refused  []Failure
	listErrs map[schemaGVR]Failure
	// lists are what the pass's recounts found: what the run last saw.
	lists map[schemaGVR]*metav1.PartialObjectMetadataList
}

func newRecorder(w writer, t tally, real bool, onStep func(Step), whoRefused func(context.Context, schemaGVR, error) *diagnose.Refusal) *recorder {
	return &recorder{w: w, t: t, real: real, onStep: onStep, whoRefused: whoRefused}
}

var _ deletion.Operations = (*recorder)(nil)

func (r *recorder) startPass(pass int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pass, r.steps, r.finalizers, r.refused, r.listErrs = pass, nil, map[schemaGVR]map[string]int{}, nil, map[schemaGVR]Failure{}
	r.lists = map[schemaGVR]*metav1.PartialObjectMetadataList{}
}

func (r *recorder) record(ctx context.Context, verb string, gvr schemaGVR, name string, n int, status StepStatus, err error) {
	s := Step{Verb: verb, Resource: deletion.ResourceName(gvr), Name: name, Objects: n, Status: status}
	if err != nil {
		s.Status, s.Error, s.Refusal = StepFailed, err.Error(), r.whoRefused(ctx, gvr, err)
	}
	r.mu.Lock()
	s.Pass = r.pass
	if err != nil {
		r.refused = append(r.refused, Failure{Verb: verb, Resource: s.Resource, Name: name, Error: s.Error, Refusal: s.Refusal})
	}
	r.steps = append(r.steps, s)
	r.mu.Unlock()
	if r.onStep != nil {
		r.onStep(s)
	}
}

// status is what an accepted request became: sent for real, or planned.
func (r *recorder) status() StepStatus {
	if r.real {
		return StepSent
	}
	return StepPlanned
}

// DeleteCollection records a deletecollection.
func (r *recorder) DeleteCollection(ctx context.Context, gvr schemaGVR, ns string) error {
	n := 0
	if !r.t.reachedAfter() {
		n = r.t.reached(gvr)
	}
	err := r.w.operations().DeleteCollection(ctx, gvr, ns)
	if r.t.reachedAfter() {
		n = r.t.reached(gvr)
	}
	status := r.status()
	if r.t.spared(gvr) {
		status = StepSkipped
	}
	r.record(ctx, "deletecollection", gvr, "", n, status, err)
	return err
}

// Delete records the deletion of one item.
func (r *recorder) Delete(ctx context.Context, gvr schemaGVR, ns, name string) error {
	err := r.w.operations().Delete(ctx, gvr, ns, name)
	r.record(ctx, "delete", gvr, name, 1, r.status(), err)
	return err
}

// List keeps the finalizers of what the list found, and a failed list.
func (r *recorder) List(ctx context.Context, gvr schemaGVR, ns string) (*metav1.PartialObjectMetadataList, error) {
	list, err := r.w.operations().List(ctx, gvr, ns)
	var refusal *diagnose.Refusal
	if err != nil {
		refusal = r.whoRefused(ctx, gvr, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err != nil:
		r.listErrs[gvr] = Failure{Verb: "list", Resource: deletion.ResourceName(gvr), Error: err.Error(), Refusal: refusal}
	case list != nil:
		r.lists[gvr] = list
		counts := map[string]int{}
		for _, item := range list.Items {
			for _, f := range item.Finalizers {
				counts[f]++
			}
		}
		r.finalizers[gvr] = counts
	}
	return list, err
}

// listed is what this pass's recount of gvr found; nil when it listed
// none, or the list failed.
func (r *recorder) listed(gvr schemaGVR) *metav1.PartialObjectMetadataList {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lists[gvr]
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

// failed tells whether a request of this pass failed for gvr.
func (r *recorder) failed(gvr schemaGVR) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, listed := r.listErrs[gvr]
	name := deletion.ResourceName(gvr)
	return listed || slices.ContainsFunc(r.refused, func(f Failure) bool { return f.Resource == name })
}

// failures are this pass's refused requests, failed recounts included, by
// resource.
func (r *recorder) failures() []Failure {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.refused)
	for _, f := range r.listErrs {
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out
}

// seen is what the pass's recounts found, as a snapshot, with the types
// whose requests failed as list errors.
func (r *recorder) seen() *deletion.Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	snap := &deletion.Snapshot{Lists: map[schemaGVR]*metav1.PartialObjectMetadataList{}, ListErrs: map[schemaGVR]error{}}
	for gvr, l := range r.lists {
		snap.Lists[gvr] = l
	}
	return snap
}
