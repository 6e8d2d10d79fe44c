package main

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"
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

// sizeOf reads a size: a name of sizes, or a number of objects over 150
// types (a quick check of a phase, e.g. 1000).
func sizeOf(name string) (size, error) {
	if n, err := strconv.Atoi(name); err == nil && n > 0 {
		return size{name, 150, n}, nil
	} else if s, ok := sizes[name]; ok {
		return s, nil
	}
	return size{}, fmt.Errorf("unknown size %q (small, medium, large, or a number of objects)", name)
}

// createWorkers bounds concurrent creates: enough to keep both cores busy,
// few enough to stay clear of priority and fairness rejections.
const createWorkers = 32

// fixtures creates content fast: the scenarios' clients, with a client
// rate limit high enough that the API server is the bottleneck; the
// guard's warnings at each of its DELETEs are not printed.
type fixtures struct {
	*scenario.Cluster
	disco discovery.DiscoveryInterface
	kinds []kind // ConfigMaps, Secrets, then every CRD generated so far
}

// kind is a namespaced type objects are made of.
type kind struct {
	gvr  schema.GroupVersionResource
	name string
}

func newFixtures(cfg *rest.Config) (*fixtures, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst, cfg.WarningHandler = 1000, 2000, rest.NoWarnings{}
	cl, err := scenario.NewCluster(cfg)
	if err != nil {
		return nil, err
	}
	d, err := discovery.NewDiscoveryClientForConfig(cfg)
	core := func(r, k string) kind { return kind{schema.GroupVersionResource{Version: "v1", Resource: r}, k} }
	return &fixtures{Cluster: cl, disco: d, kinds: []kind{core("configmaps", "ConfigMap"), core("secrets", "Secret")}}, err
}

func (f *fixtures) crds() int { return len(f.kinds) - 2 }

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
	start := len(f.kinds)
	f.kinds = append(f.kinds, make([]kind, want-have)...)
	// EnsureCRD waits for each to serve; 8 at a time hides that wait.
	return parallel(ctx, want-have, 8, func(i int) (err error) {
		k := &f.kinds[start+i]
		k.name = fmt.Sprintf("Thing%03d", start+i)
		k.gvr, err = f.EnsureCRD(ctx, "bench.ns-doctor.io", k.name, fmt.Sprintf("thing%03ds", start+i))
		return err
	})
}

// ensureCRD serves a CRD of its own besides the generated ones, for
// content's Of.
func (f *fixtures) ensureCRD(ctx context.Context, group, name, plural string) error {
	gvr, err := f.EnsureCRD(ctx, group, name, plural)
	f.kinds = append(f.kinds, kind{gvr, name})
	return err
}

// namespaces creates each of names with labels and content c, then
// deletes it unless active (content first: NamespaceLifecycle). With the
// namespace controller stopped the deleted stay Terminating with all they hold.
func (f *fixtures) namespaces(ctx context.Context, names []string, labels map[string]string, active bool, c content) error {
	workers := max(1, createWorkers/max(1, len(names)))
	return parallel(ctx, len(names), createWorkers, func(i int) error {
		err := f.CreateNamespaceWithLabels(ctx, names[i], labels)
		if err == nil {
			err = f.fill(ctx, names[i], c, workers)
		}
		if err == nil && !active {
			err = f.DeleteNamespace(ctx, names[i])
		}
		return err
	})
}

// content says what goes into each namespace of a fixture: Objects over
// ConfigMaps, Secrets and every generated CRD, every FinalizerEvery-th
// held by a finalizer nobody removes (as an uninstalled operator's); Pods
// bound to a node that does not exist; Held objects of kind Of (a
// ConfigMap unless set) held by Finalizer, and Plain ConfigMaps.
type content struct {
	Objects, FinalizerEvery, Pods, Held, Plain int    `json:",omitempty"`
	Of, Finalizer                              string `json:",omitempty"`
}

func (f *fixtures) fill(ctx context.Context, ns string, c content, workers int) error {
	held := f.kinds[:1]
	for _, k := range f.kinds {
		if k.gvr.GroupResource().String() == c.Of {
			held = []kind{k}
		}
	}
	for _, o := range []struct {
		prefix    string
		n, every  int
		kinds     []kind
		finalizer string
	}{{"obj", c.Objects, c.FinalizerEvery, f.kinds, "bench.ns-doctor.io/hold"}, {"held", c.Held, 1, held, c.Finalizer}, {"plain", c.Plain, 0, f.kinds[:1], ""}} {
		if err := parallel(ctx, o.n, workers, func(i int) error {
			k, name, payload := o.kinds[i%len(o.kinds)], fmt.Sprintf("%s-%06d", o.prefix, i), "data"
			if k.name == "Secret" {
				payload = "stringData"
			}
			obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": k.gvr.GroupVersion().String(), "kind": k.name, payload: map[string]any{"k": name}}}
			obj.SetName(name)
			obj.SetLabels(map[string]string{"bench": "yes"})
			if o.every > 0 && i%o.every == 0 {
				obj.SetFinalizers([]string{o.finalizer})
			}
			_, err := f.Dynamic.Resource(k.gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("populating %s: %w", ns, err)
		}
	}
	// Grace periods vary so the controller's estimate has something to read.
	return parallel(ctx, c.Pods, workers, func(i int) error {
		return f.CreateBoundPod(ctx, ns, fmt.Sprintf("pod-%03d", i), int64(30+30*(i%10)))
	})
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
