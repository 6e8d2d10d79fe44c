package kube

import (
	"context"
	"maps"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
)

// Counts is what a census read: per resource, how many objects each
// chosen namespace holds (a namespace holding none is absent), or the
// error listing it across the cluster failed with; and, when asked
// (CensusContent), what a sweep of each chosen namespace alone would have
// kept of it.
type Counts struct {
	ByType map[schema.GroupVersionResource]map[string]int
	Errs   map[schema.GroupVersionResource]error
	// kept are, per namespace, a sweep's Items and Omitted (Lists) of the
	// types it holds; nil without CensusContent.
	kept map[string]*Lists
}

// CensusContent asks a census to keep, for each chosen namespace, what a
// sweep of it alone would keep (its SweepOptions, which depend on the
// namespace: KeepOlderThan is its creation time).
type CensusContent func(namespace string) SweepOptions

// CountByNamespace lists every given resource across the cluster, metadata
// only and paged, and counts the objects of the namespaces chosen accepts:
// one request per page and type, whatever the number of namespaces, and
// memory for the counts only, or, with content, for what each namespace's
// own sweep would keep (the objects that hold it and a few examples). A
// failing resource (no permission to list it cluster-wide, an API down)
// is recorded, not fatal.
func CountByNamespace(ctx context.Context, c *Clients, gvrs []schema.GroupVersionResource, chosen func(namespace string) bool, content CensusContent) *Counts {
	out := &Counts{ByType: map[schema.GroupVersionResource]map[string]int{}, Errs: map[schema.GroupVersionResource]error{}}
	if content != nil {
		out.kept = map[string]*Lists{}
	}
	var mu sync.Mutex
	workqueue.ParallelizeUntil(context.WithoutCancel(ctx), sweepConcurrency, len(gvrs), func(i int) {
		gvr := gvrs[i]
		counts, keepers := map[string]int{}, map[string]*keeper{}
		err := eachMetadata(ctx, c.SweepMetadata(), gvr, "", func(item *metav1.PartialObjectMetadata) {
			ns := item.Namespace
			if !chosen(ns) {
				return
			}
			counts[ns]++
			if content == nil {
				return
			}
			k := keepers[ns]
			if k == nil {
				k = content(ns).keeper(gvr)
				keepers[ns] = k
			}
			k.add(item)
		})
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			out.Errs[gvr] = err
			return
		}
		out.ByType[gvr] = counts
		for ns, k := range keepers {
			l := out.kept[ns]
			if l == nil {
				l = &Lists{Items: map[schema.GroupVersionResource]*metav1.PartialObjectMetadataList{}, Omitted: map[schema.GroupVersionResource]int{}}
				out.kept[ns] = l
			}
			l.Items[gvr] = k.list
			if k.omitted > 0 {
				l.Omitted[gvr] = k.omitted
			}
		}
	})
	return out
}

// Lists is what the census kept of namespace, as a sweep of it alone
// would have read it, for the resources the census listed (those it holds
// none of as empty lists); the others are left out (nil: the census kept
// no content). Not safe for use concurrent with Forget.
func (c *Counts) Lists(namespace string) *Lists {
	if c == nil || c.kept == nil {
		return nil
	}
	held := c.kept[namespace]
	out := &Lists{Items: make(map[schema.GroupVersionResource]*metav1.PartialObjectMetadataList, len(c.ByType)), Errs: map[schema.GroupVersionResource]error{}, Omitted: map[schema.GroupVersionResource]int{}}
	// One allocation for the empty lists: ten thousand namespaces each
	// hold a few of fifty types.
	empty := make([]metav1.PartialObjectMetadataList, len(c.ByType))
	k := 0
	for gvr := range c.ByType {
		if l, ok := held.itemsOf(gvr); ok {
			out.Items[gvr] = l
			continue
		}
		out.Items[gvr] = &empty[k]
		k++
	}
	if held != nil {
		out.Omitted = held.Omitted
	}
	return out
}

func (l *Lists) itemsOf(gvr schema.GroupVersionResource) (*metav1.PartialObjectMetadataList, bool) {
	if l == nil {
		return nil, false
	}
	list, ok := l.Items[gvr]
	return list, ok
}

// With is l and what more adds (its types not in l), as one read; more
// may be nil.
func (l *Lists) With(more *Lists) *Lists {
	out := &Lists{Items: map[schema.GroupVersionResource]*metav1.PartialObjectMetadataList{}, Errs: map[schema.GroupVersionResource]error{}, Omitted: map[schema.GroupVersionResource]int{}}
	for _, from := range []*Lists{more, l} {
		if from == nil {
			continue
		}
		maps.Copy(out.Items, from.Items)
		maps.Copy(out.Errs, from.Errs)
		maps.Copy(out.Omitted, from.Omitted)
	}
	return out
}

// Has tells whether l read gvr (a nil l read nothing).
func (l *Lists) Has(gvr schema.GroupVersionResource) bool {
	if l == nil {
		return false
	}
	_, ok := l.Items[gvr]
	return ok
}

// Forget drops what the census kept of namespace (its counts stay):
// content handed out once is not held for the rest of a long run.
func (c *Counts) Forget(namespace string) {
	if c != nil {
		delete(c.kept, namespace)
	}
}
