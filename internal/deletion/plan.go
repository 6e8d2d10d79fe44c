package deletion

import (
	"cmp"
	"context"
	"iter"
	"maps"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Snapshot is what one sweep saw in a namespace: the metadata list (or
// its error) per resource, and the pods as the estimate reads them.
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
	// Order, when set, holds the resources in SortedGVRs' order (a
	// discovery's, shared by the snapshots of many namespaces):
	// SortedGVRs then picks from it instead of sorting.
	Order []schema.GroupVersionResource
	// sealed is what Seal made: the resources in order, with their lists,
	// and the sizes of Lists and ListErrs then (no code deletes from them,
	// so the same sizes are the same keys).
	sealed   []listedType
	sealedAt [2]int
	isSealed bool
}

// listedType is one resource of a sealed snapshot; list is nil when its
// list failed.
type listedType struct {
	gvr  schema.GroupVersionResource
	list *metav1.PartialObjectMetadataList
}

// Seal records the snapshot's resources in order, once its lists are
// complete: a diagnosis walks them several times (GVRs, Listed), 10,000
// namespaces at once, each walk then a slice's. Lists must not change
// after; a snapshot whose maps grew since is walked as if unsealed.
func (s *Snapshot) Seal() {
	// A fresh slice: a copy of the snapshot may share the old one.
	s.isSealed = false
	s.sealed = make([]listedType, 0, len(s.Lists)+len(s.ListErrs))
	for gvr := range s.GVRs() {
		s.sealed = append(s.sealed, listedType{gvr: gvr, list: s.Lists[gvr]})
	}
	s.sealedAt, s.isSealed = [2]int{len(s.Lists), len(s.ListErrs)}, true
}

func (s *Snapshot) sealedNow() bool {
	return s.isSealed && s.sealedAt == [2]int{len(s.Lists), len(s.ListErrs)}
}

// Listed yields each resource that was listed (not those whose list
// failed) with its list, in SortedGVRs' order.
func (s *Snapshot) Listed() iter.Seq2[schema.GroupVersionResource, *metav1.PartialObjectMetadataList] {
	return func(yield func(schema.GroupVersionResource, *metav1.PartialObjectMetadataList) bool) {
		if s.sealedNow() {
			for _, t := range s.sealed {
				if t.list != nil && !yield(t.gvr, t.list) {
					return
				}
			}
			return
		}
		for gvr := range s.GVRs() {
			if list := s.Lists[gvr]; list != nil && !yield(gvr, list) {
				return
			}
		}
	}
}

// GVRs yields the snapshot's resources in SortedGVRs' order; with Order
// set and covering them, without making a slice: a diagnosis walks them
// several times, 10,000 namespaces at once.
func (s *Snapshot) GVRs() iter.Seq[schema.GroupVersionResource] {
	return func(yield func(schema.GroupVersionResource) bool) {
		if s.sealedNow() {
			for _, t := range s.sealed {
				if !yield(t.gvr) {
					return
				}
			}
			return
		}
		if !s.orderCovers() {
			for _, gvr := range s.SortedGVRs() {
				if !yield(gvr) {
					return
				}
			}
			return
		}
		for _, gvr := range s.Order {
			if s.has(gvr) && !yield(gvr) {
				return
			}
		}
	}
}

// has tells whether gvr was listed, or its list failed.
func (s *Snapshot) has(gvr schema.GroupVersionResource) bool {
	if _, listed := s.Lists[gvr]; listed {
		return true
	}
	_, failed := s.ListErrs[gvr]
	return failed
}

// orderCovers tells whether Order holds every resource listed or failed.
func (s *Snapshot) orderCovers() bool {
	if s.Order == nil {
		return false
	}
	n := len(s.Lists)
	for gvr := range s.ListErrs {
		if _, ok := s.Lists[gvr]; !ok {
			n++
		}
	}
	for _, gvr := range s.Order {
		if s.has(gvr) {
			n--
		}
	}
	return n == 0
}

// SortedGVRs returns the snapshot's resources in a stable order.
func (s *Snapshot) SortedGVRs() []schema.GroupVersionResource {
	n := len(s.Lists)
	for gvr := range s.ListErrs {
		if _, ok := s.Lists[gvr]; !ok {
			n++
		}
	}
	if s.Order != nil {
		out := make([]schema.GroupVersionResource, 0, n)
		for _, gvr := range s.Order {
			_, listed := s.Lists[gvr]
			if _, failed := s.ListErrs[gvr]; listed || failed {
				out = append(out, gvr)
			}
		}
		if len(out) == n { // else some resource is not in Order
			return out
		}
	}
	var out []schema.GroupVersionResource
	for gvr := range s.Lists {
		out = append(out, gvr)
	}
	for gvr := range s.ListErrs {
		if _, ok := s.Lists[gvr]; !ok {
			out = append(out, gvr)
		}
	}
	sortByName(out)
	return out
}

// sortByName sorts resources in the order of their names
// (GroupVersionResource.String) without making them: formatting both sides
// of each comparison cost more than the rest of a diagnosis over
// thousands of namespaces.
func sortByName(gvrs []schema.GroupVersionResource) { slices.SortFunc(gvrs, compareNames) }

// SortedByName is gvrs in SortedGVRs' order (sorted in place).
func SortedByName(gvrs []schema.GroupVersionResource) []schema.GroupVersionResource {
	sortByName(gvrs)
	return gvrs
}

// compareNames compares a's and b's names byte by byte, reading their parts
// where String would join them.
func compareNames(a, b schema.GroupVersionResource) int {
	pa := [...]string{a.Group, "/", a.Version, ", Resource=", a.Resource}
	pb := [...]string{b.Group, "/", b.Version, ", Resource=", b.Resource}
	i, j, x, y := 0, 0, 0, 0 // the part and the byte within it, of each
	for {
		for i < len(pa) && x == len(pa[i]) {
			i, x = i+1, 0
		}
		for j < len(pb) && y == len(pb[j]) {
			j, y = j+1, 0
		}
		switch {
		case i == len(pa) || j == len(pb):
			return cmp.Compare(len(pa)-i, len(pb)-j) // the one that ended first is less
		case pa[i][x] != pb[j][y]:
			return cmp.Compare(pa[i][x], pb[j][y])
		}
		x, y = x+1, y+1
	}
}

// PlannedRequest is one request a pass would send.
type PlannedRequest struct {
	Verb     string
	Resource schema.GroupVersionResource
	Name     string
}

// PlanOps answers a pass from a snapshot without sending anything, playing
// each request the way the API server would: a deletion removes what
// nothing holds and marks the rest, and the next list returns what is
// left. A plan can so run several passes, with the escalations between
// them. This is how explain predicts the controller's next pass and how
// purge plans.
type PlanOps struct {
	// DeleteErrs are the answers the API server is expected to give to a
	// DELETE of a resource (a fail-closed webhook whose backend is gone).
	DeleteErrs map[schema.GroupVersionResource]error

	mu       sync.Mutex
	snap     *Snapshot
	items    map[schema.GroupVersionResource][]metav1.PartialObjectMetadata
	omitted  map[schema.GroupVersionResource]int
	requests []PlannedRequest
	pods     map[string]*v1.Pod
}

// NewPlanOps plans over snap, which it never changes.
func NewPlanOps(snap *Snapshot) *PlanOps {
	p := &PlanOps{snap: snap, items: map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{}, pods: map[string]*v1.Pod{},
		omitted: maps.Clone(snap.Omitted)}
	for gvr, list := range snap.Lists {
		if list != nil && len(list.Items) > 0 {
			p.items[gvr] = list.Items
		}
	}
	for i := range snap.Pods {
		p.pods[snap.Pods[i].Name] = &snap.Pods[i]
	}
	return p
}

var (
	_ Operations = (*PlanOps)(nil)
	_ PodLister  = (*PlanOps)(nil)
)

// Requests are the requests played so far, in order.
func (p *PlanOps) Requests() []PlannedRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.requests)
}

