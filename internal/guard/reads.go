package guard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	authv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/inspect"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// DefaultRefresh is how old, at most, what a prediction reads once per
// inspector and no change announces is (a backend's endpoints, a node,
// an owner's logs).
const DefaultRefresh = 10 * time.Second

// decisive are the types whose change makes the warm inspector stale at
// once: what a prediction reads of them beside the namespace's content
// (webhooks, CRDs, APIServices and their Services, RBAC and the workloads
// owner inference reads). Until a new inspector is warm, predictions read
// afresh.
var decisive = []schema.GroupVersionResource{
	{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"},
	{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"},
	{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	{Version: "v1", Resource: "services"},
	{Group: "apps", Version: "v1", Resource: "deployments"},
	{Group: "apps", Version: "v1", Resource: "statefulsets"},
	{Group: "apps", Version: "v1", Resource: "daemonsets"},
}

// Reads are what the predictions read with, kept ready: an inspector over
// clients whose metadata lists come from informers across the cluster
// (kube.MetadataCache: the namespace being deleted is never listed in the
// path of its DELETE), its discovery and the rest read ahead. A new one is
// warmed in the background every Refresh, and at once when a decisive
// type changes, then swapped in whole. A prediction uses it only when
// nothing decisive changed since its warming began; else, as before the
// first is warm, it reads afresh.
type Reads struct {
	Clients *kube.Clients
	Refresh time.Duration
	// Notice hears, once, why the content is read per prediction after
	// all (no permission to watch); nil: nobody.
	Notice func(string)

	mu      sync.Mutex
	current *warm
	cache   *kube.MetadataCache
	// changes counts the changes of decisive types seen; changed wakes the
	// loop.
	changes atomic.Uint64
	changed chan struct{}
}

// warm is an inspector and the count of changes when its warming began.
type warm struct {
	in      *inspect.Inspector
	changes uint64
}

// Run keeps the reads fresh until ctx ends. Without permission to watch
// every type across the cluster, it keeps nothing: each prediction reads
// afresh, as before.
func (r *Reads) Run(ctx context.Context) {
	if err := canWatchAll(ctx, r.Clients); err != nil {
		if r.Notice != nil {
			r.Notice("the guard reads each namespace at each DELETE (" + err.Error() + "): grant watch on every resource (deploy/guard/rbac.yaml) to answer from informers")
		}
		return
	}
	cache := kube.NewMetadataCache(ctx, r.Clients)
	r.mu.Lock()
	r.cache, r.changed = cache, make(chan struct{}, 1)
	r.mu.Unlock()
	// A decisive type the server does not serve cannot change.
	_ = cache.Notify(kube.Served(ctx, r.Clients.Discovery, decisive), r.change)
	every := r.Refresh
	if every <= 0 {
		every = DefaultRefresh
	}
	var earlier *inspect.Inspector
	for {
		w := &warm{in: inspect.New(cache.Clients(), inspect.Config{Compact: true, Warnings: cache.Warnings}), changes: r.changes.Load()}
		if err := w.in.Warm(ctx, earlier); err == nil {
			cache.Watch(watchable(w.in))
			r.mu.Lock()
			r.current, earlier = w, w.in
			r.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-r.changed:
		case <-time.After(every):
		}
	}
}

func (r *Reads) change() {
	r.changes.Add(1)
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// Inspector is the warm inspector, nil before the first or while a
// decisive change is newer than it.
func (r *Reads) Inspector() *inspect.Inspector {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current == nil || r.current.changes != r.changes.Load() {
		return nil
	}
	return r.current.in
}

// canWatchAll asks the API server whether the guard may watch every
// resource across the cluster, as its informers do.
func canWatchAll(ctx context.Context, c *kube.Clients) error {
	review := &authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authv1.ResourceAttributes{
		Verb: "watch", Group: "*", Resource: "*"}}}
	got, err := c.Kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	switch {
	case err != nil:
		return fmt.Errorf("cannot tell whether it may watch every resource: %w", err)
	case !got.Status.Allowed:
		return errors.New("no permission to watch every resource")
	}
	return nil
}

// Synced tells how many of the types watched are synced, of how many.
func (r *Reads) Synced() (synced, watched int) {
	r.mu.Lock()
	cache := r.cache
	r.mu.Unlock()
	if cache == nil {
		return 0, 0
	}
	return cache.Synced()
}

// watchable are the types a prediction lists that can be watched.
func watchable(in *inspect.Inspector) []schema.GroupVersionResource {
	var out []schema.GroupVersionResource
	for gvr, r := range in.Discovery().DeletableResources() {
		if slices.Contains(r.Verbs, "list") && slices.Contains(r.Verbs, "watch") {
			out = append(out, gvr)
		}
	}
	return out
}
