// Command floor is the benchmark's lower bound for explain and for purge:
// the least work any tool must do over the same connection.
//
// explain's floor (the default) says what is left in a namespace: one
// discovery, then one concurrent, paged sweep of metadata lists, counting
// items; no diagnosis, no output beyond the count. It uses the same
// client-go, rate limit, concurrency (16) and page size (500) as
// ns-doctor, so the gap between the two is ns-doctor's own overhead.
//
// purge's floor (-purge) empties a terminating namespace and finishes it
// the fastest way the API allows: discovery (and a GET of the namespace,
// at the same time), then every deletable namespaced type's
// deletecollection sent at once, with no bound on concurrency and
// background propagation, then the namespace's finalize call with
// spec.finalizers emptied, then a GET until the namespace is gone. No
// permission check, no backup, no confirming list, no ordering: what no
// purge can beat over the same link. It prints the types it deleted.
//
// Usage: KUBECONFIG=... floor [-purge] [-v=6] NAMESPACE
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/pager"
	"k8s.io/klog/v2"
)

func main() {
	purge := flag.Bool("purge", false, "purge's floor: delete every type's collection at once, then finalize the namespace and wait for it to be gone")
	klog.InitFlags(nil) // -v=6 logs every request, as in kubectl
	flag.Usage = func() { fmt.Fprintln(os.Stderr, "usage: floor [-purge] [-v=6] NAMESPACE") }
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	ctx := context.Background()
	cfg, err := config()
	if err == nil {
		var n int64
		if *purge {
			n, err = purgeFloor(ctx, cfg, flag.Arg(0))
		} else {
			n, err = sweep(ctx, cfg, flag.Arg(0))
		}
		if err == nil {
			fmt.Println(n)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func config() (*rest.Config, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		clientcmd.NewDefaultClientConfigLoadingRules(), nil).ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 100, 1000 // ns-doctor's raised limit
	cfg.WarningHandler = rest.NoWarnings{}
	return cfg, nil
}

// discover is one discovery: the preferred version of every namespaced type.
func discover(cfg *rest.Config) ([]*metav1.APIResourceList, error) {
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return discovery.ServerPreferredNamespacedResources(disco)
}

// supporting picks the types that support all of verbs.
func supporting(lists []*metav1.APIResourceList, verbs ...string) []schema.GroupVersionResource {
	var gvrs []schema.GroupVersionResource
	for _, rl := range discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: verbs}, lists) {
		gv, _ := schema.ParseGroupVersion(rl.GroupVersion)
		for _, r := range rl.APIResources {
			gvrs = append(gvrs, gv.WithResource(r.Name))
		}
	}
	return gvrs
}

// sweep is explain's floor: it counts what is left in ns.
func sweep(ctx context.Context, cfg *rest.Config, ns string) (int64, error) {
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	lists, err := discover(cfg)
	if err != nil {
		return 0, err
	}
	gvrs := supporting(lists, "list", "delete")
	var total atomic.Int64
	var firstErr error
	var once sync.Once
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for _, gvr := range gvrs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			p := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return meta.Resource(gvr).Namespace(ns).List(ctx, o)
			})
			p.PageSize = 500
			err := p.EachListItem(ctx, metav1.ListOptions{}, func(runtime.Object) error {
				total.Add(1)
				return nil
			})
			if err != nil {
				once.Do(func() { firstErr = fmt.Errorf("listing %s: %w", gvr, err) })
			}
		})
	}
	wg.Wait()
	return total.Load(), firstErr
}

// purgeFloor is purge's floor: it empties the terminating namespace ns
// and finalizes it, returning the number of types it deleted.
func purgeFloor(ctx context.Context, cfg *rest.Config, ns string) (int64, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	// The namespace (for its finalize call) while discovery runs.
	var nsObj *v1.Namespace
	var getErr error
	var wg sync.WaitGroup
	wg.Go(func() { nsObj, getErr = kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}) })
	lists, err := discover(cfg)
	wg.Wait()
	if err != nil {
		return 0, err
	}
	if getErr != nil {
		return 0, getErr
	}
	if nsObj.DeletionTimestamp == nil {
		return 0, fmt.Errorf("namespace %s is not terminating", ns)
	}
	all := supporting(lists, "delete")
	hasCollection := map[schema.GroupVersionResource]bool{}
	for _, gvr := range supporting(lists, "deletecollection") {
		hasCollection[gvr] = true
	}

	bg := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &bg}
	var mu sync.Mutex
	var errs []error
	fail := func(gvr schema.GroupVersionResource, err error) {
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
			return
		}
		mu.Lock()
		errs = append(errs, fmt.Errorf("%s: %w", gvr, err))
		mu.Unlock()
	}
	var n int64
	for _, gvr := range all {
		r := meta.Resource(gvr).Namespace(ns)
		n++
		if hasCollection[gvr] {
			wg.Go(func() { fail(gvr, r.DeleteCollection(ctx, opts, metav1.ListOptions{})) })
			continue
		}
		// No deletecollection: list, then every item's delete at once.
		wg.Go(func() {
			l, err := r.List(ctx, metav1.ListOptions{})
			if err != nil {
				fail(gvr, err)
				return
			}
			var items sync.WaitGroup
			for _, it := range l.Items {
				items.Go(func() { fail(gvr, r.Delete(ctx, it.Name, opts)) })
			}
			items.Wait()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return n, err
	}

	nsObj.Spec.Finalizers = nil
	if _, err := kube.CoreV1().Namespaces().Finalize(ctx, nsObj, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return n, fmt.Errorf("finalize: %w", err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if time.Now().After(deadline) {
			return n, fmt.Errorf("namespace %s still there a minute after its finalize call", ns)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
