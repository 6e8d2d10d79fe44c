package purge

import (
	"sync"

	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// How many namespaces RunMany purges at once: as many as the API server's
// priority and fairness lets through, found as TCP finds a window
// (additive increase, halving on a 429), between these bounds. The upper
// one bounds memory: each run holds its namespace's compact snapshot and
// its writes in flight. A server without priority and fairness queues
// nothing for us, so it gets the lower bound only.
const (
	namespacesAtOnceMin = 4
	namespacesAtOnceMax = 64
)

// atOnce is the adaptive bound on concurrent runs.
type atOnce struct {
	mu       sync.Mutex
	cond     *sync.Cond
	limit    int
	max      int
	inflight int
	// rejected reads the server's 429s so far; seen is the count at the
	// last adjustment.
	rejected func() int64
	seen     int64
}

func newAtOnce(c *kube.Clients) *atOnce {
	a := &atOnce{limit: namespacesAtOnceMin, max: namespacesAtOnceMin, rejected: c.Rejected, seen: c.Rejected()}
	if c.ServerQueues() {
		a.max = namespacesAtOnceMax
	}
	a.cond = sync.NewCond(&a.mu)
	return a
}

func (a *atOnce) acquire() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for a.inflight >= a.limit {
		a.cond.Wait()
	}
	a.inflight++
}

// release ends a run and adjusts the bound: halved when the server shed
// load since the last run ended, one more otherwise.
func (a *atOnce) release() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.inflight--
	if r := a.rejected(); r > a.seen {
		a.seen, a.limit = r, max(1, a.limit/2)
	} else if a.limit < a.max {
		a.limit++
	}
	a.cond.Broadcast()
}
