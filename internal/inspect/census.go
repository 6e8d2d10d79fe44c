package inspect

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// CensusMin is how many terminating namespaces make a census worth it: below,
// listing each namespace's types costs less than listing each type across
// the cluster.
const CensusMin = 8

// Census is one metadata sweep per resource type across the cluster, for
// many namespaces at once: which of them hold which types. A terminating
// namespace accepts no new object in a type kube-apiserver serves itself
// (NamespaceLifecycle admission refuses it, CRDs included), so a type such
// a namespace did not hold when the census read it, it never holds again:
// its reads and passes need not ask. Types of aggregated APIs (their
// servers may admit creates) and types the census could not list across
// the cluster are always asked.
type Census struct {
	// covered are the namespaces already terminating before the census
	// began.
	covered map[string]bool
	counts  *kube.Counts
	// local are the group-versions kube-apiserver serves itself.
	local map[schema.GroupVersion]bool
}

// Skips tells whether namespace certainly holds nothing of gvr.
func (c *Census) Skips(namespace string, gvr schema.GroupVersionResource) bool {
	if c == nil || !c.covered[namespace] || !c.local[gvr.GroupVersion()] {
		return false
	}
	counts, listed := c.counts.ByType[gvr]
	return listed && counts[namespace] == 0
}

// Holds is how many objects of gvr namespace held at the census, and
// whether the census knows.
func (c *Census) Holds(namespace string, gvr schema.GroupVersionResource) (int, bool) {
	if c.Skips(namespace, gvr) {
		return 0, true
	}
	if c == nil || !c.covered[namespace] {
		return 0, false
	}
	n, listed := c.counts.ByType[gvr][namespace]
	return n, listed
}

// TakeCensus reads a census of the namespaces given (those already
// terminating are covered; read them before calling) and makes this
// inspector's observations use it. Without the APIServices (no permission
// to read them) it cannot tell local types from aggregated ones: it
// returns an error and nothing changes.
func (i *Inspector) TakeCensus(ctx context.Context, namespaces []v1.Namespace) (*Census, error) {
	c := &Census{covered: map[string]bool{}, local: map[schema.GroupVersion]bool{}}
	for _, ns := range namespaces {
		if ns.DeletionTimestamp != nil {
			c.covered[ns.Name] = true
		}
	}
	if len(c.covered) == 0 {
		return nil, fmt.Errorf("no terminating namespace to take a census of")
	}
	disc, err := i.Discover(ctx)
	if err != nil {
		return nil, err
	}
	svcs, err := i.clients.Aggregator.ApiregistrationV1().APIServices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading APIServices for a census: %w", err)
	}
	for _, s := range svcs.Items {
		if s.Spec.Service == nil {
			c.local[schema.GroupVersion{Group: s.Spec.Group, Version: s.Spec.Version}] = true
		}
	}
	var gvrs []schema.GroupVersionResource
	for gvr, r := range disc.DeletableResources() {
		if hasVerb(r.Verbs, "list") && c.local[gvr.GroupVersion()] {
			gvrs = append(gvrs, gvr)
		}
	}
	c.counts = kube.CountByNamespace(ctx, i.clients, gvrs, func(ns string) bool { return c.covered[ns] })
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	i.mu.Lock()
	i.census = c
	i.mu.Unlock()
	return c, nil
}

// Census is the census this inspector's observations use (nil: none).
func (i *Inspector) Census() *Census {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.census
}
