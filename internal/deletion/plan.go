package deletion

import (
	"context"
	"sort"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Snapshot is what one sweep saw in a namespace: the metadata list (or
// its error) per resource, and the pods with their spec.
type Snapshot struct {
	Lists    map[schema.GroupVersionResource]*metav1.PartialObjectMetadataList
	ListErrs map[schema.GroupVersionResource]error
	// Omitted counts, per type, the plain objects (no finalizers, no
	// deletionTimestamp, no owner references) a compact sweep counted but
	// did not keep in Lists. A pass deletes them at once: they change no
	// condition, only the content's count.
	Omitted map[schema.GroupVersionResource]int
	Pods    []v1.Pod
	// PodSpecsUnknown: Pods were rebuilt from metadata (no node, no phase).
	PodSpecsUnknown bool
}

// PlannedRequest is one request a pass would send.
type PlannedRequest struct {
	Verb     string                      `json:"verb"`
	Resource schema.GroupVersionResource `json:"-"`
	Name     string                      `json:"name,omitempty"`
}

// PlanOps answers a pass from a snapshot without sending anything: a
// deletion request is recorded, and the next list returns what would
// survive it. This is how explain predicts the controller's next pass.
type PlanOps struct {
	Snapshot *Snapshot
	// DeleteErrs are the answers the API server is expected to give to a
	// DELETE of a resource (a fail-closed webhook whose backend is gone).
	DeleteErrs map[schema.GroupVersionResource]error
	Requests   []PlannedRequest
	deleted    map[schema.GroupVersionResource]bool
	pods       map[string]*v1.Pod
}

// NewPlanOps plans over snap.
func NewPlanOps(snap *Snapshot) *PlanOps {
	p := &PlanOps{Snapshot: snap, deleted: map[schema.GroupVersionResource]bool{}, pods: map[string]*v1.Pod{}}
	for i := range snap.Pods {
		p.pods[snap.Pods[i].Name] = &snap.Pods[i]
	}
	return p
}

var _ Operations = (*PlanOps)(nil)

// DeleteCollection fails the way the list failed: an API that cannot list
// (forbidden, unavailable) cannot delete a collection either.
func (p *PlanOps) DeleteCollection(_ context.Context, gvr schema.GroupVersionResource, _ string) error {
	if err := p.Snapshot.ListErrs[gvr]; err != nil {
		return err
	}
	p.Requests = append(p.Requests, PlannedRequest{Verb: "deletecollection", Resource: gvr})
	if err := p.DeleteErrs[gvr]; err != nil {
		return err
	}
	p.deleted[gvr] = true
	return nil
}

// Delete records the deletion of one item.
func (p *PlanOps) Delete(_ context.Context, gvr schema.GroupVersionResource, _ string, name string) error {
	p.Requests = append(p.Requests, PlannedRequest{Verb: "delete", Resource: gvr, Name: name})
	if err := p.DeleteErrs[gvr]; err != nil {
		return err
	}
	p.deleted[gvr] = true
	return nil
}

// List returns the snapshot, or after a deletion the items that survive it.
func (p *PlanOps) List(_ context.Context, gvr schema.GroupVersionResource, _ string) (*metav1.PartialObjectMetadataList, error) {
	if err := p.Snapshot.ListErrs[gvr]; err != nil {
		return nil, err
	}
	list := p.Snapshot.Lists[gvr]
	if list == nil {
		return &metav1.PartialObjectMetadataList{}, nil
	}
	if !p.deleted[gvr] {
		return list, nil
	}
	out := &metav1.PartialObjectMetadataList{}
	for i := range list.Items {
		item := afterBackgroundDelete(&list.Items[i])
		if p.survivesDeletion(gvr, item) {
			out.Items = append(out.Items, *item)
		}
	}
	return out, nil
}

// afterBackgroundDelete is an item as a DELETE with background propagation
// leaves it: the API server drops the garbage collector's foregroundDeletion
// and orphan finalizers, so the controller's pass itself ends those waits.
func afterBackgroundDelete(item *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
	var kept []string
	for _, f := range item.Finalizers {
		if f != metav1.FinalizerDeleteDependents && f != metav1.FinalizerOrphanDependents {
			kept = append(kept, f)
		}
	}
	if len(kept) == len(item.Finalizers) {
		return item
	}
	out := item.DeepCopy()
	out.Finalizers = kept
	if out.DeletionTimestamp == nil {
		now := metav1.Now()
		out.DeletionTimestamp = &now
	}
	return out
}

// survivesDeletion tells whether an item is still there right after a
// DELETE: finalizers keep it, and so does graceful termination of a pod
// bound to a node (the kubelet must confirm; unbound or finished pods go
// at once).
func (p *PlanOps) survivesDeletion(gvr schema.GroupVersionResource, item *metav1.PartialObjectMetadata) bool {
	if len(item.Finalizers) > 0 || item.DeletionTimestamp != nil {
		return true
	}
	if gvr.GroupResource() != podsGVR.GroupResource() {
		return false
	}
	if p.Snapshot.PodSpecsUnknown {
		return true // most pods are bound to a node and terminate gracefully
	}
	pod := p.pods[item.Name]
	return pod != nil && pod.Spec.NodeName != "" && pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed
}

// ListPods returns the snapshot's pods.
func (p *PlanOps) ListPods(context.Context, string) ([]v1.Pod, error) {
	return p.Snapshot.Pods, nil
}

// SortedGVRs returns the snapshot's resources in a stable order.
func (s *Snapshot) SortedGVRs() []schema.GroupVersionResource {
	var out []schema.GroupVersionResource
	for gvr := range s.Lists {
		out = append(out, gvr)
	}
	for gvr := range s.ListErrs {
		if _, ok := s.Lists[gvr]; !ok {
			out = append(out, gvr)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
