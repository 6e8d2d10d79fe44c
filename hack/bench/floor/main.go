// Command floor is the benchmark's lower bound, the least work any tool must do
// over the same connection (benchmarks.md.tmpl tells both): by default
// explain's, a discovery then a paged sweep of metadata lists with ns-doctor's
// rate limit, concurrency and page size, printing the objects left; with -purge
// purge's, every type's deletecollection at once, the finalize call, then a GET
// until the namespace is gone, printing the types. Over many namespaces (-l):
// with -census, explain's list view's (discovery, the namespaces list, one
// cluster-wide metadata list of every type, paged; with -types, no
// discovery and those types only: the types known to hold the content),
// printing the objects of the terminating namespaces selected; with -writes, purge -l's (the same
// reads, then for each namespace its types' deletecollection, a PATCH
// removing -finalizer from each object holding it, and the finalize call,
// -at-once namespaces at a time, no client-side rate limit), printing the
// requests the API server refused with 429.
//
// Usage: KUBECONFIG=... floor [-purge] [-v=6] NAMESPACE
//
//	floor -census [-types RESOURCE[.GROUP/VERSION],...] [-l SELECTOR]
//	floor -writes [-at-once N] -l SELECTOR -finalizer NAME
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
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
	census := flag.Bool("census", false, "explain's list view's floor over the terminating namespaces -l selects")
	writes := flag.Bool("writes", false, "purge -l's floor over the terminating namespaces -l selects, removing -finalizer")
	selector := flag.String("l", "", "the namespaces of -census (empty: every one) and -writes (a label selector)")
	finalizer := flag.String("finalizer", "", "the finalizer -writes removes")
	only := flag.String("types", "", "-census: list only these types (configmaps, or widgets.example.com/v1), no discovery")
	flag.IntVar(&atOnce, "at-once", 0, "-writes: namespaces written at once (0: all of them)")
	klog.InitFlags(nil) // -v=6 logs every request, as in kubectl
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: floor [-purge] [-v=6] NAMESPACE\n       floor -census [-types LIST] [-l SELECTOR]\n       floor -writes [-at-once N] -l SELECTOR -finalizer NAME")
	}
	flag.Parse()
	many := *census || *writes
	if many && (flag.NArg() != 0 || *writes && (*selector == "" || *finalizer == "")) || !many && flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	floor := sweep
	switch {
	case *purge:
		floor = purgeFloor
	case *census:
		floor = func(ctx context.Context, cfg *rest.Config, _ string) (int64, error) {
			return censusFloor(ctx, cfg, *selector, *only)
		}
	case *writes:
		floor = func(ctx context.Context, cfg *rest.Config, _ string) (int64, error) {
			return writesFloor(ctx, cfg, *selector, *finalizer)
		}
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(), nil).ClientConfig()
	var n int64
	if err == nil {
		cfg.QPS, cfg.Burst, cfg.WarningHandler = 100, 1000, rest.NoWarnings{} // ns-doctor's raised limit
		if many {
			// What the API server admits: its priority and fairness, no
			// client-side limit (ns-doctor's, once it sees the server runs it).
			cfg.QPS, cfg.Burst = -1, 0
		}
		n, err = floor(context.Background(), cfg, flag.Arg(0))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
	fmt.Println(n)
}

