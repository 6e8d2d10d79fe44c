package watch

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/util/workqueue"

	"github.com/ns-doctor/ns-doctor/internal/kube"
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

// A leader whose renewals of its Lease hang (its API server stops
// answering them, its goroutine stuck) is not healthy: /healthz asks
// client-go's HealthzAdaptor, wired to the real elector, and fails once
// the Lease has gone unrenewed past its duration and the tolerance, so
// that the kubelet restarts it while another replica takes over.
func TestHealthzFailsWhenTheLeaderStopsRenewing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := fake.NewClientset()
	release := make(chan struct{})
	defer close(release)
	var hang atomic.Bool
	cs.PrependReactor("update", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		if hang.Load() {
			<-release
		}
		return false, nil, nil
	})
	dog := leaderelection.NewLeaderHealthzAdaptor(200 * time.Millisecond)
	srv, err := Listen("127.0.0.1:0", NewMetrics(), dog)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ctx) }()
	leading := make(chan bool, 4)
	le := LeaderElection{Namespace: "ns-doctor", Name: "ns-doctor-watch", Identity: "a",
		LeaseDuration: time.Second, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond, WatchDog: dog}
	go func() {
		_ = le.Lead(ctx, &kube.Clients{Kube: cs}, func(ctx context.Context) { <-ctx.Done() }, func(b bool) { leading <- b })
	}()
	select {
	case <-leading:
	case <-time.After(10 * time.Second):
		t.Fatal("never led")
	}
	healthz := func() (int, string) {
		resp, err := http.Get("http://" + srv.Addr() + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	time.Sleep(1500 * time.Millisecond) // renewed several times: healthy
	if code, body := healthz(); code != http.StatusOK {
		t.Fatalf("/healthz of a leader that renews: %d %s", code, body)
	}
	hang.Store(true)
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := healthz()
		if code == http.StatusInternalServerError && strings.Contains(body, "failed election to renew leadership") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz of a leader whose renewals hang: %d %s, want 500", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
