package guard

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"
)

// Server serves the guard over TLS on a port of its own, apart from the
// metrics.
type Server struct {
	ln  net.Listener
	srv *http.Server
}

// Listen binds addr at once, so that an address in use is an error before
// anything else starts.
func Listen(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--guard-addr %s: %w", addr, errors.Unwrap(err))
	}
	return &Server{ln: ln}, nil
}

// Close stops listening; for a server that will not Serve.
func (s *Server) Close() error { return s.ln.Close() }

// Addr is where the server listens (the port chosen when addr had 0).
func (s *Server) Addr() *net.TCPAddr { return s.ln.Addr().(*net.TCPAddr) }

// Serve answers on Path with h, presenting the certificate getCert gives
// at each handshake (so a renewed one is served without a restart), until
// ctx ends.
func (s *Server) Serve(ctx context.Context, h http.Handler, getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)) error {
	mux := http.NewServeMux()
	mux.Handle(Path, h)
	s.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: getCert},
		// kube-apiserver's errors about a handshake it gave up on would
		// otherwise go to the standard logger, raw.
		ErrorLog: discardLog(),
	}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = s.srv.Shutdown(shutdown)
	}()
	if err := s.srv.ServeTLS(s.ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving the guard: %w", err)
	}
	return nil
}

func discardLog() *log.Logger { return log.New(io.Discard, "", 0) }
