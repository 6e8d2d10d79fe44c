// Command floor is the benchmark's lower bound for explain: the least work
// any tool must do to say what is left in a namespace. One discovery, then
// one concurrent, paged sweep of metadata lists, counting items; no
// diagnosis, no output beyond the count. It uses the same client-go, rate
// limit, concurrency (16) and page size (500) as ns-doctor, so the gap
// between the two is ns-doctor's own overhead.
//
// Usage: KUBECONFIG=... floor NAMESPACE
package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/pager"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: floor NAMESPACE")
		os.Exit(2)
	}
	n, err := run(context.Background(), os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
	fmt.Println(n)
}

func run(ctx context.Context, ns string) (int64, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		clientcmd.NewDefaultClientConfigLoadingRules(), nil).ClientConfig()
	if err != nil {
		return 0, err
	}
	cfg.QPS, cfg.Burst = 100, 1000 // ns-doctor's raised limit
	cfg.WarningHandler = rest.NoWarnings{}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return 0, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	lists, err := discovery.ServerPreferredNamespacedResources(disco)
	if err != nil {
		return 0, err
	}
	var gvrs []schema.GroupVersionResource
	for _, rl := range discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list", "delete"}}, lists) {
		gv, _ := schema.ParseGroupVersion(rl.GroupVersion)
		for _, r := range rl.APIResources {
			gvrs = append(gvrs, gv.WithResource(r.Name))
		}
	}
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
