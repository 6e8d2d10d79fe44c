// Package await waits for namespaces to be deleted, watching them (not
// polling), and reports each one's progress as it changes. It never writes
// and never prints: its caller renders what it reports.
package await

import (
	"context"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Waiter waits for namespaces to go.
type Waiter struct {
	Client kubernetes.Interface
	// Status reads what holds a namespace still there (a diagnosis); it
	// is called when the namespace changes, and every Refresh meanwhile,
	// since its content changing does not change the namespace object.
	Status  func(ctx context.Context, ns *v1.Namespace) string
	Refresh time.Duration
	// OnStatus receives each status as it changes, and OnGone each
	// namespace as it goes.
	OnStatus func(name, status string)
	OnGone   func(name string)
}

// Wait returns once every namespace of names is gone (nil), or when ctx
// ends, with the names still there.
func (w *Waiter) Wait(ctx context.Context, names []string) ([]string, error) {
	// A name given twice is one namespace, awaited and reported once:
	// otherwise its one deletion would leave the other in wait.
	seen := map[string]bool{}
	names = slices.DeleteFunc(slices.Clone(names), func(name string) bool {
		dup := seen[name]
		seen[name] = true
		return dup
	})
	st := &state{left: slices.Clone(names), objects: map[string]*v1.Namespace{}}
	events := make(chan struct{}, 1)
	stop := w.watch(ctx, names, st, events)
	defer stop()
	refresh := time.NewTicker(w.refresh())
	defer refresh.Stop()
	for {
		left := st.remaining()
		if len(left) == 0 {
			return nil, nil
		}
		w.statuses(ctx, st, left)
		select {
		case <-ctx.Done():
			return st.remaining(), ctx.Err()
		case <-events:
		case <-refresh.C:
		}
	}
}

func (w *Waiter) refresh() time.Duration {
	if w.Refresh > 0 {
		return w.Refresh
	}
	return 5 * time.Second
}

// statuses asks each namespace still there for its status.
func (w *Waiter) statuses(ctx context.Context, st *state, left []string) {
	if w.Status == nil || w.OnStatus == nil {
		return
	}
	var wg sync.WaitGroup
	for _, name := range left {
		ns := st.object(name)
		if ns == nil {
			continue
		}
		wg.Go(func() { w.OnStatus(name, w.Status(ctx, ns)) })
	}
	wg.Wait()
}

// watch follows the namespaces with an informer (list, then watch,
// re-listing after a broken watch), signalling events on each change.
func (w *Waiter) watch(ctx context.Context, names []string, st *state, events chan<- struct{}) func() {
	selector := fields.Everything()
	if len(names) == 1 {
		selector = fields.OneTermEqualSelector("metadata.name", names[0])
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = selector.String()
			return w.Client.CoreV1().Namespaces().List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = selector.String()
			return w.Client.CoreV1().Namespaces().Watch(ctx, opts)
		},
	}
	signal := func() {
		select {
		case events <- struct{}{}:
		default:
		}
	}
	_, informer := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw, ObjectType: &v1.Namespace{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { st.set(obj.(*v1.Namespace)); signal() },
			UpdateFunc: func(_, obj any) { st.set(obj.(*v1.Namespace)); signal() },
			DeleteFunc: func(obj any) {
				if ns := namespaceOf(obj); ns != nil && st.gone(ns.Name) && w.OnGone != nil {
					w.OnGone(ns.Name)
				}
				signal()
			},
		},
	})
	ctx, cancel := context.WithCancel(ctx)
	go informer.RunWithContext(ctx)
	// Namespaces the first list does not return are gone already.
	if cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		for _, name := range names {
			if st.object(name) == nil && st.gone(name) && w.OnGone != nil {
				w.OnGone(name)
			}
		}
		signal()
	}
	return cancel
}

func namespaceOf(obj any) *v1.Namespace {
	switch o := obj.(type) {
	case *v1.Namespace:
		return o
	case cache.DeletedFinalStateUnknown:
		ns, _ := o.Obj.(*v1.Namespace)
		return ns
	}
	return nil
}

// state is what the watch has seen of the namespaces waited for.
type state struct {
	mu      sync.Mutex
	left    []string
	objects map[string]*v1.Namespace
}

func (s *state) set(ns *v1.Namespace) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.Contains(s.left, ns.Name) {
		s.objects[ns.Name] = ns
	}
}

// gone records a namespace's end; it tells whether it was still awaited.
func (s *state) gone(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.Index(s.left, name)
	if i < 0 {
		return false
	}
	s.left = slices.Delete(s.left, i, i+1)
	delete(s.objects, name)
	return true
}

func (s *state) object(name string) *v1.Namespace {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.objects[name]
}

func (s *state) remaining() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.left)
}
