package await

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// patience bounds every wait on the code under test, so that a broken
// Waiter fails the test instead of hanging it; nothing is timed.
const patience = 30 * time.Second

// cluster is a fake API server of namespaces whose watches the test
// drives: each watch the Waiter opens is handed over on watches.
type cluster struct {
	client *fake.Clientset
	// watchList serves a watch asking for initial events as an API
	// server with watch-list does: the current namespaces, then the
	// bookmark ending them. Without it, such a watch is refused, as by
	// an older server, and the reflector lists first.
	watchList bool
	watches   chan *watch.FakeWatcher

	mu        sync.Mutex
	selectors []string // the field selector of every list and watch
}

func namespace(name string, labels ...string) *v1.Namespace {
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"}, Status: v1.NamespaceStatus{Phase: v1.NamespaceTerminating}}
	if len(labels) == 2 {
		ns.Labels = map[string]string{labels[0]: labels[1]}
	}
	return ns
}

func newCluster(t *testing.T, watchList bool, namespaces ...*v1.Namespace) *cluster {
	t.Helper()
	var objs []runtime.Object
	for _, ns := range namespaces {
		objs = append(objs, ns)
	}
	c := &cluster{client: fake.NewClientset(objs...), watchList: watchList, watches: make(chan *watch.FakeWatcher, 10)}
	c.client.PrependReactor("list", "namespaces", func(a clienttesting.Action) (bool, runtime.Object, error) {
		c.record(a.(clienttesting.ListAction).GetListRestrictions().Fields.String())
		return false, nil, nil // the tracker answers
	})
	c.client.PrependWatchReactor("namespaces", func(a clienttesting.Action) (bool, watch.Interface, error) {
		opts := a.(clienttesting.WatchActionImpl).ListOptions
		c.record(opts.FieldSelector)
		initial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
		if initial && !c.watchList {
			return true, nil, apierrors.NewBadRequest("sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled")
		}
		fw := watch.NewFakeWithChanSize(100, false)
		if initial {
			list, err := c.client.Tracker().List(v1.SchemeGroupVersion.WithResource("namespaces"), v1.SchemeGroupVersion.WithKind("Namespace"), "")
			if err != nil {
				t.Error(err)
			}
			for _, ns := range list.(*v1.NamespaceList).Items {
				fw.Add(&ns)
			}
			fw.Action(watch.Bookmark, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{
				ResourceVersion: "2", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"},
			}})
		}
		c.watches <- fw
		return true, fw, nil
	})
	return c
}

func (c *cluster) record(selector string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.selectors = append(c.selectors, selector)
}

// watch is the next watch the Waiter opened.
func (c *cluster) watch(t *testing.T) *watch.FakeWatcher {
	t.Helper()
	return receive(t, c.watches, "a watch")
}

func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(patience):
		t.Fatalf("no %s", what)
		panic("unreachable")
	}
}

type result struct {
	left []string
	err  error
}

// start runs w.Wait in the background.
func start(ctx context.Context, w *Waiter, names ...string) <-chan result {
	done := make(chan result, 1)
	go func() {
		left, err := w.Wait(ctx, names)
		done <- result{left, err}
	}()
	return done
}

// goneRecorder is an OnGone that hands each name over.
func goneRecorder() (func(string), chan string) {
	ch := make(chan string, 10)
	return func(name string) { ch <- name }, ch
}

func modes(t *testing.T, test func(t *testing.T, watchList bool)) {
	t.Helper()
	for _, watchList := range []bool{true, false} {
		t.Run(map[bool]string{true: "watch-list server", false: "list then watch"}[watchList], func(t *testing.T) {
			test(t, watchList)
		})
	}
}