// discover is one discovery: namespaced types with all of verbs, and theirs.
// Groups that fail are left out, as every tool must (an APIService down).
func discover(cfg *rest.Config, verbs ...string) (map[schema.GroupVersionResource][]string, error) {
	lists, err := discovery.ServerPreferredNamespacedResources(discovery.NewDiscoveryClientForConfigOrDie(cfg))
	if discovery.IsGroupDiscoveryFailedError(err) {
		err = nil
	}
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

// held is what the cluster-wide lists found in the chosen namespaces: per
// namespace, the types holding something and the objects holding a given
// finalizer.
type held struct {
	mu      sync.Mutex
	objects int64
	types   map[string][]schema.GroupVersionResource
	holders map[string][]holder
}

type holder struct {
	gvr  schema.GroupVersionResource
	name string
}

// terminating lists the namespaces selector chooses that are being deleted.
func terminating(ctx context.Context, kube kubernetes.Interface, selector string) (map[string]*v1.Namespace, error) {
	list, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	out := map[string]*v1.Namespace{}
	for i := range list.Items {
		if ns := &list.Items[i]; ns.DeletionTimestamp != nil {
			out[ns.Name] = ns
		}
	}
	return out, nil
}

// census lists every listable, deletable type across the cluster once
// (paged, 48 at once, as ns-doctor's census) while the namespaces are
// listed, and notes what the chosen ones hold.
func census(ctx context.Context, cfg *rest.Config, selector, finalizer, only string) (map[string]*v1.Namespace, *held, error) {
	kube, meta := kubernetes.NewForConfigOrDie(cfg), metadata.NewForConfigOrDie(cfg)
	var chosen map[string]*v1.Namespace
	listed := make(chan error, 1)
	go func() {
		var err error
		chosen, err = terminating(ctx, kube, selector)
		listed <- err
	}()
	types, err := typesOf(cfg, only)
	if err = cmp.Or(<-listed, err); err != nil {
		return nil, nil, err
	}
	h := &held{types: map[string][]schema.GroupVersionResource{}, holders: map[string][]holder{}}
	var g errgroup.Group
	g.SetLimit(48)
	for gvr := range types {
		g.Go(func() error {
			p := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return meta.Resource(gvr).List(ctx, o)
			})
			p.PageSize = 500
			seen := map[string]bool{}
			err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
				m := obj.(*metav1.PartialObjectMetadata)
				if chosen[m.Namespace] == nil {
					return nil
				}
				h.mu.Lock()
				defer h.mu.Unlock()
				h.objects++
				if !seen[m.Namespace] {
					seen[m.Namespace] = true
					h.types[m.Namespace] = append(h.types[m.Namespace], gvr)
				}
				if finalizer != "" && slices.Contains(m.Finalizers, finalizer) {
					h.holders[m.Namespace] = append(h.holders[m.Namespace], holder{gvr, m.Name})
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("listing %s: %w", gvr, err)
			}
			return nil
		})
	}
	return chosen, h, g.Wait()
}

// censusFloor is explain's list view's floor: the objects the census found.
func censusFloor(ctx context.Context, cfg *rest.Config, selector, only string) (int64, error) {
	_, h, err := census(ctx, cfg, selector, "", only)
	if err != nil {
		return 0, err
	}
	return h.objects, nil
}

// writesFloor is purge -l's: every namespace's writes, all at once (the
// API server's priority and fairness queues them), each namespace's in
// order: its types' deletecollection, the PATCHes removing finalizer from
// each holder, then the finalize call. It returns the 429s counted.
func writesFloor(ctx context.Context, cfg *rest.Config, selector, finalizer string) (int64, error) {
	var rejected atomic.Int64
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return counting{rt, &rejected} })
	chosen, h, err := census(ctx, cfg, selector, finalizer, "")
	if err != nil {
		return 0, err
	}
	kube, meta := kubernetes.NewForConfigOrDie(cfg), metadata.NewForConfigOrDie(cfg)
	opts := metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	var g errgroup.Group
	if atOnce > 0 {
		g.SetLimit(atOnce)
	}
	for name, ns := range chosen {
		g.Go(func() error {
			for _, gvr := range h.types[name] {
				if err := meta.Resource(gvr).Namespace(name).DeleteCollection(ctx, opts, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
					return fmt.Errorf("%s in %s: %w", gvr, name, err)
				}
			}
			for _, o := range h.holders[name] {
				if _, err := meta.Resource(o.gvr).Namespace(name).Patch(ctx, o.name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
					return fmt.Errorf("%s %s/%s: %w", o.gvr, name, o.name, err)
				}
			}
			ns.Spec.Finalizers = nil
			if _, err := kube.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("finalize %s: %w", name, err)
			}
			return nil
		})
	}
	return rejected.Load(), g.Wait()
}

// atOnce bounds the namespaces -writes writes at once (0: none).
var atOnce int

// counting counts the answers 429 Too Many Requests (client-go retries them).
type counting struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c counting) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		c.n.Add(1)
	}
	return resp, err
}

// typesOf are the types only names (resource, or resource.group/version),
// or with none every listable, deletable type discovery lists.
func typesOf(cfg *rest.Config, only string) (map[schema.GroupVersionResource][]string, error) {
	if only == "" {
		return discover(cfg, "list", "delete")
	}
	out := map[schema.GroupVersionResource][]string{}
	for t := range strings.SplitSeq(only, ",") {
		gvr := schema.GroupVersionResource{Version: "v1", Resource: t}
		if name, gv, ok := strings.Cut(t, "/"); ok {
			resource, group, _ := strings.Cut(name, ".")
			gvr = schema.GroupVersionResource{Group: group, Version: gv, Resource: resource}
		}
		out[gvr] = nil
	}
	return out, nil
}
