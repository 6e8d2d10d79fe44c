package kube

import (
	"context"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
)

// Ready hears a namespace of a streamed census once every type's list has
// gone past it, with what a sweep of it alone would have kept (a type
// whose list failed before reaching it left out, for its reader to list).
// Nil lists: the census cannot vouch for what it handed out (an object of
// the namespace came after it, out of order); read it afresh. It is
// called with the census's lock held and must not block.
type Ready func(namespace string, lists *Lists)

// StreamByNamespace is CountByNamespace with content, handing out each
// chosen namespace as soon as its content is read rather than at the end:
// kube-apiserver lists the types it serves itself in key order
// (namespace, then name; a continue token resumes from a key), so once
// every such type's list has moved past a namespace, nothing more of it
// can come. Types not ordered (ordered says which: an aggregated API's
// server promises no order) hold every namespace until they end. Over ten
// thousand namespaces their diagnoses then run while the lists are still
// paging.
func StreamByNamespace(ctx context.Context, c *Clients, gvrs []schema.GroupVersionResource, chosen []string, content CensusContent,
	ordered func(schema.GroupVersionResource) bool, ready Ready) *Counts {
	s := newStream(gvrs, chosen, content, ready)
	out := &Counts{ByType: map[schema.GroupVersionResource]map[string]int{}, Errs: map[schema.GroupVersionResource]error{}}
	workqueue.ParallelizeUntil(context.WithoutCancel(ctx), sweepConcurrency, len(gvrs), func(i int) {
		gvr := gvrs[i]
		counts := map[string]int{}
		current := ""
		err := eachMetadata(ctx, c.SweepMetadata(), gvr, "", func(item *metav1.PartialObjectMetadata) {
			if item.Namespace != current {
				current = item.Namespace
				if ordered(gvr) {
					s.moved(gvr, keyOf(current))
				}
			}
			if s.chosen[item.Namespace] {
				counts[item.Namespace]++
				s.keep(gvr, item)
			}
		})
		s.ended(gvr, err)
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil {
			out.Errs[gvr] = err
			return
		}
		out.ByType[gvr] = counts
	})
	s.finish()
	return out
}

// keyOf is where a namespace's objects start in a type's key order: a
// namespace's objects sort before another's when its name and a slash do
// (a-b/x sorts before a/x).
func keyOf(namespace string) string { return namespace + "/" }

// stream is a census's progress: how far each type's list has gone, what
// it kept of each namespace not handed out yet, and which are.
type stream struct {
	ready   Ready
	content CensusContent
	chosen  map[string]bool

	mu sync.Mutex
	// marks: every namespace whose key sorts before a type's mark is
	// complete in that type; done types are out of it, failedAt the mark
	// a failed type had reached.
	marks    map[schema.GroupVersionResource]string
	done     map[schema.GroupVersionResource]bool
	failedAt map[schema.GroupVersionResource]string
	kept     map[schema.GroupVersionResource]map[string]*keeper
	gvrs     []schema.GroupVersionResource
	// empty are the lists of the types a namespace holds none of, one per
	// type shared by every namespace (read-only: nothing appends to a
	// snapshot's lists), where each namespace's own cost 80 MB at 10,000.
	empty []metav1.PartialObjectMetadataList
	// order is chosen in key order; next the first not handed out.
	order  []string
	next   int
	handed map[string]bool
	// stale were handed out before an object of theirs came.
	stale []string
}

func newStream(gvrs []schema.GroupVersionResource, chosen []string, content CensusContent, ready Ready) *stream {
	s := &stream{ready: ready, content: content, chosen: map[string]bool{}, marks: map[schema.GroupVersionResource]string{},
		done: map[schema.GroupVersionResource]bool{}, failedAt: map[schema.GroupVersionResource]string{},
		kept: map[schema.GroupVersionResource]map[string]*keeper{}, gvrs: gvrs, handed: map[string]bool{},
		empty: make([]metav1.PartialObjectMetadataList, len(gvrs))}
	for _, ns := range chosen {
		s.chosen[ns] = true
	}
	for _, gvr := range gvrs {
		s.kept[gvr] = map[string]*keeper{}
	}
	s.order = slices.Clone(chosen)
	slices.SortFunc(s.order, func(a, b string) int { return strings.Compare(keyOf(a), keyOf(b)) })
	return s
}

// keep adds item to what gvr kept of its namespace.
func (s *stream) keep(gvr schema.GroupVersionResource, item *metav1.PartialObjectMetadata) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns := item.Namespace
	if s.handed[ns] {
		s.stale = append(s.stale, ns)
		return
	}
	k := s.kept[gvr][ns]
	if k == nil {
		k = s.content(ns).keeper(gvr)
		s.kept[gvr][ns] = k
	}
	k.add(item)
}

// moved notes that gvr's list has reached mark, and hands out what that
// completes.
func (s *stream) moved(gvr schema.GroupVersionResource, mark string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if mark > s.marks[gvr] {
		s.marks[gvr] = mark
	}
	s.handOut()
}

// ended notes that gvr's list is over, failed or not.
func (s *stream) ended(gvr schema.GroupVersionResource, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done[gvr] = true
	if err != nil {
		s.failedAt[gvr] = s.marks[gvr]
	}
	s.handOut()
}

// handOut hands out, in key order, every namespace every type not ended
// has gone past.
func (s *stream) handOut() {
	low, bounded := "", false
	for _, gvr := range s.gvrs {
		if s.done[gvr] {
			continue
		}
		if m := s.marks[gvr]; !bounded || m < low {
			low, bounded = m, true
		}
	}
	for s.next < len(s.order) && (!bounded || keyOf(s.order[s.next]) < low) {
		ns := s.order[s.next]
		s.next++
		s.handed[ns] = true
		s.ready(ns, s.listsOf(ns))
	}
}

// listsOf is what the census read of ns, dropped from the stream.
func (s *stream) listsOf(ns string) *Lists {
	out := &Lists{Items: make(map[schema.GroupVersionResource]*metav1.PartialObjectMetadataList, len(s.gvrs)),
		Errs: map[schema.GroupVersionResource]error{}, Omitted: map[schema.GroupVersionResource]int{}}
	for n, gvr := range s.gvrs {
		if at, failed := s.failedAt[gvr]; failed && keyOf(ns) >= at {
			continue // its list failed before it got there: the reader lists it
		}
		k := s.kept[gvr][ns]
		if k == nil {
			out.Items[gvr] = &s.empty[n]
			continue
		}
		delete(s.kept[gvr], ns)
		out.Items[gvr] = k.list
		if k.omitted > 0 {
			out.Omitted[gvr] = k.omitted
		}
	}
	return out
}

// finish hands out the stale namespaces again, as unread.
func (s *stream) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handOut()
	slices.Sort(s.stale)
	for _, ns := range slices.Compact(s.stale) {
		s.ready(ns, nil)
	}
}
