// Package watch is ns-doctor's long-running mode, built as a controller:
// a shared informer on namespaces (nothing per object) feeds a
// rate-limited work queue; each namespace terminating for longer than
// After is diagnosed with explain's engine (internal/inspect), again when
// it changes and on every resync, and forgotten when it goes. What a
// diagnosis finds goes to an Event on the namespace, to the metrics, and
// to whoever listens (OnChange). The opt-in janitor (janitor.go) runs
// purge's engine on the namespaces its selector chooses. It returns data;
// the command layer gives the words (Words) and prints.
package watch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/inspect"
	"github.com/ns-doctor/ns-doctor/internal/kube"
	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// Event reasons, on the namespace (stored in default: a terminating
// namespace accepts no new Event).
const (
	ReasonStuck          = "NamespaceStuck"
	ReasonPurgePlanned   = "NamespacePurgePlanned"
	ReasonPurged         = "NamespacePurged"
	ReasonPurgeFailed    = "NamespacePurgeFailed"
	eventSourceComponent = "ns-doctor-watch"
)

// Options are watch's flags, as the engine needs them.
type Options struct {
	// After is how long a namespace terminates before it is diagnosed.
	After time.Duration
	// Resync is how often every terminating namespace is diagnosed again.
	Resync time.Duration
	// Workers diagnose that many namespaces at once.
	Workers int
	// Inspect applies to every diagnosis (grace, deletion order).
	Inspect inspect.Options
	// Janitor is nil unless --purge-selector was given.
	Janitor *JanitorOptions
}

// Words says a diagnosis and a janitor run for Events; the command layer
// gives them (internal/printer), the engine only returns data.
type Words interface {
	Stuck(r diagnose.Report) string
	Janitor(r *purge.Report, err error) string
}

// Change is a diagnosis that differs from the namespace's last one, or a
// namespace that went: what OnChange receives.
type Change struct {
	Namespace string
	At        time.Time
	// Report is nil when the namespace is gone (or no longer terminating).
	Report *diagnose.Report
	// Terminating is how long the namespace had been terminating.
	Terminating time.Duration
	// Janitor is the janitor's run on it, when there was one.
	Janitor *JanitorRun
}

// JanitorRun is one janitor run: its report and error.
type JanitorRun struct {
	Report *purge.Report
	Err    error
}

// Watcher is the controller. Fill the exported fields, then Run.
type Watcher struct {
	Clients *kube.Clients
	Opts    Options
	Words   Words
	Metrics *Metrics
	// Recorder writes the Events; nil records none.
	Recorder record.EventRecorder
	// OnChange hears every changed diagnosis, gone namespace and janitor
	// run; nil: nobody listens.
	OnChange func(Change)
	// Now is the clock; nil is time.Now.
	Now func() time.Time

	queue  workqueue.TypedRateLimitingInterface[string]
	lister corelisters.NamespaceLister
	state  *state

	// janitorQueue holds the namespaces offered to the janitor.
	janitorQueue workqueue.TypedInterface[string]

	mu    sync.Mutex
	round *round
}

func (w *Watcher) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

// Start runs the namespace informer until ctx ends and returns once its
// cache has synced: from then on the metrics are served and the replica
// is ready, whether it leads or not.
func (w *Watcher) Start(ctx context.Context) error {
	if w.state == nil {
		w.state = newState()
	}
	w.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "namespaces"})
	w.janitorQueue = workqueue.NewTyped[string]()
	go func() {
		<-ctx.Done()
		w.queue.ShutDown()
		w.janitorQueue.ShutDown()
	}()
	// Only namespaces: content is swept for the terminating ones alone,
	// when they are diagnosed.
	factory := informers.NewSharedInformerFactory(w.Clients.Kube, w.Opts.Resync)
	inf := factory.Core().V1().Namespaces()
	w.lister = inf.Lister()
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.enqueue(obj) },
		UpdateFunc: func(_, obj any) { w.enqueue(obj) },
		DeleteFunc: func(obj any) { w.enqueue(obj) },
	}); err != nil {
		return fmt.Errorf("watching namespaces: %w", err)
	}
	if w.Metrics != nil {
		w.Metrics.bind(w.lister, w.state, w.now)
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("listing %v: the cache did not sync (%w)", typ, context.Cause(ctx))
		}
	}
	return nil
}

// enqueue adds a namespace's name; the worker reads the latest state from
// the lister, so repeated changes collapse into one diagnosis.
func (w *Watcher) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	w.queue.Add(key)
}

// Work diagnoses the queued namespaces until ctx ends: on the leader only,
// when leader election is on.
func (w *Watcher) Work(ctx context.Context) {
	workers := max(w.Opts.Workers, 1)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { wait.UntilWithContext(ctx, w.worker, time.Second) })
	}
	if w.Opts.Janitor != nil {
		wg.Go(func() { w.janitorLoop(ctx) })
	}
	<-ctx.Done()
	wg.Wait()
}

func (w *Watcher) worker(ctx context.Context) {
	for w.processNext(ctx) {
	}
}

