package purge

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
)

// recorder wraps a pass's operations to report every request, how many
// objects it reached and the server's answer, and the finalizers of what
// the recount found.
type recorder struct {
	inner      deletion.Operations
	objects    func(gvr schema.GroupVersionResource) int
	verb       string // "would" in a plan, "" when acting
	steps      []Step
	finalizers map[schema.GroupVersionResource]map[string]int
}

func newRecorder(inner deletion.Operations, objects func(schema.GroupVersionResource) int, planning bool) *recorder {
	rec := &recorder{inner: inner, objects: objects, finalizers: map[schema.GroupVersionResource]map[string]int{}}
	if planning {
		rec.verb = "would "
	}
	return rec
}

func (r *recorder) record(verb string, gvr schema.GroupVersionResource, n int, err error) {
	result := r.verb + verb
	if err != nil {
		result = "failed: " + err.Error()
	}
	r.steps = append(r.steps, Step{Verb: verb, Resource: resourceName(gvr), Objects: n, Result: result})
}

func (r *recorder) DeleteCollection(ctx context.Context, gvr schema.GroupVersionResource, ns string) error {
	err := r.inner.DeleteCollection(ctx, gvr, ns)
	r.record("deletecollection", gvr, r.objects(gvr), err)
	return err
}

func (r *recorder) Delete(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) error {
	err := r.inner.Delete(ctx, gvr, ns, name)
	r.record("delete "+name, gvr, 1, err)
	return err
}

func (r *recorder) List(ctx context.Context, gvr schema.GroupVersionResource, ns string) (*metav1.PartialObjectMetadataList, error) {
	list, err := r.inner.List(ctx, gvr, ns)
	if err == nil && list != nil {
		counts := map[string]int{}
		for _, item := range list.Items {
			for _, f := range item.Finalizers {
				counts[f]++
			}
		}
		if len(counts) > 0 {
			r.finalizers[gvr] = counts
		}
	}
	return list, err
}
