package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/test/support/scenario"
)

// size is one fixture: Types namespaced resource types served in total
// (built-ins plus generated CRDs) and Objects objects spread over them.
type size struct {
	Name    string
	Types   int
	Objects int
}

var sizes = map[string]size{
	"small":  {"small", 40, 200},
	"medium": {"medium", 150, 10_000},
	"large":  {"large", 150, 100_000},
}

// sizeOf reads a size flag: a name of sizes, or a number of objects
// spread over 150 types (a quick check of a phase, e.g. 1000).
func sizeOf(name string) (size, error) {
	if s, ok := sizes[name]; ok {
		return s, nil
	}
	if n, err := strconv.Atoi(name); err == nil && n > 0 {
		return size{Name: name, Types: 150, Objects: n}, nil
	}
	return size{}, fmt.Errorf("unknown size %q (small, medium, large, or a number of objects)", name)
}

// mustSize is sizeOf for a flag main has already checked.
func mustSize(name string) size {
	s, err := sizeOf(name)
	if err != nil {
		panic(err)
	}
	return s
}

const (
	benchGroup = "bench.ns-doctor.io"
	// holdFinalizer is never removed by anyone: its objects stay, as an
	// uninstalled operator's would.
	holdFinalizer = "bench.ns-doctor.io/hold"
	// createWorkers bounds concurrent creates: enough to keep both cores
	// busy, few enough to stay clear of priority and fairness rejections.
	createWorkers = 32
)

// fixtures creates content fast: the same clients as the scenarios, with
// a client rate limit high enough that the API server is the bottleneck.
type fixtures struct {
	*scenario.Cluster
	disco discovery.DiscoveryInterface
	dyn   dynamic.Interface
	kube  kubernetes.Interface
	cfg   *rest.Config
	crds  []schema.GroupVersionResource // generated so far, in order
}

func newFixtures(cfg *rest.Config) (*fixtures, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 1000, 2000
	cl, err := scenario.NewCluster(cfg)
	if err != nil {
		return nil, err
	}
	d, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &fixtures{Cluster: cl, disco: d, dyn: cl.Dynamic, kube: cl.Kube, cfg: cfg}, nil
}

// ensureTypes generates CRDs until discovery serves want namespaced,
// listable resource types (the count explain and the recipe both walk).
func (f *fixtures) ensureTypes(ctx context.Context, want int) error {
	lists, err := discovery.ServerPreferredNamespacedResources(f.disco)
	if err != nil {
		return err
	}
	have := 0
	for _, rl := range discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list"}}, lists) {
		have += len(rl.APIResources)
	}
	missing := want - have
	if missing <= 0 {
		return nil
	}
	start := len(f.crds)
	f.crds = append(f.crds, make([]schema.GroupVersionResource, missing)...)
	// EnsureCRD waits for each to serve; 8 at a time hides that wait.
	return parallel(ctx, missing, 8, func(i int) error {
		n := start + i
		gvr, err := f.EnsureCRD(ctx, benchGroup, fmt.Sprintf("Thing%03d", n), fmt.Sprintf("thing%03ds", n))
		f.crds[n] = gvr
		return err
	})
}

// kindOf turns a generated CRD's plural back into its kind.
func kindOf(gvr schema.GroupVersionResource) string {
	return "Thing" + gvr.Resource[len("thing"):len(gvr.Resource)-1]
}

// content says what goes into one namespace.
type content struct {
	Objects        int
	FinalizerEvery int // every n-th object carries holdFinalizer; 0 none
	Pods           int // pods bound to a node that does not exist
}

// populate creates ns (Active) and its content: objects round-robin over
// ConfigMaps, Secrets and every generated CRD, then the pods. Content must
// exist before the namespace is deleted (NamespaceLifecycle).
func (f *fixtures) populate(ctx context.Context, ns string, c content) error {
	if err := f.CreateNamespace(ctx, ns); err != nil {
		return err
	}
	slots := len(f.crds) + 2
	var created atomic.Int64
	err := parallel(ctx, c.Objects, createWorkers, func(i int) error {
		name := fmt.Sprintf("obj-%06d", i)
		var fin []string
		if c.FinalizerEvery > 0 && i%c.FinalizerEvery == 0 {
			fin = []string{holdFinalizer}
		}
		meta := metav1.ObjectMeta{Name: name, Namespace: ns, Finalizers: fin, Labels: map[string]string{"bench": "yes"}}
		var err error
		switch slot := i % slots; slot {
		case 0:
			_, err = f.kube.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"k": name}}, metav1.CreateOptions{})
		case 1:
			_, err = f.kube.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{ObjectMeta: meta, StringData: map[string]string{"k": name}}, metav1.CreateOptions{})
		default:
			gvr := f.crds[slot-2]
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": gvr.GroupVersion().String(), "kind": kindOf(gvr),
				"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"bench": "yes"}},
				"spec":     map[string]any{"index": int64(i)},
			}}
			obj.SetFinalizers(fin)
			_, err = f.dyn.Resource(gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
		}
		if err == nil {
			created.Add(1)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("populating %s (%d created): %w", ns, created.Load(), err)
	}
	// Grace periods vary so the controller's estimate has something to read.
	return parallel(ctx, c.Pods, createWorkers, func(i int) error {
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%03d", i), Namespace: ns},
			Spec: v1.PodSpec{
				NodeName:                      "node-gone",
				TerminationGracePeriodSeconds: ptr.To(int64(30 + 30*(i%10))),
				Containers:                    []v1.Container{{Name: "main", Image: "registry.invalid/none"}},
			},
		}
		_, err := f.kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
}

// parallel runs fn(0..n-1) on workers goroutines and returns the first
// error, after which the remaining items are skipped.
func parallel(ctx context.Context, n, workers int, fn func(i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, max(n, 1)) {
		wg.Go(func() {
			for i := range next {
				if err := fn(i); err != nil {
					cancel(err)
				}
			}
		})
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}

// since is a helper for the fixture timings written to the report.
func since(t time.Time) float64 { return time.Since(t).Seconds() }

// listPages counts the namespaced types a sweep walks (list and delete
// verbs, preferred versions) and the pages of 500 their lists take.
func (f *fixtures) listPages(ctx context.Context, ns string) (types, pages int, err error) {
	lists, err := discovery.ServerPreferredNamespacedResources(f.disco)
	if err != nil {
		return 0, 0, err
	}
	md, err := metadata.NewForConfig(f.cfg)
	if err != nil {
		return 0, 0, err
	}
	for _, rl := range discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list", "delete"}}, lists) {
		gv, err := schema.ParseGroupVersion(rl.GroupVersion)
		if err != nil {
			return 0, 0, err
		}
		for _, r := range rl.APIResources {
			types++
			opts := metav1.ListOptions{Limit: 500}
			for {
				l, err := md.Resource(gv.WithResource(r.Name)).Namespace(ns).List(ctx, opts)
				if err != nil {
					return 0, 0, err
				}
				pages++
				if opts.Continue = l.Continue; opts.Continue == "" {
					break
				}
			}
		}
	}
	return types, pages, nil
}
