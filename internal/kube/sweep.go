package kube

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/pager"
	"k8s.io/client-go/util/workqueue"
)

// sweepConcurrency bounds parallel list requests: 150 resource types in
// about three round trips over a slow link (16 took ten: explain over a
// 50 ms link went from 1.75x to 1.10x the floor, docs/benchmarks.md); the
// API server's priority and fairness queues what exceeds our share.
const sweepConcurrency = 48

// listPageSize keeps each response small on namespaces with 100k objects.
const listPageSize = 500

// SweepOptions tune what a sweep keeps.
type SweepOptions struct {
	// Compact makes the sweep keep only the first KeepPlain plain objects
	// of each type and count the others in Snapshot.Omitted. Plain: no
	// finalizers, no deletionTimestamp, no owner references, and not a pod.
	// A deletion pass removes such objects at once, so nothing computed from a snapshot depends on them beyond
	// their number and a few example names; memory then grows with what
	// holds the namespace, not with its size.
	Compact   bool
	KeepPlain int
	// Whole names the resources kept object by object even when
	// compacting (pods: their estimate reads every one).
	Whole map[schema.GroupVersionResource]bool
	// KeepOlderThan keeps, when compacting, the objects created before it
	// too (content older than a re-created namespace).
	KeepOlderThan time.Time
	// Keep, when set, chooses the objects kept (and counts the others as
	// omitted) instead of compaction: a sweep of every namespace keeps
	// only the leftovers of namespaces that are gone.
	Keep func(*metav1.PartialObjectMetadata) bool
	// FinalizerFields, when set, keeps of an object with finalizers what
	// it returns of its managedFields (who set them), and says which of
	// the finalizers those entries own; nil keeps none: the managed fields
	// of every object can be most of a sweep's memory.
	FinalizerFields FinalizerFields
	// FinalizerFieldsPer, when above 0, keeps them only for the first that
	// many objects of a type whose kept entries own a given finalizer: who
	// set a finalizer is read from a few of its holders, and a type where
	// ten thousand objects hold one would otherwise keep them all.
	FinalizerFieldsPer int
}

// FinalizerFields keeps of an object's managedFields who set its
// finalizers, and names the finalizers the kept entries own.
type FinalizerFields func(managed []metav1.ManagedFieldsEntry, finalizers []string) (kept []metav1.ManagedFieldsEntry, owned []string)

// Lists is what a sweep read: per resource, the metadata list or the
// error listing it failed with, and how many plain objects a compact sweep
// counted without keeping.
type Lists struct {
	Items   map[schema.GroupVersionResource]*metav1.PartialObjectMetadataList
	Errs    map[schema.GroupVersionResource]error
	Omitted map[schema.GroupVersionResource]int
}

// Sweep lists every given resource in namespace ("": every namespace),
// metadata only and paged, with bounded concurrency. Pods too are read as metadata only: a pod's
// spec may carry secrets in env values. A failing resource is recorded,
// not fatal.
func Sweep(ctx context.Context, c *Clients, namespace string, gvrs []schema.GroupVersionResource, opts SweepOptions) *Lists {
	snap := &Lists{
		Items:   map[schema.GroupVersionResource]*metav1.PartialObjectMetadataList{},
		Errs:    map[schema.GroupVersionResource]error{},
		Omitted: map[schema.GroupVersionResource]int{},
	}
	var mu sync.Mutex
	// Every type is asked, whatever the context: a cancelled one fails its
	// list, and says so in Errs.
	workqueue.ParallelizeUntil(context.WithoutCancel(ctx), sweepConcurrency, len(gvrs), func(i int) {
		gvr := gvrs[i]
		k := opts.keeper(gvr)
		err := eachMetadata(ctx, c.SweepMetadata(), gvr, namespace, k.add)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			snap.Errs[gvr] = err
			return
		}
		snap.Items[gvr] = k.list
		if k.omitted > 0 {
			snap.Omitted[gvr] = k.omitted
		}
	})
	return snap
}

func keepAll(*metav1.PartialObjectMetadata) bool { return true }

// keeper is what a sweep keeps of one type's list in one namespace, and
// how many objects it counted without keeping.
type keeper struct {
	keep    func(*metav1.PartialObjectMetadata) bool
	fields  func(*metav1.PartialObjectMetadata) []metav1.ManagedFieldsEntry
	list    *metav1.PartialObjectMetadataList
	omitted int
}

