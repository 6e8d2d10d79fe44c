package kube

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// A server that answers 150 lists: with API Priority and Fairness headers
// the sweep is not held by the client-side token bucket; without them it
// is, and the bucket (QPS 1, burst 1 here, to make it visible) paces it.
func TestSweepDropsClientRateLimitOnlyUnderAPF(t *testing.T) {
	for _, withAPF := range []bool{true, false} {
		t.Run(fmt.Sprintf("APF %v", withAPF), func(t *testing.T) {
			var lists atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if withAPF {
					w.Header().Set(flowSchemaHeader, "uid")
				}
				w.Header().Set("Content-Type", "application/json")
				if strings.Contains(r.URL.Path, "/namespaces/ns/") {
					lists.Add(1)
				}
				_, _ = fmt.Fprint(w, `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{},"items":[]}`)
			}))
			defer srv.Close()
			// RaisedRateLimit turns QPS 0.05 / burst 1 into 1 QPS / burst 100.
			c, err := ClientsForConfig(&rest.Config{Host: srv.URL, QPS: 0.05, Burst: 1})
			if err != nil {
				t.Fatal(err)
			}
			// Discovery comes first, as in explain: its answer shows the headers.
			_, _ = c.Discovery.ServerGroups()
			var gvrs []schema.GroupVersionResource
			for i := 0; i < 150; i++ {
				gvrs = append(gvrs, schema.GroupVersionResource{Group: "g", Version: "v1", Resource: fmt.Sprintf("r%d", i)})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			snap := Sweep(ctx, c, "ns", gvrs, SweepOptions{})
			done := int(lists.Load())
			if withAPF && (done != 150 || len(snap.Errs) != 0) {
				t.Errorf("under APF: %d lists answered, %d errors; want all 150 within 5 s", done, len(snap.Errs))
			}
			if !withAPF && done >= 150 {
				t.Errorf("without APF all %d lists went through a 1 QPS / burst 100 limiter within 5 s", done)
			}
		})
	}
}

// The clients' own rate limit holds until the server shows it runs
// priority and fairness, then stands aside.
func TestLimiterStandsAsideForAPF(t *testing.T) {
	a := &apf{}
	cfg := a.limited(&rest.Config{QPS: 1, Burst: 1})
	l := cfg.RateLimiter
	if !l.TryAccept() || l.TryAccept() {
		t.Fatal("without priority and fairness the token bucket should allow the burst, then refuse")
	}
	a.seen.Store(true)
	for range 5 {
		if !l.TryAccept() {
			t.Fatal("with priority and fairness the client limit should not hold")
		}
	}
	if err := l.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}
