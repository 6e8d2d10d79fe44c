package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// link is a TCP proxy that delays every byte by a fixed one-way delay in
// each direction, as a slow network would: a round trip through it costs
// twice the delay, but throughput is not limited, since chunks are queued
// with their arrival time and written out as soon as their delay is over,
// while later ones keep arriving. TLS passes through untouched.
type link struct {
	ln     net.Listener
	target string
	delay  time.Duration

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// linkChunkSize is the most one read takes off a connection.
const linkChunkSize = 64 << 10

// linkQueue bounds the chunks in flight per direction (at most
// linkQueue*linkChunkSize bytes); beyond it the reader waits, and TCP's
// own flow control slows the sender, as a full window would.
const linkQueue = 4096

// startLink listens on 127.0.0.1:0 and forwards each connection to target
// (host:port) with delay added in each direction.
func startLink(target string, delay time.Duration) (*link, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &link{ln: ln, target: target, delay: delay, conns: map[net.Conn]struct{}{}}
	l.wg.Go(l.serve)
	return l, nil
}

// Addr is the proxy's host:port.
func (l *link) Addr() string { return l.ln.Addr().String() }

// Close stops listening and cuts every open connection.
func (l *link) Close() error {
	l.mu.Lock()
	l.closed = true
	for c := range l.conns {
		_ = c.Close()
	}
	l.mu.Unlock()
	err := l.ln.Close()
	l.wg.Wait()
	return err
}

// track registers c so Close can cut it; false once the link is closed.
func (l *link) track(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.conns[c] = struct{}{}
	return true
}

func (l *link) untrack(c net.Conn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
	_ = c.Close()
}

func (l *link) serve() {
	for {
		client, err := l.ln.Accept()
		if err != nil {
			return // closed
		}
		l.wg.Go(func() { l.handle(client) })
	}
}

func (l *link) handle(client net.Conn) {
	if !l.track(client) {
		_ = client.Close()
		return
	}
	defer l.untrack(client)
	server, err := net.Dial("tcp", l.target)
	if err != nil {
		return
	}
	if !l.track(server) {
		_ = server.Close()
		return
	}
	defer l.untrack(server)
	var wg sync.WaitGroup
	wg.Go(func() { l.pipe(server, client) })
	wg.Go(func() { l.pipe(client, server) })
	wg.Wait()
}

// chunk is what one read returned, and when.
type chunk struct {
	data []byte
	at   time.Time
}

// pipe copies src to dst, each chunk delay after it was read. The reader
// and the writer are separate goroutines joined by a queue, so a chunk
// waiting for its time never holds up the reads behind it. At src's end
// dst is half-closed once everything before it is delivered; on a write
// error both ends are cut.
func (l *link) pipe(dst, src net.Conn) {
	queue := make(chan chunk, linkQueue)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(queue)
		buf := make([]byte, linkChunkSize)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				// A copy of exactly what arrived: queued chunks hold no
				// more memory than their bytes.
				queue <- chunk{data: append([]byte(nil), buf[:n]...), at: time.Now()}
			}
			if err != nil {
				return
			}
		}
	})
	failed := false
	for c := range queue {
		if failed {
			continue // drain, so the reader is never stuck
		}
		if d := time.Until(c.at.Add(l.delay)); d > 0 {
			time.Sleep(d)
		}
		if _, err := dst.Write(c.data); err != nil {
			failed = true
			_ = src.Close()
			_ = dst.Close()
		}
	}
	wg.Wait()
	if tc, ok := dst.(*net.TCPConn); ok && !failed {
		_ = tc.CloseWrite()
	}
}

// linkKubeconfig writes a copy of the kubeconfig at src whose clusters
// point at addr (the link) and returns its path. The API server's serving
// certificate names 127.0.0.1 (test/support/controlplane/certs.go), and
// the link listens there, so the same CA verifies it: no tls-server-name,
// no insecure-skip-tls-verify.
func linkKubeconfig(src, dst, addr string) error {
	kc, err := clientcmd.LoadFromFile(src)
	if err != nil {
		return err
	}
	if len(kc.Clusters) == 0 {
		return errors.New(src + ": no clusters")
	}
	for name, c := range kc.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			return fmt.Errorf("cluster %s: %w", name, err)
		}
		u.Host = addr
		c.Server = u.String()
	}
	return clientcmd.WriteToFile(*kc, dst)
}

// hostPort is the host:port of a URL such as cp.Server().
func hostPort(server string) (string, error) {
	u, err := url.Parse(server)
	if err != nil {
		return "", err
	}
	if u.Host == "" {
		return "", fmt.Errorf("no host in %q", server)
	}
	return u.Host, nil
}