// keeper is a fresh keeper of gvr's objects in one namespace, by o's rules.
func (o SweepOptions) keeper(gvr schema.GroupVersionResource) *keeper {
	k := &keeper{keep: keepAll, fields: o.fieldsKeeper(), list: &metav1.PartialObjectMetadataList{}}
	switch {
	case o.Keep != nil:
		k.keep = o.Keep
	case o.Compact && !o.Whole[gvr]:
		k.keep = keepInteresting(o.KeepPlain, o.KeepOlderThan)
	}
	return k
}

// add keeps item's trimmed metadata, or counts it as omitted.
func (k *keeper) add(item *metav1.PartialObjectMetadata) {
	if !k.keep(item) {
		k.omitted++
		return
	}
	meta := trimMeta(item.ObjectMeta)
	if k.fields != nil && len(item.Finalizers) > 0 {
		meta.ManagedFields = k.fields(item)
	}
	k.list.Items = append(k.list.Items, metav1.PartialObjectMetadata{TypeMeta: item.TypeMeta, ObjectMeta: meta})
}

// fieldsKeeper is FinalizerFields for one list, counting the objects kept
// per finalizer against FinalizerFieldsPer; nil when none are kept.
func (o SweepOptions) fieldsKeeper() func(*metav1.PartialObjectMetadata) []metav1.ManagedFieldsEntry {
	if o.FinalizerFields == nil {
		return nil
	}
	kept := map[string]int{}
	return func(item *metav1.PartialObjectMetadata) []metav1.ManagedFieldsEntry {
		wanted := item.Finalizers
		if o.FinalizerFieldsPer > 0 {
			wanted = nil
			for _, f := range item.Finalizers {
				if kept[f] < o.FinalizerFieldsPer {
					wanted = append(wanted, f)
				}
			}
			if len(wanted) == 0 {
				return nil
			}
		}
		entries, owned := o.FinalizerFields(item.ManagedFields, wanted)
		for _, f := range owned {
			kept[f]++
		}
		return entries
	}
}

// keepInteresting keeps every object that is not plain, and the first n
// plain ones (the examples a report shows, in list order).
func keepInteresting(n int, olderThan time.Time) func(*metav1.PartialObjectMetadata) bool {
	plain := 0
	return func(m *metav1.PartialObjectMetadata) bool {
		if len(m.Finalizers) > 0 || m.DeletionTimestamp != nil || len(m.OwnerReferences) > 0 || m.CreationTimestamp.Time.Before(olderThan) {
			return true
		}
		plain++
		return plain <= n
	}
}

// ListMetadata lists one resource in a namespace page by page, keeping
// only the metadata ns-doctor reads (managed fields and annotations can be
// most of an object's size).
func ListMetadata(ctx context.Context, client metadata.Interface, gvr schema.GroupVersionResource, namespace string) (*metav1.PartialObjectMetadataList, error) {
	k := SweepOptions{}.keeper(gvr)
	if err := eachMetadata(ctx, client, gvr, namespace, k.add); err != nil {
		return nil, err
	}
	return k.list, nil
}

// eachMetadata lists gvr in namespace ("": every namespace) page by page,
// handing each object to fn as it comes (fn must not keep or change it):
// from a MetadataCache's memory when it holds the type, no copy made.
func eachMetadata(ctx context.Context, client metadata.Interface, gvr schema.GroupVersionResource, namespace string, fn func(*metav1.PartialObjectMetadata)) error {
	if cached, ok := client.(cachedMetadata); ok {
		if objs, held := cached.m.objects(gvr, namespace); held {
			for _, o := range objs {
				fn(o)
			}
			return ctx.Err()
		}
	}
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return client.Resource(gvr).Namespace(namespace).List(ctx, opts)
	})
	p.PageSize = listPageSize
	return p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		fn(obj.(*metav1.PartialObjectMetadata))
		return nil
	})
}

func trimMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
		DeletionGracePeriodSeconds: m.DeletionGracePeriodSeconds,
		Labels:                     m.Labels, OwnerReferences: m.OwnerReferences, Finalizers: m.Finalizers,
	}
}

// PodLister lists pods with their spec, for the controller's grace-period
// estimate.
type PodLister struct{ Client kubernetes.Interface }

// ListPods lists the pods of namespace.
func (l PodLister) ListPods(ctx context.Context, namespace string) ([]v1.Pod, error) {
	list, err := l.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}