// A namespace's Deleted event reports it gone and ends the wait; the one
// namespace waited for is the only one asked for.
func TestWaitEndsWhenTheNamespaceIsDeleted(t *testing.T) {
	modes(t, func(t *testing.T, watchList bool) {
		c := newCluster(t, watchList, namespace("doomed"), namespace("bystander"))
		onGone, gone := goneRecorder()
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		done := start(ctx, &Waiter{Client: c.client, OnGone: onGone}, "doomed")
		fw := c.watch(t)
		fw.Delete(namespace("bystander")) // the fake ignores the selector; the Waiter must too
		fw.Delete(namespace("doomed"))
		r := receive(t, done, "end of the wait")
		if r.left != nil || r.err != nil {
			t.Errorf("Wait = %v, %v; want nil, nil", r.left, r.err)
		}
		if name := receive(t, gone, "OnGone"); name != "doomed" {
			t.Errorf("OnGone(%q), want doomed", name)
		}
		if len(gone) != 0 {
			t.Errorf("OnGone called again, for %q", <-gone)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, s := range c.selectors {
			if s != "metadata.name=doomed" {
				t.Errorf("field selector %q, want metadata.name=doomed", s)
			}
		}
	})
}

// A namespace the first list does not return is gone already.
func TestWaitForANamespaceAlreadyGone(t *testing.T) {
	modes(t, func(t *testing.T, watchList bool) {
		c := newCluster(t, watchList, namespace("other"))
		onGone, gone := goneRecorder()
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		w := &Waiter{Client: c.client, OnGone: onGone,
			Status:   func(context.Context, *v1.Namespace) string { t.Error("Status called for nothing"); return "" },
			OnStatus: func(string, string) {}}
		r := receive(t, start(ctx, w, "vanished"), "end of the wait")
		if r.left != nil || r.err != nil {
			t.Errorf("Wait = %v, %v; want nil, nil", r.left, r.err)
		}
		if name := receive(t, gone, "OnGone"); name != "vanished" {
			t.Errorf("OnGone(%q), want vanished", name)
		}
	})
}

// Waiting for several namespaces watches them all, follows each one's
// deletion, ignores others', and when the context ends returns those
// still there with its error.
func TestWaitReturnsWhatIsLeftWhenTheContextEnds(t *testing.T) {
	modes(t, func(t *testing.T, watchList bool) {
		c := newCluster(t, watchList, namespace("a"), namespace("b"), namespace("c"), namespace("unrelated"))
		onGone, gone := goneRecorder()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := start(ctx, &Waiter{Client: c.client, OnGone: onGone}, "a", "b", "c")
		fw := c.watch(t)
		fw.Delete(namespace("unrelated"))
		fw.Delete(namespace("b"))
		if name := receive(t, gone, "OnGone"); name != "b" {
			t.Fatalf("OnGone(%q), want b", name)
		}
		cancel()
		r := receive(t, done, "end of the wait")
		if !slices.Equal(r.left, []string{"a", "c"}) || !errors.Is(r.err, context.Canceled) {
			t.Errorf("Wait = %q, %v; want [a c] and the cancellation", r.left, r.err)
		}
		if len(gone) != 0 {
			t.Errorf("OnGone also called for %q", <-gone)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, s := range c.selectors {
			if s != "" {
				t.Errorf("field selector %q for several namespaces, want none", s)
			}
		}
	})
}

// At the deadline, every namespace still there is returned.
func TestWaitPastItsDeadline(t *testing.T) {
	c := newCluster(t, true, namespace("a"), namespace("b"))
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	left, err := (&Waiter{Client: c.client}).Wait(ctx, []string{"a", "b"})
	if !slices.Equal(left, []string{"a", "b"}) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait = %q, %v; want [a b] and the deadline", left, err)
	}
}

type status struct{ name, text string }

// Status is asked for each namespace still there, with its latest object,
// and OnStatus receives the answer: at the start, and again when a
// namespace changes; a namespace gone is not asked for again.
func TestWaitReportsTheStatusOfWhatRemains(t *testing.T) {
	modes(t, func(t *testing.T, watchList bool) {
		c := newCluster(t, watchList, namespace("a", "step", "1"), namespace("b", "step", "1"))
		statuses := make(chan status, 100)
		onGone, gone := goneRecorder()
		w := &Waiter{
			Client: c.client,
			Status: func(_ context.Context, ns *v1.Namespace) string {
				return ns.Name + " at step " + ns.Labels["step"]
			},
			OnStatus: func(name, text string) { statuses <- status{name, text} },
			OnGone:   onGone,
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := start(ctx, w, "a", "b")
		// expect reads statuses until want came, and tells all it saw.
		expect := func(want status) []status {
			t.Helper()
			var seen []status
			for {
				s := receive(t, statuses, "status "+want.text)
				if s.text != s.name+" at step 1" && s.text != s.name+" at step 2" {
					t.Errorf("OnStatus(%q, %q): the status of another namespace", s.name, s.text)
				}
				seen = append(seen, s)
				if s == want {
					return seen
				}
			}
		}
		expect(status{"a", "a at step 1"})
		expect(status{"b", "b at step 1"})
		fw := c.watch(t)
		fw.Modify(namespace("a", "step", "2"))
		expect(status{"a", "a at step 2"})
		fw.Delete(namespace("a", "step", "2"))
		receive(t, gone, "OnGone")
		fw.Modify(namespace("b", "step", "2"))
		expect(status{"b", "b at step 2"})
		// Every round from now on is after a's end.
		fw.Modify(namespace("b", "step", "1"))
		for _, s := range expect(status{"b", "b at step 1"}) {
			if s.name == "a" {
				t.Errorf("status of a after it was gone: %q", s.text)
			}
		}
		cancel()
		if r := receive(t, done, "end of the wait"); !slices.Equal(r.left, []string{"b"}) {
			t.Errorf("left %q, want [b]", r.left)
		}
	})
}

// Without any event, the status is asked again every Refresh: what holds
// a namespace changes without changing the namespace.
func TestWaitRefreshesTheStatus(t *testing.T) {
	c := newCluster(t, true, namespace("a"))
	asked := make(chan struct{}, 100)
	w := &Waiter{
		Client:   c.client,
		Status:   func(context.Context, *v1.Namespace) string { asked <- struct{}{}; return "held" },
		OnStatus: func(string, string) {},
		Refresh:  time.Millisecond,
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := start(ctx, w, "a")
	for i := range 5 {
		receive(t, asked, "status "+string(rune('1'+i)))
	}
	cancel()
	receive(t, done, "end of the wait")
}

func TestRefreshDefault(t *testing.T) {
	if got := (&Waiter{}).refresh(); got != 5*time.Second {
		t.Errorf("default refresh %v, want 5s", got)
	}
	if got := (&Waiter{Refresh: time.Minute}).refresh(); got != time.Minute {
		t.Errorf("refresh %v, want the one set", got)
	}
}

// A namespace named twice is one namespace: reported gone once, and its
// deletion ends the wait. x, absent, tells when the first list was read.
func TestWaitForANamespaceNamedTwice(t *testing.T) {
	modes(t, func(t *testing.T, watchList bool) {
		c := newCluster(t, watchList, namespace("a"))
		onGone, gone := goneRecorder()
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		done := start(ctx, &Waiter{Client: c.client, OnGone: onGone}, "a", "x", "a", "x")
		fw := c.watch(t)
		if name := receive(t, gone, "OnGone"); name != "x" {
			t.Fatalf("OnGone(%q), want x", name)
		}
		fw.Delete(namespace("a"))
		r := receive(t, done, "end of the wait")
		if r.left != nil || r.err != nil {
			t.Errorf("Wait = %q, %v; want nil, nil", r.left, r.err)
		}
		names := []string{"x"}
		for len(gone) > 0 {
			names = append(names, <-gone)
		}
		if !slices.Equal(names, []string{"x", "a"}) {
			t.Errorf("OnGone called for %q, want [x a]", names)
		}
	})
}

// A namespace that went while the watch was down is known from the next
// list, as a deletion whose final state is unknown.
func TestNamespaceOf(t *testing.T) {
	ns := namespace("a")
	cases := []struct {
		obj  any
		want *v1.Namespace
	}{
		{ns, ns},
		{cache.DeletedFinalStateUnknown{Key: "a", Obj: ns}, ns},
		{cache.DeletedFinalStateUnknown{Key: "x", Obj: &v1.Pod{}}, nil},
		{&v1.Pod{}, nil},
		{nil, nil},
	}
	for _, tc := range cases {
		if got := namespaceOf(tc.obj); got != tc.want {
			t.Errorf("namespaceOf(%#v) = %v, want %v", tc.obj, got, tc.want)
		}
	}
}

// The same through the informer: the watch breaks (its resource version
// expired), the namespace is deleted meanwhile, and the relist ends it.
func TestWaitNoticesADeletionMissedByTheWatch(t *testing.T) {
	c := newCluster(t, false, namespace("a"))
	onGone, gone := goneRecorder()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	done := start(ctx, &Waiter{Client: c.client, OnGone: onGone}, "a")
	fw := c.watch(t)
	if err := c.client.Tracker().Delete(v1.SchemeGroupVersion.WithResource("namespaces"), "", "a"); err != nil {
		t.Fatal(err)
	}
	expired := apierrors.NewResourceExpired("too old resource version")
	fw.Error(&expired.ErrStatus)
	r := receive(t, done, "end of the wait")
	if r.left != nil || r.err != nil {
		t.Errorf("Wait = %q, %v; want nil, nil", r.left, r.err)
	}
	if name := receive(t, gone, "OnGone"); name != "a" {
		t.Errorf("OnGone(%q), want a", name)
	}
}