func (w *Watcher) processNext(ctx context.Context) bool {
	key, quit := w.queue.Get()
	if quit {
		return false
	}
	defer w.queue.Done(key)
	if ctx.Err() != nil {
		// A queue shut down still hands out what it holds: thousands of
		// namespaces left would each start a diagnosis bound to fail.
		return false
	}
	if err := w.sync(ctx, key); err != nil {
		if ctx.Err() == nil {
			utilruntime.HandleErrorWithContext(ctx, err, "diagnosing a namespace", "namespace", key)
			w.queue.AddRateLimited(key)
		}
		return true
	}
	w.queue.Forget(key)
	return true
}

// sync is one namespace's turn: forgotten when gone or no longer
// terminating, put back for later before After, else diagnosed.
func (w *Watcher) sync(ctx context.Context, name string) error {
	ns, err := w.lister.Get(name)
	if apierrors.IsNotFound(err) || err == nil && ns.DeletionTimestamp == nil {
		w.forget(name)
		return nil
	}
	if err != nil {
		return err
	}
	age := w.now().Sub(ns.DeletionTimestamp.Time)
	if age < w.Opts.After {
		w.queue.AddAfter(name, w.Opts.After-age)
		return nil
	}
	report, err := w.diagnose(ctx, ns)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err // stopping: a report cut short is no report
	}
	change := w.state.set(name, report)
	if report.Verdict.State == diagnose.StateStuck && w.Recorder != nil {
		w.Recorder.Event(namespaceRef(ns), v1.EventTypeWarning, ReasonStuck, w.Words.Stuck(report))
	}
	if change && w.OnChange != nil {
		w.OnChange(Change{Namespace: name, At: w.now(), Report: &report, Terminating: age})
	}
	w.offerJanitor(ns, age)
	return nil
}

// diagnose runs explain's engine on one namespace, timing it.
func (w *Watcher) diagnose(ctx context.Context, ns *v1.Namespace) (diagnose.Report, error) {
	started := time.Now()
	in, err := w.inspector(ctx)
	var report diagnose.Report
	if err == nil {
		report, err = in.ExplainSince(ctx, ns, w.state.earlierRead(ns.Name), w.Opts.Inspect)
	}
	if w.Metrics != nil {
		w.Metrics.diagnosed(time.Since(started), err)
	}
	if err != nil {
		w.dropInspector()
		return report, fmt.Errorf("diagnosing namespace %s: %w", ns.Name, err)
	}
	return report, nil
}

// round is the inspector a resync round's diagnoses share, and its census.
type round struct {
	in *inspect.Inspector
	at time.Time
	// ready is closed once the census is read (or could not be).
	ready chan struct{}
}

// inspector is shared by the diagnoses of one resync round: one discovery,
// one read of webhooks, CRDs and APIServices, and, over enough terminating
// namespaces, one census of their content (a list per type across the
// cluster, as the namespace controller's informers read it) serve them
// all; a namespace changed since the census is read on its own. A newer
// one is made once it is three quarters of a resync old: the first
// diagnosis of each resync round reads the API as it is, and the round's
// others share it (half a resync split a round of ten thousand namespaces
// over two censuses). The diagnoses wait for its census, or for ctx.
func (w *Watcher) inspector(ctx context.Context) (*inspect.Inspector, error) {
	w.mu.Lock()
	r := w.round
	if r == nil || w.now().Sub(r.at) >= 3*w.Opts.Resync/4 {
		r = &round{in: inspect.New(w.Clients, inspect.Config{Compact: true}), at: w.now(), ready: make(chan struct{})}
		w.round = r
		w.mu.Unlock()
		defer close(r.ready)
		if nss := w.terminating(); len(nss) >= inspect.CensusMin {
			// Without a census (no permission to read APIServices, say),
			// each namespace is read on its own, as before.
			_, _ = r.in.TakeCensusOfContent(ctx, nss)
		}
		return r.in, ctx.Err()
	}
	w.mu.Unlock()
	select {
	case <-r.ready:
		return r.in, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the round's census: %w", context.Cause(ctx))
	}
}

// terminating are the namespaces the informer has seen terminating for
// After: those a round diagnoses.
func (w *Watcher) terminating() []v1.Namespace {
	all, _ := w.lister.List(labels.Everything())
	var out []v1.Namespace
	for _, ns := range all {
		if ns.DeletionTimestamp != nil && w.now().Sub(ns.DeletionTimestamp.Time) >= w.Opts.After {
			out = append(out, *ns)
		}
	}
	return out
}

func (w *Watcher) dropInspector() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.round = nil
}

// forget drops a namespace that went (or stopped terminating): its series
// go with it.
func (w *Watcher) forget(name string) {
	w.queue.Forget(name)
	if w.state.remove(name) && w.OnChange != nil {
		w.OnChange(Change{Namespace: name, At: w.now()})
	}
}

// namespaceRef is the Event's object: a Namespace, which client-go's
// recorder files under default.
func namespaceRef(ns *v1.Namespace) *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Namespace", APIVersion: "v1", Name: ns.Name, UID: ns.UID, ResourceVersion: ns.ResourceVersion}
}

// ErrLostLease ends a leader that lost its Lease: it stops diagnosing at
// once, and the process exits so that it comes back as a standby.
var ErrLostLease = errors.New("lost the leader election Lease")