// DeleteCollection fails the way the list failed: an API that cannot list
// (forbidden, unavailable) cannot delete a collection either.
func (p *PlanOps) DeleteCollection(_ context.Context, gvr schema.GroupVersionResource, _ string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.snap.ListErrs[gvr]; err != nil {
		return err
	}
	p.requests = append(p.requests, PlannedRequest{Verb: "deletecollection", Resource: gvr})
	if err := p.DeleteErrs[gvr]; err != nil {
		return err
	}
	var kept []metav1.PartialObjectMetadata
	for i := range p.items[gvr] {
		if survivor := p.afterDelete(gvr, &p.items[gvr][i]); survivor != nil {
			kept = append(kept, *survivor)
		}
	}
	p.items[gvr] = kept
	delete(p.omitted, gvr) // plain objects: nothing holds them
	return nil
}

// Count is how many objects of a resource are left, plain ones a compact
// sweep did not keep included.
func (p *PlanOps) Count(gvr schema.GroupVersionResource) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.items[gvr]) + p.omitted[gvr]
}

// Delete plays the deletion of one item.
func (p *PlanOps) Delete(_ context.Context, gvr schema.GroupVersionResource, _ string, name string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests = append(p.requests, PlannedRequest{Verb: "delete", Resource: gvr, Name: name})
	if err := p.DeleteErrs[gvr]; err != nil {
		return err
	}
	p.replace(gvr, name, func(item *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
		return p.afterDelete(gvr, item)
	})
	return nil
}

