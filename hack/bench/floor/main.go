// Command floor is the benchmark's lower bound, the least work any tool must do
// over the same connection (benchmarks.md.tmpl tells both): by default
// explain's, a discovery then a paged sweep of metadata lists with ns-doctor's
// rate limit, concurrency and page size, printing the objects left; with -purge
// purge's, every type's deletecollection at once, the finalize call, then a GET
// until the namespace is gone, printing the types.
//
// Usage: KUBECONFIG=... floor [-purge] [-v=6] NAMESPACE
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/pager"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
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
	floor := sweep
	if *purge {
		floor = purgeFloor
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(), nil).ClientConfig()
	var n int64
	if err == nil {
		cfg.QPS, cfg.Burst, cfg.WarningHandler = 100, 1000, rest.NoWarnings{} // ns-doctor's raised limit
		n, err = floor(context.Background(), cfg, flag.Arg(0))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
	fmt.Println(n)
}

// discover is one discovery: namespaced types with all of verbs, and theirs.
func discover(cfg *rest.Config, verbs ...string) (map[schema.GroupVersionResource][]string, error) {
	lists, err := discovery.ServerPreferredNamespacedResources(discovery.NewDiscoveryClientForConfigOrDie(cfg))
	types := map[schema.GroupVersionResource][]string{}
	for _, rl := range discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: verbs}, lists) {
		gv, _ := schema.ParseGroupVersion(rl.GroupVersion)
		for _, r := range rl.APIResources {
			types[gv.WithResource(r.Name)] = r.Verbs
		}
	}
	return types, err
}

// sweep is explain's floor: it counts what is left in ns.
func sweep(ctx context.Context, cfg *rest.Config, ns string) (int64, error) {
	meta := metadata.NewForConfigOrDie(cfg)
	types, err := discover(cfg, "list", "delete")
	if err != nil {
		return 0, err
	}
	var total atomic.Int64
	var g errgroup.Group
	g.SetLimit(16)
	for gvr := range types {
		g.Go(func() error {
			p := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return meta.Resource(gvr).Namespace(ns).List(ctx, o)
			})
			p.PageSize = 500
			err := p.EachListItem(ctx, metav1.ListOptions{}, func(runtime.Object) error {
				total.Add(1)
				return nil
			})
			if err != nil {
				return fmt.Errorf("listing %s: %w", gvr, err)
			}
			return nil
		})
	}
	return total.Load(), g.Wait()
}

// purgeFloor empties and finalizes the terminating namespace ns: its types.
func purgeFloor(ctx context.Context, cfg *rest.Config, ns string) (int64, error) {
	kube, meta := kubernetes.NewForConfigOrDie(cfg), metadata.NewForConfigOrDie(cfg)
	// Discovery while the namespace (for its finalize call) is read.
	var types map[schema.GroupVersionResource][]string
	var g errgroup.Group
	g.Go(func() (err error) {
		types, err = discover(cfg, "delete")
		return err
	})
	nsObj, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err = cmp.Or(g.Wait(), err); err != nil {
		return 0, err
	} else if nsObj.DeletionTimestamp == nil {
		return 0, fmt.Errorf("namespace %s is not terminating", ns)
	}
	opts := metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}
	// A type gone, or without the verb, is no error.
	check := func(gvr schema.GroupVersionResource, err error) error {
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
			return nil
		}
		return fmt.Errorf("%s: %w", gvr, err)
	}
	var dels errgroup.Group
	for gvr, verbs := range types {
		r := meta.Resource(gvr).Namespace(ns)
		dels.Go(func() error {
			if slices.Contains(verbs, "deletecollection") {
				return check(gvr, r.DeleteCollection(ctx, opts, metav1.ListOptions{}))
			}
			// No deletecollection: list, then every item's delete at once.
			l, err := r.List(ctx, metav1.ListOptions{})
			if err != nil {
				return check(gvr, err)
			}
			var items errgroup.Group
			for _, it := range l.Items {
				items.Go(func() error { return check(gvr, r.Delete(ctx, it.Name, opts)) })
			}
			return items.Wait()
		})
	}
	n := int64(len(types))
	if err := dels.Wait(); err != nil {
		return n, err
	}
	nsObj.Spec.Finalizers = nil
	if _, err := kube.CoreV1().Namespaces().Finalize(ctx, nsObj, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return n, fmt.Errorf("finalize: %w", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return n, fmt.Errorf("namespace %s, after its finalize call: %w", ns, err)
	}
	return n, nil
}
