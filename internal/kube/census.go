package kube

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/pager"
	"k8s.io/client-go/util/workqueue"
)

// Counts is what a census read: per resource, how many objects each
// chosen namespace holds (a namespace holding none is absent), or the
// error listing it across the cluster failed with.
type Counts struct {
	ByType map[schema.GroupVersionResource]map[string]int
	Errs   map[schema.GroupVersionResource]error
}

// CountByNamespace lists every given resource across the cluster, metadata
// only and paged, and counts the objects of the namespaces chosen accepts:
// one request per page and type, whatever the number of namespaces, and
// memory for the counts only. A failing resource (no permission to list it
// cluster-wide, an API down) is recorded, not fatal.
func CountByNamespace(ctx context.Context, c *Clients, gvrs []schema.GroupVersionResource, chosen func(namespace string) bool) *Counts {
	out := &Counts{ByType: map[schema.GroupVersionResource]map[string]int{}, Errs: map[schema.GroupVersionResource]error{}}
	var mu sync.Mutex
	workqueue.ParallelizeUntil(context.WithoutCancel(ctx), sweepConcurrency, len(gvrs), func(i int) {
		gvr := gvrs[i]
		counts := map[string]int{}
		p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return c.SweepMetadata().Resource(gvr).List(ctx, opts)
		})
		p.PageSize = listPageSize
		err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
			if ns := obj.(*metav1.PartialObjectMetadata).Namespace; chosen(ns) {
				counts[ns]++
			}
			return nil
		})
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			out.Errs[gvr] = err
			return
		}
		out.ByType[gvr] = counts
	})
	return out
}