// List returns what is left of a resource, or how its list failed.
func (p *PlanOps) List(_ context.Context, gvr schema.GroupVersionResource, _ string) (*metav1.PartialObjectMetadataList, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.snap.ListErrs[gvr]; err != nil {
		return nil, err
	}
	return &metav1.PartialObjectMetadataList{Items: slices.Clone(p.items[gvr])}, nil
}

// ListPods returns the snapshot's pods that are still there, with the
// deletion the plan has played on them.
func (p *PlanOps) ListPods(context.Context, string) ([]v1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []v1.Pod
	for _, item := range p.items[PodsGVR] {
		if pod := p.pods[item.Name]; pod != nil {
			next := *pod.DeepCopy()
			next.DeletionTimestamp, next.DeletionGracePeriodSeconds = item.DeletionTimestamp, item.DeletionGracePeriodSeconds
			out = append(out, next)
		}
	}
	return out, nil
}

// Get returns one item as the plan holds it, or NotFound.
func (p *PlanOps) Get(gvr schema.GroupVersionResource, name string) (*metav1.PartialObjectMetadata, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.items[gvr] {
		if p.items[gvr][i].Name == name {
			return p.items[gvr][i].DeepCopy(), nil
		}
	}
	return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
}

// RemoveFinalizers plays a patch that strips finalizers from one item: an
// item being deleted goes once nothing holds it any more.
func (p *PlanOps) RemoveFinalizers(gvr schema.GroupVersionResource, name string, strip []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.replace(gvr, name, func(item *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
		out := item.DeepCopy()
		out.Finalizers = slices.DeleteFunc(out.Finalizers, func(f string) bool { return slices.Contains(strip, f) })
		if out.DeletionTimestamp == nil || len(out.Finalizers) > 0 || p.terminatesGracefully(gvr, out) {
			return out
		}
		return nil
	})
}

// ForceDelete plays a DELETE with gracePeriodSeconds 0: the item goes
// unless finalizers hold it.
func (p *PlanOps) ForceDelete(gvr schema.GroupVersionResource, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.replace(gvr, name, func(item *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
		if len(item.Finalizers) == 0 {
			return nil
		}
		out := item.DeepCopy()
		if out.DeletionTimestamp == nil {
			now := metav1.Now()
			out.DeletionTimestamp = &now
		}
		return out
	})
}

