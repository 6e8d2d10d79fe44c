package purge

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/inspect"
)

// censusOps answers a pass, for the types the census says the namespace
// cannot hold, as the API server would (an empty list, a deletion that
// reaches nothing) without asking it; every other request goes through.
// The controller's Delete runs unchanged over it: the same conditions,
// the same stages, fewer requests. A client-side plan does not need it: it
// plays over its snapshot, which holds only what the census let it read.
type censusOps struct {
	deletion.Operations
	pods      deletion.PodLister
	census    *inspect.Census
	namespace string
	// empty answers every skipped list: the deleter only reads it, and
	// one per list made a million of them over 10,000 namespaces.
	empty *metav1.PartialObjectMetadataList
}

func (c censusOps) DeleteCollection(ctx context.Context, gvr schemaGVR, namespace string) error {
	if c.census.Skips(namespace, gvr) {
		return nil
	}
	return c.Operations.DeleteCollection(ctx, gvr, namespace)
}

func (c censusOps) List(ctx context.Context, gvr schemaGVR, namespace string) (*metav1.PartialObjectMetadataList, error) {
	if c.census.Skips(namespace, gvr) {
		return c.empty, nil
	}
	return c.Operations.List(ctx, gvr, namespace)
}

func (c censusOps) ListPods(ctx context.Context, namespace string) ([]v1.Pod, error) {
	if c.census.Skips(namespace, deletion.PodsGVR) {
		return nil, nil
	}
	return c.pods.ListPods(ctx, namespace)
}
