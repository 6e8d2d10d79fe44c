package kube

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// flowSchemaHeader is set on every response of an API server that runs API
// Priority and Fairness (on by default since Kubernetes 1.20).
const flowSchemaHeader = "X-Kubernetes-PF-FlowSchema-UID"

// apf notices whether the API server runs API Priority and Fairness. When
// it does, the server queues and sheds load per priority level itself, so
// a sweep drops the client-side rate limit (as controller-runtime does by
// default, on SIG API Machinery's advice) and keeps only its own bound on
// requests in flight; otherwise explain with no name over 50 namespaces
// spends most of its time waiting on a token bucket.
type apf struct {
	seen atomic.Bool
	// rejected counts the 429s the server answered: priority and fairness
	// shedding load (client-go retries them).
	rejected atomic.Int64
	once     sync.Once
	metadata metadata.Interface
	dynamic  dynamic.Interface
	rest     *rest.RESTClient
	err      error
	// The raw client before the server showed it runs priority and
	// fairness.
	throttledOnce sync.Once
	throttled     *rest.RESTClient
	throttledErr  error
}

func (a *apf) wrap(rt http.RoundTripper) http.RoundTripper { return &apfTransport{rt: rt, apf: a} }

// apfTransport records the header. It exposes the transport it wraps so
// that client-go can still cancel a request that timed out.
type apfTransport struct {
	rt  http.RoundTripper
	apf *apf
}

func (t *apfTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err == nil && resp.Header.Get(flowSchemaHeader) != "" {
		t.apf.seen.Store(true)
	}
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		t.apf.rejected.Add(1)
	}
	return resp, err
}

var _ utilnet.RoundTripperWrapper = (*apfTransport)(nil)

// WrappedRoundTripper lets client-go reach the transport it may cancel.
func (t *apfTransport) WrappedRoundTripper() http.RoundTripper { return t.rt }

// SweepMetadata is the metadata client sweeps and deletion passes use:
// without a client-side rate limit once a response showed the server runs
// API Priority and Fairness, the rate-limited Metadata client otherwise.
func (c *Clients) SweepMetadata() metadata.Interface {
	if c.sweep != nil {
		return c.sweep
	}
	if !c.unthrottled() {
		return c.Metadata
	}
	return c.apf.metadata
}

// SweepDynamic is the dynamic client of the same kind, for the backup's
// full reads during a deletion pass.
func (c *Clients) SweepDynamic() dynamic.Interface {
	if !c.unthrottled() {
		return c.Dynamic
	}
	return c.apf.dynamic
}

// sweepREST is the raw JSON client of the same kind, for the backup's
// full reads; the rate-limited one is built once, when first needed.
func (c *Clients) sweepREST() (*rest.RESTClient, error) {
	if c.unthrottled() {
		return c.apf.rest, nil
	}
	c.apf.throttledOnce.Do(func() { c.apf.throttled, c.apf.throttledErr = rawClientFor(c.Config) })
	return c.apf.throttled, c.apf.throttledErr
}

// unthrottled builds, once, the clients without a client-side rate limit,
// and tells whether they are to be used.
func (c *Clients) unthrottled() bool {
	if c.apf == nil || !c.apf.seen.Load() {
		return false
	}
	c.apf.once.Do(func() {
		cfg := rest.CopyConfig(c.Config)
		cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
		if c.apf.metadata, c.apf.err = metadata.NewForConfig(cfg); c.apf.err == nil {
			c.apf.dynamic, c.apf.err = dynamic.NewForConfig(cfg)
		}
		if c.apf.err == nil {
			c.apf.rest, c.apf.err = rawClientFor(cfg)
		}
	})
	return c.apf.err == nil
}

// ServerQueues tells whether the API server runs API Priority and
// Fairness (as far as its answers so far showed).
func (c *Clients) ServerQueues() bool { return c.apf != nil && c.apf.seen.Load() }

// Rejected is how many requests the API server answered 429 Too Many
// Requests so far: it sheds load, and callers should send less at once.
func (c *Clients) Rejected() int64 {
	if c.apf == nil {
		return 0
	}
	return c.apf.rejected.Load()
}

// limited is cfg with a client-side rate limit of its own that stands
// aside once the server has shown it runs priority and fairness: the
// server then queues and sheds load itself, per priority level, and a
// client-side token bucket only makes the work of many namespaces wait
// (purge of 1,000 namespaces spent most of its minute in it).
func (a *apf) limited(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		cfg.RateLimiter = apfLimiter{RateLimiter: flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst), apf: a}
	}
	return cfg
}

// apfLimiter is a token bucket until the server runs priority and
// fairness, then no limit.
type apfLimiter struct {
	flowcontrol.RateLimiter
	apf *apf
}

func (l apfLimiter) TryAccept() bool { return l.apf.seen.Load() || l.RateLimiter.TryAccept() }

func (l apfLimiter) Accept() {
	if !l.apf.seen.Load() {
		l.RateLimiter.Accept()
	}
}

func (l apfLimiter) Wait(ctx context.Context) error {
	if l.apf.seen.Load() {
		return nil
	}
	return l.RateLimiter.Wait(ctx)
}
