package inspect

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// namespacesAtOnce bounds the namespaces explained concurrently: each has
// its own bound of lists in flight, and the API server's priority and
// fairness queues what exceeds our share.
const namespacesAtOnce = 16

// ExplainAll explains many namespaces, in their order, several at a time:
// when there are enough of them, over a census streamed as it is read
// (each terminating namespace diagnosed once the lists across the cluster
// have gone past it, from what they read); else each reads its own. The
// first error ends it.
func (i *Inspector) ExplainAll(ctx context.Context, namespaces []v1.Namespace, opts Options) ([]diagnose.Report, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queue := make(chan int, 2*len(namespaces)+1)
	var stale []string
	var census sync.WaitGroup
	if len(namespaces) >= CensusMin && i.Census() == nil {
		census.Go(func() { stale = i.streamInto(ctx, namespaces, queue) })
	} else {
		for n := range namespaces {
			queue <- n
		}
		close(queue)
	}
	reports := make([]diagnose.Report, len(namespaces))
	var (
		mu       sync.Mutex
		firstErr error
		workers  sync.WaitGroup
	)
	explain := func(n int) {
		r, err := i.Explain(ctx, &namespaces[n], opts)
		mu.Lock()
		defer mu.Unlock()
		if err != nil && firstErr == nil {
			firstErr = err
			cancel()
		}
		reports[n] = r
	}
	for range min(namespacesAtOnce, max(len(namespaces), 1)) {
		workers.Go(func() {
			for n := range queue {
				if ctx.Err() == nil {
					explain(n)
				}
			}
		})
	}
	workers.Wait()
	census.Wait()
	// What the census could not vouch for is read afresh (never seen from
	// kube-apiserver, whose lists come in key order).
	for _, name := range stale {
		for n := range namespaces {
			if namespaces[n].Name == name && ctx.Err() == nil {
				explain(n)
			}
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return reports, nil
}

// streamInto sends into queue (then closes it) each namespace's index: at
// once those the census does not cover (not terminating), then each
// terminating one as the census hands it out; all at once if no census
// can be taken (no permission to read APIServices, say). It returns the
// namespaces to read afresh.
func (i *Inspector) streamInto(ctx context.Context, namespaces []v1.Namespace, queue chan<- int) []string {
	defer close(queue)
	index := map[string]int{}
	for n, ns := range namespaces {
		if ns.DeletionTimestamp == nil {
			queue <- n
		} else {
			index[ns.Name] = n
		}
	}
	sent := map[string]bool{}
	stale, err := i.streamCensus(ctx, namespaces, func(ns string) {
		sent[ns] = true
		queue <- index[ns]
	})
	if err != nil {
		for name, n := range index {
			if !sent[name] {
				queue <- n
			}
		}
	}
	return stale
}