// replace swaps one item for what fn returns, or drops it for nil.
func (p *PlanOps) replace(gvr schema.GroupVersionResource, name string, fn func(*metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata) {
	items := slices.Clone(p.items[gvr])
	for i := range items {
		if items[i].Name != name {
			continue
		}
		if next := fn(&items[i]); next != nil {
			items[i] = *next
		} else {
			items = slices.Delete(items, i, i+1)
		}
		break
	}
	p.items[gvr] = items
}

// afterDelete is an item as a DELETE with background propagation leaves
// it, or nil when the API server removes it at once. The API server drops
// the garbage collector's foregroundDeletion and orphan finalizers, so the
// controller's pass itself ends those waits (seen on a real cluster);
// other finalizers keep the item, and so does the graceful termination of
// a pod on a node.
func (p *PlanOps) afterDelete(gvr schema.GroupVersionResource, item *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
	out := item.DeepCopy()
	out.Finalizers = slices.DeleteFunc(out.Finalizers, func(f string) bool {
		return f == metav1.FinalizerDeleteDependents || f == metav1.FinalizerOrphanDependents
	})
	// An item already terminating with no finalizers at all is held by
	// something a snapshot cannot see (graceful deletion in its API).
	held := len(out.Finalizers) > 0 || p.terminatesGracefully(gvr, out) || (item.DeletionTimestamp != nil && len(item.Finalizers) == 0)
	if !held {
		return nil
	}
	if out.DeletionTimestamp == nil {
		// The API server sets a graceful deletion's timestamp to when its
		// grace period ends.
		at, grace := metav1.Now(), p.gracePeriod(gvr, out.Name)
		if grace > 0 {
			at = metav1.NewTime(at.Add(time.Duration(grace) * time.Second))
			out.DeletionGracePeriodSeconds = &grace
		}
		out.DeletionTimestamp = &at
	}
	return out
}

// gracePeriod is a pod's termination grace period as the API server
// applies it on DELETE (the spec's, 30 s by default), 0 for what is not a
// pod terminating on a node.
func (p *PlanOps) gracePeriod(gvr schema.GroupVersionResource, name string) int64 {
	pod := p.pods[name]
	if gvr.GroupResource() != PodsGVR.GroupResource() || pod == nil || p.snap.PodSpecsUnknown || !p.terminatesGracefully(gvr, &metav1.PartialObjectMetadata{ObjectMeta: pod.ObjectMeta}) {
		return 0
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return *g
	}
	return 30
}

// terminatesGracefully tells whether a deleted pod stays until its kubelet
// confirms: bound to a node and not finished. Unbound or finished pods go
// at once; pods read as metadata only are assumed bound, as most are.
func (p *PlanOps) terminatesGracefully(gvr schema.GroupVersionResource, item *metav1.PartialObjectMetadata) bool {
	if gvr.GroupResource() != PodsGVR.GroupResource() {
		return false
	}
	if p.snap.PodSpecsUnknown {
		return true
	}
	pod := p.pods[item.Name]
	return pod != nil && pod.Spec.NodeName != "" && pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed
}

// PlanNamespaces plays the namespace's own requests: it holds the
// namespace as a plan sees it, finalizes it, and forgets it once the API
// server would delete it (both finalizer lists empty).
type PlanNamespaces struct {
	// FinalizeErr is the answer expected to the finalize call.
	FinalizeErr error

	mu sync.Mutex
	ns *v1.Namespace
}

// NewPlanNamespaces plans over ns, which it never changes.
func NewPlanNamespaces(ns *v1.Namespace) *PlanNamespaces {
	return &PlanNamespaces{ns: ns.DeepCopy()}
}

var _ NamespaceClient = (*PlanNamespaces)(nil)

// Get returns the namespace, or NotFound once it is gone.
func (p *PlanNamespaces) Get(_ context.Context, name string, _ metav1.GetOptions) (*v1.Namespace, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ns == nil || p.ns.Name != name {
		return nil, apierrors.NewNotFound(v1.Resource("namespaces"), name)
	}
	return p.ns.DeepCopy(), nil
}

// Finalize sets spec.finalizers as the finalize subresource does.
func (p *PlanNamespaces) Finalize(_ context.Context, ns *v1.Namespace, _ metav1.UpdateOptions) (*v1.Namespace, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.FinalizeErr != nil {
		return nil, p.FinalizeErr
	}
	if p.ns == nil {
		return nil, apierrors.NewNotFound(v1.Resource("namespaces"), ns.Name)
	}
	p.ns.Spec.Finalizers = slices.Clone(ns.Spec.Finalizers)
	out := p.ns.DeepCopy()
	p.goneIfFinalized()
	return out, nil
}

// RemoveMetadataFinalizers plays the patch that empties the namespace's
// own metadata.finalizers.
func (p *PlanNamespaces) RemoveMetadataFinalizers() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ns != nil {
		p.ns.Finalizers = nil
		p.goneIfFinalized()
	}
}

func (p *PlanNamespaces) goneIfFinalized() {
	if p.ns.DeletionTimestamp != nil && len(p.ns.Spec.Finalizers) == 0 && len(p.ns.Finalizers) == 0 {
		p.ns = nil
	}
}
