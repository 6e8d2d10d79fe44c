package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
)

// size is a fixture's: Types namespaced types served in all, Objects over them.
type size struct {
	Name           string
	Types, Objects int
}

var sizes = map[string]size{"small": {"small", 40, 200}, "medium": {"medium", 150, 10_000}, "large": {"large", 150, 100_000}}

// kind is a namespaced type objects are made of, and where their data goes.
type kind struct {
	gvr           schema.GroupVersionResource
	name, payload string
}

// types counts the namespaced types a sweep walks (list and delete).
func (b *bench) types() (n int, err error) {
	lists, err := discovery.ServerPreferredNamespacedResources(b.Kube.Discovery())
	for _, rl := range discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list", "delete"}}, lists) {
		n += len(rl.APIResources)
	}
	return n, err
}

// ensureTypes generates CRDs (8 at a time: each waits to serve) to want types.
func (b *bench) ensureTypes(ctx context.Context, want int) error {
	have, err := b.types()
	if err != nil || have >= want {
		return err
	}
	start := len(b.kinds)
	b.kinds = append(b.kinds, make([]kind, want-have)...)
	return parallel(ctx, want-have, 8, func(i int) (err error) {
		k := &b.kinds[start+i]
		k.name, k.payload = fmt.Sprintf("Thing%03d", start+i), "data"
		k.gvr, err = b.EnsureCRD(ctx, "bench.ns-doctor.io", k.name, fmt.Sprintf("thing%03ds", start+i))
		return err
	})
}

const createWorkers = 32 // both cores busy, clear of priority and fairness limits

// namespaces creates names with labels and c, then deletes them unless active
// (content first: NamespaceLifecycle): Terminating with all they hold.
func (b *bench) namespaces(ctx context.Context, names []string, labels map[string]string, active bool, c content) error {
	workers := max(1, createWorkers/max(1, len(names)))
	return parallel(ctx, len(names), createWorkers, func(i int) error {
		err := b.CreateNamespaceWithLabels(ctx, names[i], labels)
		if err == nil {
			err = b.populate(ctx, names[i], c, workers)
		}
		if err == nil && !active {
			err = b.DeleteNamespace(ctx, names[i])
		}
		return err
	})
}

// content is a fixture namespace's: Objects over every kind (each
// FinalizerEvery-th held), Pods bound to no node, Held of kind Of (ConfigMaps
// unless set) held by Finalizer, Plain ConfigMaps, Claims each bound to a
// PersistentVolume of its own (reclaim policy Delete).
type content struct {
	Objects, FinalizerEvery, Pods, Held, Plain, Claims int    `json:",omitempty"`
	Of, Finalizer                                      string `json:",omitempty"`
}

func (b *bench) populate(ctx context.Context, ns string, c content, workers int) error {
	held := b.kinds[:1]
	if i := slices.IndexFunc(b.kinds, func(k kind) bool { return k.gvr.GroupResource().String() == c.Of }); i >= 0 {
		held = b.kinds[i : i+1]
	}
	for _, o := range []struct {
		prefix    string
		n, every  int
		kinds     []kind
		finalizer string
	}{{"obj", c.Objects, c.FinalizerEvery, b.kinds, "bench.ns-doctor.io/hold"}, {"held", c.Held, 1, held, c.Finalizer}, {"plain", c.Plain, 0, b.kinds[:1], ""}} {
		if err := parallel(ctx, o.n, workers, func(i int) error {
			k, name := o.kinds[i%len(o.kinds)], fmt.Sprintf("%s-%06d", o.prefix, i)
			obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": k.gvr.GroupVersion().String(), "kind": k.name, k.payload: map[string]any{"k": name},
				"metadata": map[string]any{"name": name, "labels": map[string]any{"bench": "yes"}}}}
			if o.every > 0 && i%o.every == 0 {
				obj.SetFinalizers([]string{o.finalizer})
			}
			_, err := b.Dynamic.Resource(k.gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("populating %s: %w", ns, err)
		}
	}
	// Grace periods vary so the controller's estimate has something to read.
	if err := parallel(ctx, c.Pods, workers, func(i int) error {
		return b.CreateBoundPod(ctx, ns, fmt.Sprintf("pod-%03d", i), int64(30+30*(i%10)))
	}); err != nil {
		return err
	}
	return parallel(ctx, c.Claims, workers, func(i int) error { return b.claim(ctx, ns, fmt.Sprintf("data-%03d", i)) })
}

// claim creates a claim and a volume bound to each other by name (the PV
// binder need not run), reclaim policy Delete: what dynamic provisioning makes.
func (b *bench) claim(ctx context.Context, ns, name string) error {
	size, rwo := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name}, Spec: corev1.PersistentVolumeSpec{
		Capacity: size, AccessModes: rwo, PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + ns + "-" + name}},
		ClaimRef:               &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: name},
	}}
	_, err := b.Kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if err == nil {
		_, err = b.Kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: pv.Name, AccessModes: rwo, Resources: corev1.VolumeResourceRequirements{Requests: size}}}, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("creating claim %s/%s and its volume: %w", ns, name, err)
	}
	return nil
}

func (b *bench) waitGone(ctx context.Context, ns string, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := b.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// parallel runs fn(0..n-1) on workers goroutines until the first error.
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
