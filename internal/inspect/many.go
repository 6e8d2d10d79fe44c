package inspect

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// namespacesAtOnce bounds the namespaces explained concurrently: each has
// its own bound of lists in flight, and the API server's priority and
// fairness queues what exceeds our share.
const namespacesAtOnce = 16

// ExplainAll explains many namespaces, in their order: with a census first
// when there are enough of them (each namespace's sweep then lists only
// the types it holds), several at a time. The first error ends it.
func (i *Inspector) ExplainAll(ctx context.Context, namespaces []v1.Namespace, opts Options) ([]diagnose.Report, error) {
	if len(namespaces) >= CensusMin && i.Census() == nil {
		// Without a census (no permission to read APIServices, say), each
		// namespace reads every type, as before.
		_, _ = i.TakeCensus(ctx, namespaces)
	}
	reports := make([]diagnose.Report, len(namespaces))
	var (
		mu       sync.Mutex
		firstErr error
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workqueue.ParallelizeUntil(ctx, namespacesAtOnce, len(namespaces), func(n int) {
		r, err := i.Explain(ctx, &namespaces[n], opts)
		mu.Lock()
		defer mu.Unlock()
		if err != nil && firstErr == nil {
			firstErr = err
			cancel()
		}
		reports[n] = r
	})
	if firstErr != nil {
		return nil, firstErr
	}
	return reports, nil
}
