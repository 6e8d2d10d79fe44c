package purge

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// maxWatchedTypes bounds the types watched between two passes; content
// left in more types waits as the controller's requeue would.
const maxWatchedTypes = 8

// contentGone is closed once nothing is left of the given types in the
// namespace. Between passes the controller requeues after half its
// estimate plus a second (8.5 s when content waits for its finalizers'
// owners, half the longest grace period while pods go first); the pass that
// finds the content gone can come as soon as it goes (a kubelet ends most
// pods well within their grace, a controller's finalizer goes within a
// second), or at once when it went during the pass. It is never closed
// when a type cannot be listed and watched, or there are too many: the
// wait then lasts as the controller's would.
func contentGone(ctx context.Context, c *kube.Clients, namespace string, types []schema.GroupVersionResource) <-chan struct{} {
	gone := make(chan struct{})
	if len(types) == 0 || len(types) > maxWatchedTypes {
		return gone
	}
	left := &leftover{names: map[string]bool{}, gone: gone}
	// Every type is listed first: content already gone (the usual after a
	// pass that stripped the last finalizers) needs no watch at all.
	lists := make([]*metav1.PartialObjectMetadataList, len(types))
	for i, gvr := range types {
		list, err := c.Metadata.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return gone
		}
		lists[i] = list
		for _, o := range list.Items {
			left.add(gvr.Resource + "/" + o.Name)
		}
	}
	if left.check() {
		return gone
	}
	var watches []watch.Interface
	for i, gvr := range types {
		w, err := c.Metadata.Resource(gvr).Namespace(namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: lists[i].ResourceVersion})
		if err != nil {
			for _, w := range watches {
				w.Stop()
			}
			return make(chan struct{}) // never closed: the wait lasts as the controller's would
		}
		watches = append(watches, w)
	}
	for i, w := range watches {
		go left.follow(types[i].Resource, w)
	}
	return gone
}

// leftover is what is left of the watched content; gone is closed when
// nothing is.
type leftover struct {
	mu     sync.Mutex
	names  map[string]bool
	gone   chan struct{}
	closed bool
}

func (l *leftover) add(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.names[key] = true
}

// follow reads one type's watch until it ends (the wait is over, or the
// content of every type is gone).
func (l *leftover) follow(resource string, w watch.Interface) {
	defer w.Stop()
	for ev := range w.ResultChan() {
		obj, ok := ev.Object.(*metav1.PartialObjectMetadata)
		if !ok {
			continue
		}
		l.mu.Lock()
		switch ev.Type {
		case watch.Added:
			l.names[resource+"/"+obj.Name] = true
		case watch.Deleted:
			delete(l.names, resource+"/"+obj.Name)
		}
		l.mu.Unlock()
		if l.check() {
			return
		}
	}
}

// check closes gone once nothing is left, and tells whether it is.
func (l *leftover) check() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.names) == 0 && !l.closed {
		close(l.gone)
		l.closed = true
	}
	return l.closed
}
