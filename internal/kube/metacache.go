package kube

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// MetadataCache keeps the metadata of the types it is told to watch, from
// shared informers across the cluster (trimmed as a sweep trims, the
// managed fields kept only on objects with finalizers), and the Warning
// events: a long-running reader, such as the deletion guard, then answers
// from memory what a command would list. A type not synced yet, and any
// list with a selector, is read from the API server; so is everything but
// lists (a holder's status, a pod's node: one object each).
type MetadataCache struct {
	live      *Clients
	meta      metadatainformer.SharedInformerFactory
	events    cache.SharedIndexInformer
	ctx       context.Context
	mu        sync.Mutex
	informers map[schema.GroupVersionResource]cache.SharedIndexInformer
}

// NewMetadataCache starts the events' and pods' informers; Watch adds
// types. Everything stops when ctx ends.
func NewMetadataCache(ctx context.Context, c *Clients) *MetadataCache {
	m := &MetadataCache{live: c, ctx: ctx, informers: map[schema.GroupVersionResource]cache.SharedIndexInformer{},
		meta: metadatainformer.NewSharedInformerFactoryWithOptions(c.SweepMetadata(), 0, metadatainformer.WithTransform(trimCached))}
	warnings := informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("type", v1.EventTypeWarning).String()
	})
	events := informers.NewSharedInformerFactoryWithOptions(c.Kube, 0, warnings, informers.WithTransform(eventCached))
	m.events = events.Core().V1().Events().Informer()
	events.Start(ctx.Done())
	return m
}

// Watch makes the cache keep gvrs too (those it keeps already stay).
func (m *MetadataCache) Watch(gvrs []schema.GroupVersionResource) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, gvr := range gvrs {
		if m.informers[gvr] == nil {
			m.informers[gvr] = m.meta.ForResource(gvr).Informer()
		}
	}
	m.meta.Start(m.ctx.Done())
}

// Notify calls changed at each change of an object of gvrs (watched from
// then on), once each type has synced: its first list is no change.
func (m *MetadataCache) Notify(gvrs []schema.GroupVersionResource, changed func()) error {
	m.Watch(gvrs)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, gvr := range gvrs {
		_, err := m.informers[gvr].AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(_ any, initial bool) {
				if !initial {
					changed()
				}
			},
			UpdateFunc: func(any, any) { changed() },
			DeleteFunc: func(any) { changed() },
		})
		if err != nil {
			return fmt.Errorf("watching %s: %w", gvr, err)
		}
	}
	return nil
}

// Synced tells how many of the types watched are synced, of how many.
func (m *MetadataCache) Synced() (synced, watched int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, inf := range m.informers {
		if inf.HasSynced() {
			synced++
		}
	}
	return synced, len(m.informers)
}

// Clients are c's with their metadata lists answered by the cache.
func (m *MetadataCache) Clients() *Clients {
	out := *m.live
	out.Metadata, out.sweep = cachedMetadata{m}, cachedMetadata{m}
	return &out
}

// Warnings are namespace's Warning events, and whether the cache has them.
func (m *MetadataCache) Warnings(namespace string) ([]v1.Event, bool) {
	if !m.events.HasSynced() {
		return nil, false
	}
	objs, err := m.events.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return nil, false
	}
	out := make([]v1.Event, 0, len(objs))
	for _, o := range objs {
		out = append(out, *o.(*v1.Event))
	}
	return out, true
}

// synced is gvr's informer when it has synced.
func (m *MetadataCache) synced(gvr schema.GroupVersionResource) cache.SharedIndexInformer {
	m.mu.Lock()
	inf := m.informers[gvr]
	m.mu.Unlock()
	if inf == nil || !inf.HasSynced() {
		return nil
	}
	return inf
}

// trimCached keeps of an object what a sweep keeps, and its managed
// fields only when it has finalizers (who set them: owner inference).
func trimCached(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	meta := trimMeta(m.ObjectMeta)
	if len(m.Finalizers) > 0 {
		meta.ManagedFields = m.ManagedFields
	}
	return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: meta}, nil
}

// eventCached drops an event's managed fields.
func eventCached(obj any) (any, error) {
	if e, ok := obj.(*v1.Event); ok {
		e.ManagedFields = nil
	}
	return obj, nil
}

// cachedMetadata answers lists from the cache, the rest from the API.
type cachedMetadata struct{ m *MetadataCache }

func (c cachedMetadata) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	return cachedResource{m: c.m, gvr: gvr, ResourceInterface: c.m.live.SweepMetadata().Resource(gvr)}
}

type cachedResource struct {
	metadata.ResourceInterface
	m         *MetadataCache
	gvr       schema.GroupVersionResource
	namespace string
}

func (r cachedResource) Namespace(ns string) metadata.ResourceInterface {
	r.namespace, r.ResourceInterface = ns, r.m.live.SweepMetadata().Resource(r.gvr).Namespace(ns)
	return r
}

// List is the cache's when it holds the type and no selector is asked
// for: every object at once, in the API's order (namespace, then name).
func (r cachedResource) List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	objs, ok := r.m.objects(r.gvr, r.namespace)
	if !ok || opts.LabelSelector != "" || opts.FieldSelector != "" || opts.Continue != "" {
		return r.ResourceInterface.List(ctx, opts)
	}
	out := &metav1.PartialObjectMetadataList{Items: make([]metav1.PartialObjectMetadata, 0, len(objs))}
	for _, o := range objs {
		out.Items = append(out.Items, *o)
	}
	return out, nil
}

// objects are gvr's objects in namespace ("": all) as the cache holds
// them, in the API's order (namespace, then name), and whether it holds
// the type. They are the cache's own: callers must not change them.
func (m *MetadataCache) objects(gvr schema.GroupVersionResource, namespace string) ([]*metav1.PartialObjectMetadata, bool) {
	inf := m.synced(gvr)
	if inf == nil {
		return nil, false
	}
	objs := inf.GetStore().List()
	if namespace != "" {
		var err error
		if objs, err = inf.GetIndexer().ByIndex(cache.NamespaceIndex, namespace); err != nil {
			return nil, false
		}
	}
	out := make([]*metav1.PartialObjectMetadata, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*metav1.PartialObjectMetadata))
	}
	slices.SortFunc(out, func(a, b *metav1.PartialObjectMetadata) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out, true
}
