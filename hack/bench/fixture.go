package main

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/ns-doctor/ns-doctor/test/support/scenario"
)

// size is one fixture: Types namespaced resource types served in total
// (built-ins plus generated CRDs) and Objects objects spread over them.
type size struct {
	Name           string
	Types, Objects int
}

var sizes = map[string]size{"small": {"small", 40, 200}, "medium": {"medium", 150, 10_000}, "large": {"large", 150, 100_000}}

// sizeOf reads a size flag: a name of sizes, or a number of objects over
// 150 types (a quick check of a phase, e.g. 1000).
func sizeOf(name string) (size, error) {
	if n, err := strconv.Atoi(name); err == nil && n > 0 {
		return size{name, 150, n}, nil
	} else if s, ok := sizes[name]; ok {
		return s, nil
	}
	return size{}, fmt.Errorf("unknown size %q (small, medium, large, or a number of objects)", name)
}

func mustSize(name string) size { s, _ := sizeOf(name); return s } // checked by parseFlags

// createWorkers bounds concurrent creates: enough to keep both cores busy,
// few enough to stay clear of priority and fairness rejections.
const createWorkers = 32

// fixtures creates content fast: the scenarios' clients, with a client
// rate limit high enough that the API server is the bottleneck.
type fixtures struct {
	*scenario.Cluster
	disco discovery.DiscoveryInterface
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
	return &fixtures{Cluster: cl, disco: d}, err
}

// types counts the namespaced types a sweep walks: those that can be
// listed and deleted, in their preferred versions.
func (f *fixtures) types() (n int, err error) {
	lists, err := discovery.ServerPreferredNamespacedResources(f.disco)
	for _, rl := range discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list", "delete"}}, lists) {
		n += len(rl.APIResources)
	}
	return n, err
}

// ensureTypes generates CRDs until discovery serves want such types.
func (f *fixtures) ensureTypes(ctx context.Context, want int) error {
	have, err := f.types()
	if err != nil || have >= want {
		return err
	}
	start := len(f.crds)
	f.crds = append(f.crds, make([]schema.GroupVersionResource, want-have)...)
	// EnsureCRD waits for each to serve; 8 at a time hides that wait.
	return parallel(ctx, want-have, 8, func(i int) (err error) {
		f.crds[start+i], err = f.EnsureCRD(ctx, "bench.ns-doctor.io", fmt.Sprintf("Thing%03d", start+i), fmt.Sprintf("thing%03ds", start+i))
		return err
	})
}

// content says what goes into one namespace: objects, every n-th held by
// a finalizer nobody removes (as an uninstalled operator's), and pods
// bound to a node that does not exist.
type content struct{ Objects, FinalizerEvery, Pods int }

// populate creates ns (Active) and its content: objects round-robin over
// ConfigMaps, Secrets and every generated CRD, then the pods.
func (f *fixtures) populate(ctx context.Context, ns string, c content) error {
	if err := f.CreateNamespace(ctx, ns); err != nil {
		return err
	}
	err := parallel(ctx, c.Objects, createWorkers, func(i int) error {
		meta := metav1.ObjectMeta{Name: fmt.Sprintf("obj-%06d", i), Namespace: ns, Labels: map[string]string{"bench": "yes"}}
		if c.FinalizerEvery > 0 && i%c.FinalizerEvery == 0 {
			meta.Finalizers = []string{"bench.ns-doctor.io/hold"}
		}
		switch slot := i % (len(f.crds) + 2); slot {
		case 0:
			return f.CreateConfigMap(ctx, ns, meta.Name, meta.Labels, meta.Finalizers...)
		case 1:
			_, err := f.Kube.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{ObjectMeta: meta, StringData: map[string]string{"k": meta.Name}}, metav1.CreateOptions{})
			return err
		default:
			gvr := f.crds[slot-2]
			obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvr.GroupVersion().String(),
				"kind": "Thing" + strings.TrimSuffix(strings.TrimPrefix(gvr.Resource, "thing"), "s"), "spec": map[string]any{"index": int64(i)}}}
			obj.SetName(meta.Name)
			obj.SetLabels(meta.Labels)
			obj.SetFinalizers(meta.Finalizers)
			_, err := f.Dynamic.Resource(gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
			return err
		}
	})
	if err != nil {
		return fmt.Errorf("populating %s: %w", ns, err)
	}
	// Grace periods vary so the controller's estimate has something to read.
	return parallel(ctx, c.Pods, createWorkers, func(i int) error {
		return f.CreateBoundPod(ctx, ns, fmt.Sprintf("pod-%03d", i), int64(30+30*(i%10)))
	})
}

// stuckBatch creates namespaces with labels, fills each, then deletes it
// (content first: NamespaceLifecycle). With the namespace controller
// stopped they stay Terminating with all they hold.
func (f *fixtures) stuckBatch(ctx context.Context, names []string, labels map[string]string, fill func(ns string) error) error {
	return parallel(ctx, len(names), createWorkers, func(i int) error {
		if err := f.CreateNamespaceWithLabels(ctx, names[i], labels); err != nil {
			return err
		}
		if err := fill(names[i]); err != nil {
			return err
		}
		return f.DeleteNamespace(ctx, names[i])
	})
}

// configMaps creates n ConfigMaps prefix-0..n-1 in ns, held by finalizers.
func (f *fixtures) configMaps(ctx context.Context, ns, prefix string, n int, finalizers ...string) error {
	for j := range n {
		if err := f.CreateConfigMap(ctx, ns, fmt.Sprintf("%s-%03d", prefix, j), nil, finalizers...); err != nil {
			return err
		}
	}
	return nil
}

// gone fails naming the namespaces of selector still there: purge exits
// only once its namespaces are gone, so one left is a wrong result.
func (f *fixtures) gone(ctx context.Context, selector string) error {
	l, err := f.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil || len(l.Items) == 0 {
		return err
	}
	ns := l.Items[0]
	return fmt.Errorf("%d namespaces of %s still there after the commands exited, such as %s (%s, finalizers %v)", len(l.Items), selector, ns.Name, ns.Status.Phase, ns.Spec.Finalizers)
}

func (f *fixtures) waitGone(ctx context.Context, ns string, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := f.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// parallel runs fn(0..n-1) on workers goroutines and returns the first
// error, after which the items not started yet are skipped.
func parallel(ctx context.Context, n, workers int, fn func(i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i := 0; i < n && gctx.Err() == nil; i++ {
		g.Go(func() error { return fn(i) })
	}
	return cmp.Or(g.Wait(), ctx.Err())
}

// numbered is prefix-0..n-1, zero-padded to digits.
func numbered(prefix string, n, digits int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%0*d", prefix, digits, i)
	}
	return out
}

func since(t time.Time) float64 { return time.Since(t).Seconds() }
