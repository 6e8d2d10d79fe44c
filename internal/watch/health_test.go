package watch

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/util/workqueue"
)

type check struct{ err error }

func (check) Name() string                { return "leaderElection" }
func (c check) Check(*http.Request) error { return c.err }

func TestHealthzAsksItsChecks(t *testing.T) {
	for _, c := range []struct {
		check check
		code  int
		body  string
	}{{check{}, 200, "ok"}, {check{errors.New("lease expired 30s ago")}, 500, "[-]leaderElection failed: lease expired 30s ago"}} {
		srv, err := Listen("127.0.0.1:0", NewMetrics(), c.check)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() { _ = srv.Serve(ctx) }()
		resp, err := http.Get("http://" + srv.Addr() + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		cancel()
		if resp.StatusCode != c.code || !strings.Contains(string(body), c.body) {
			t.Errorf("/healthz with %v: %d %q, want %d %q", c.check.err, resp.StatusCode, body, c.code, c.body)
		}
	}
	// client-go's adaptor is such a check: healthy with no election.
	var _ HealthCheck = leaderelection.NewLeaderHealthzAdaptor(time.Second)
}

// client-go keeps the first metrics provider of the process: every
// registry still gets the work queue's series.
func TestWorkQueueMetricsOnEveryRegistry(t *testing.T) {
	first, second := NewMetrics(), NewMetrics()
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "health-test"})
	defer q.ShutDown()
	q.Add("a")
	for _, m := range []*Metrics{first, second} {
		n, err := testutil.GatherAndCount(m.Registry, "workqueue_adds_total")
		if err != nil || n == 0 {
			t.Errorf("workqueue_adds_total: %d series (%v)", n, err)
		}
	}
}
