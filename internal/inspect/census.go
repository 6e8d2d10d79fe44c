package inspect

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
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
	// events are each covered namespace's latest Warning events, read
	// across the cluster with the content (nil: not read).
	events map[string][]diagnose.Event
	// versions are the covered namespaces' resourceVersions as given: a
	// namespace changed since is read on its own, not from the census's
	// content.
	versions map[string]string
	// streamed is, in a streamed census, each namespace's content read so
	// far (streamCensus); nil otherwise.
	streamed map[string]*kube.Lists
	// mu guards the content handed out (taken), streamed and forgotten.
	mu    sync.Mutex
	taken map[string]bool
}

// Skips tells whether namespace certainly holds nothing of gvr.
func (c *Census) Skips(namespace string, gvr schema.GroupVersionResource) bool {
	if c == nil || c.counts == nil || !c.covered[namespace] || !c.local[gvr.GroupVersion()] {
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
	if c == nil || c.counts == nil || !c.covered[namespace] {
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
	return i.takeCensus(ctx, namespaces, false)
}

// TakeCensusOfContent is TakeCensus keeping, for each covered namespace,
// what its own sweep would keep, of every type listed across the cluster
// (aggregated ones too), and its Warning events: each namespace's
// observation then reads nothing of its own but the types the census
// could not list. Explain's list view over thousands of namespaces costs
// one list per type and page, as the namespace controller's informers do.
func (i *Inspector) TakeCensusOfContent(ctx context.Context, namespaces []v1.Namespace) (*Census, error) {
	return i.takeCensus(ctx, namespaces, true)
}

func (i *Inspector) takeCensus(ctx context.Context, namespaces []v1.Namespace, content bool) (*Census, error) {
	c, gvrs, keep, err := i.prepareCensus(ctx, namespaces, content)
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	if content {
		wg.Go(func() { c.events = i.clusterEvents(ctx, c.covered) })
	}
	c.counts = kube.CountByNamespace(ctx, i.clients, gvrs, func(ns string) bool { return c.covered[ns] }, keep)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	i.mu.Lock()
	i.census = c
	i.mu.Unlock()
	return c, nil
}

// prepareCensus reads what a census needs before its lists: the namespaces
// it covers, discovery, which APIs kube-apiserver serves itself, the types
// to list and, with content, what to keep of each namespace.
func (i *Inspector) prepareCensus(ctx context.Context, namespaces []v1.Namespace, content bool) (*Census, []schema.GroupVersionResource, kube.CensusContent, error) {
	c := &Census{covered: map[string]bool{}, local: map[schema.GroupVersion]bool{}, versions: map[string]string{}, taken: map[string]bool{}}
	created := map[string]time.Time{}
	for _, ns := range namespaces {
		if ns.DeletionTimestamp != nil {
			c.covered[ns.Name], created[ns.Name], c.versions[ns.Name] = true, ns.CreationTimestamp.Time, ns.ResourceVersion
		}
	}
	if len(c.covered) == 0 {
		return nil, nil, nil, fmt.Errorf("no terminating namespace to take a census of")
	}
	disc, err := i.Discover(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	svcs, err := i.clients.Aggregator.ApiregistrationV1().APIServices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading APIServices for a census: %w", err)
	}
	for _, s := range svcs.Items {
		if s.Spec.Service == nil {
			c.local[schema.GroupVersion{Group: s.Spec.Group, Version: s.Spec.Version}] = true
		}
	}
	var gvrs []schema.GroupVersionResource
	for gvr, r := range disc.DeletableResources() {
		if hasVerb(r.Verbs, "list") && (content || c.local[gvr.GroupVersion()]) {
			gvrs = append(gvrs, gvr)
		}
	}
	if !content {
		return c, gvrs, nil, nil
	}
	i.mu.Lock()
	sweep := i.sweepOptions()
	i.mu.Unlock()
	return c, gvrs, func(ns string) kube.SweepOptions {
		o := sweep
		o.KeepOlderThan = created[ns]
		return o
	}, nil
}

// streamCensus is TakeCensusOfContent handing out each namespace as soon
// as its content and the Warning events are read (kube.StreamByNamespace):
// handed hears it, and must not block. It returns the namespaces handed
// out that the census cannot vouch for after all: read them afresh. The
// census is this inspector's from the start, its counts never set: a
// type it did not read is listed by each namespace's own sweep.
func (i *Inspector) streamCensus(ctx context.Context, namespaces []v1.Namespace, handed func(namespace string)) (stale []string, err error) {
	c, gvrs, keep, err := i.prepareCensus(ctx, namespaces, true)
	if err != nil {
		return nil, err
	}
	c.streamed = map[string]*kube.Lists{}
	i.mu.Lock()
	i.census = c
	i.mu.Unlock()
	var (
		gate       sync.Mutex // orders the events' read before any hand-out
		eventsRead bool
		waiting    []string
		wg         sync.WaitGroup
	)
	wg.Go(func() {
		events := i.clusterEvents(ctx, c.covered)
		gate.Lock()
		defer gate.Unlock()
		c.events, eventsRead = events, true
		for _, ns := range waiting {
			handed(ns)
		}
	})
	var chosen []string
	for ns := range c.covered {
		chosen = append(chosen, ns)
	}
	ordered := func(gvr schema.GroupVersionResource) bool { return c.local[gvr.GroupVersion()] }
	kube.StreamByNamespace(ctx, i.clients, gvrs, chosen, keep, ordered, func(ns string, l *kube.Lists) {
		c.mu.Lock()
		if l == nil {
			delete(c.streamed, ns)
			stale = append(stale, ns)
		} else {
			c.streamed[ns] = l
		}
		c.mu.Unlock()
		if l == nil {
			return
		}
		gate.Lock()
		defer gate.Unlock()
		if eventsRead {
			handed(ns)
		} else {
			waiting = append(waiting, ns)
		}
	})
	wg.Wait()
	return stale, ctx.Err()
}

// content is what the census kept of ns, as its own sweep would have
// read it (the types it could not list across the cluster left out); nil
// when the census kept no content of it, ns changed since, or it was
// handed out already: it is then forgotten, so that a census of ten
// thousand namespaces does not hold them all until the last is explained.
func (c *Census) content(ns *v1.Namespace) *kube.Lists {
	if !c.current(ns) {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.taken[ns.Name] {
		return nil
	}
	c.taken[ns.Name] = true
	if c.streamed != nil {
		l := c.streamed[ns.Name]
		delete(c.streamed, ns.Name)
		return l
	}
	l := c.counts.Lists(ns.Name)
	c.counts.Forget(ns.Name)
	return l
}

// eventsOf are ns's Warning events as the census read them, and whether
// it did (and ns is as it was then).
func (c *Census) eventsOf(ns *v1.Namespace) ([]diagnose.Event, bool) {
	if !c.current(ns) || c.events == nil {
		return nil, false
	}
	return c.events[ns.Name], true
}

// current tells whether the census covers ns as it is.
func (c *Census) current(ns *v1.Namespace) bool {
	return c != nil && ns != nil && c.covered[ns.Name] && c.versions[ns.Name] == ns.ResourceVersion
}

// Census is the census this inspector's observations use (nil: none).
func (i *Inspector) Census() *Census {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.census
}
