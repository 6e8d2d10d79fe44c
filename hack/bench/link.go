package main

import (
	"fmt"
	"net"
	"net/url"
	"sync"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// link is a TCP proxy that holds every chunk a fixed delay in each
// direction, as a slow network would: a round trip through it costs twice
// the delay, but throughput is not limited, since chunks are queued with
// their arrival time and written out once their delay is over while later
// ones keep arriving. TLS passes through untouched.
type link struct {
	net.Listener
	target string
	delay  time.Duration
}

// linkTo starts a link to the server of the kubeconfig at src and writes a
// copy pointing at it to dst. The API server's serving certificate names
// 127.0.0.1 (test/support/controlplane/certs.go), where the link listens,
// so the same CA verifies it: no tls-server-name, no insecure-skip-tls-verify.
func linkTo(src, dst string, delay time.Duration) (*link, error) {
	kc, err := clientcmd.LoadFromFile(src)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &link{Listener: ln, delay: delay}
	for _, c := range kc.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil || l.target != "" && l.target != u.Host {
			return l, fmt.Errorf("%s: one cluster wanted (%v)", src, err)
		}
		l.target, u.Host = u.Host, ln.Addr().String()
		c.Server = u.String()
	}
	go l.serve()
	return l, clientcmd.WriteToFile(*kc, dst)
}

// serve forwards each connection until the link is closed.
func (l *link) serve() {
	for client, err := l.Accept(); err == nil; client, err = l.Accept() {
		go l.handle(client)
	}
}

func (l *link) handle(client net.Conn) {
	defer func() { _ = client.Close() }()
	server, err := net.Dial("tcp", l.target)
	if err != nil {
		return
	}
	defer func() { _ = server.Close() }()
	var wg sync.WaitGroup
	wg.Go(func() { l.pipe(server, client) })
	l.pipe(client, server)
	wg.Wait()
}

// chunk is what one read returned, and when.
type chunk struct {
	data []byte
	at   time.Time
}

// pipe copies src to dst, each chunk delay after it was read. A reader and
// a writer joined by a queue, so a chunk waiting for its time never holds
// up the reads behind it; at most 4096 chunks of 64 KiB wait, beyond which
// TCP's own flow control slows the sender, as a full window would. At
// src's end dst is half-closed once all before is delivered; on a write
// error both ends are cut.
func (l *link) pipe(dst, src net.Conn) {
	queue := make(chan chunk, 4096)
	go func() {
		defer close(queue)
		buf := make([]byte, 64<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 { // a copy of exactly what arrived
				queue <- chunk{append([]byte(nil), buf[:n]...), time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	var err error
	for c := range queue {
		if err == nil { // else drained, so the reader is never stuck
			time.Sleep(time.Until(c.at.Add(l.delay)))
			if _, err = dst.Write(c.data); err != nil {
				_, _ = src.Close(), dst.Close()
			}
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok && err == nil {
		_ = tc.CloseWrite()
	}
}
