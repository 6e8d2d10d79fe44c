package watch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server serves /metrics, /healthz and /readyz.
type Server struct {
	srv   *http.Server
	ln    net.Listener
	ready atomic.Bool
}

// HealthCheck is one check of /healthz, as k8s.io/apiserver's healthz
// checkers are (client-go's leaderelection.HealthzAdaptor is one).
type HealthCheck interface {
	Name() string
	Check(*http.Request) error
}

// Listen binds addr at once, so that an address in use is an error before
// anything else starts. /healthz fails while a check fails: the leader
// election's, as kube-controller-manager's, says a leader that stopped
// renewing its Lease is not healthy.
func Listen(addr string, m *Metrics, checks ...HealthCheck) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w", addr, errors.Unwrap(err))
	}
	s := &Server{ln: ln}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		for _, c := range checks {
			if err := c.Check(r); err != nil {
				http.Error(w, fmt.Sprintf("[-]%s failed: %v", c.Name(), err), http.StatusInternalServerError)
				return
			}
		}
		_, _ = w.Write([]byte("ok"))
	})
	// A standby is ready too: it serves its metrics, and a rolling update
	// waits for every replica to be ready.
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready.Load() {
			http.Error(w, "namespace cache not synced yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return s, nil
}

// Addr is where the server listens (the port chosen when addr had 0).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Ready marks the replica ready (its namespace cache synced).
func (s *Server) Ready() { s.ready.Store(true) }

// Serve serves until ctx ends.
func (s *Server) Serve(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = s.srv.Shutdown(shutdown)
	}()
	if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving metrics: %w", err)
	}
	return nil
}
