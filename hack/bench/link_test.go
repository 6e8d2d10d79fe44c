package main

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// through starts a server on loopback that runs serve for each connection,
// a link in front of it, and returns a connection through the link.
func through(t *testing.T, delay time.Duration, serve func(net.Conn)) net.Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for c, err := ln.Accept(); err == nil; c, err = ln.Accept() {
			go func() { serve(c); _ = c.Close() }()
		}
	}()
	l, err := startLink(ln.Addr().String(), delay)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _, _ = c.Close(), l.Close(), ln.Close() })
	return c
}

func echo(c net.Conn) { _, _ = io.Copy(c, c) }

// A round trip through the link costs twice the one-way delay.
func TestLinkRoundTripCostsTwiceTheDelay(t *testing.T) {
	const delay = 30 * time.Millisecond
	c, buf := through(t, delay, echo), make([]byte, 5)
	for i := range 5 {
		t0, ping := time.Now(), []byte{'p', 'i', 'n', 'g', byte('0' + i)}
		if _, err := c.Write(ping); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil || !bytes.Equal(buf, ping) {
			t.Fatalf("round trip %d: got %q, %v", i, buf, err)
		}
		// The upper bound only catches a delay applied many times, with
		// room for a busy machine.
		if rtt := time.Since(t0); rtt < 2*delay || rtt > 2*delay+time.Second {
			t.Errorf("round trip %d took %v, want about %v", i, rtt, 2*delay)
		}
	}
}

// Chunks sent one after another arrive one delay later each, not one after
// the other's round trip: the link adds latency, not a bandwidth cap.
func TestLinkDoesNotSerializeChunks(t *testing.T) {
	const delay, n = 50 * time.Millisecond, 40
	c, sent := through(t, delay, echo), make(chan time.Time, n)
	go func() {
		for i := range n {
			sent <- time.Now()
			if _, err := c.Write([]byte{byte(i)}); err != nil {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	t0, b := time.Now(), make([]byte, 1)
	for i := range n {
		if _, err := io.ReadFull(c, b); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(<-sent); b[0] != byte(i) || got < 2*delay {
			t.Fatalf("byte %d: got %d after %v, want %d after at least %v", i, b[0], got, i, 2*delay)
		}
	}
	// Serialized, n round trips would take n*2*delay = 4 s; pipelined it
	// is the sending time (n*5 ms) plus one round trip.
	if total := time.Since(t0); total > n*delay {
		t.Errorf("%d pipelined chunks took %v: the link serializes them", n, total)
	}
}

// Bytes cross intact in both directions at once, and a half-close is
// passed on after the data before it.
func TestLinkBytesIntactBothWays(t *testing.T) {
	up, down, got := random(t, 3<<20+17), random(t, 2<<20+5), make(chan []byte, 1)
	c := through(t, 10*time.Millisecond, func(c net.Conn) {
		read := make(chan struct{})
		go func() { b, _ := io.ReadAll(c); got <- b; close(read) }() // until the client's half-close
		_, _ = c.Write(down)
		_ = c.(*net.TCPConn).CloseWrite()
		<-read
	})
	go func() { _, _ = c.Write(up); _ = c.(*net.TCPConn).CloseWrite() }()
	if back, err := io.ReadAll(c); err != nil || !bytes.Equal(back, down) {
		t.Errorf("server to client: got %d bytes (%v), want %d", len(back), err, len(down))
	}
	if b := <-got; !bytes.Equal(b, up) {
		t.Errorf("client to server: got %d bytes, want %d", len(b), len(up))
	}
}

func random(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLinkToKeepsTheCAAndPointsAtTheLink(t *testing.T) {
	kc, dir := clientcmdapi.NewConfig(), t.TempDir()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443", CertificateAuthorityData: []byte("CA")}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	kc.Contexts["x"], kc.CurrentContext = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}, "x"
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	if err := clientcmd.WriteToFile(*kc, src); err != nil {
		t.Fatal(err)
	}
	l, err := linkTo(src, dst, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	out, err := clientcmd.LoadFromFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if c := out.Clusters["c"]; l.target != "127.0.0.1:6443" || c.Server != "https://"+l.Addr().String() || string(c.CertificateAuthorityData) != "CA" || c.TLSServerName != "" || c.InsecureSkipTLSVerify {
		t.Errorf("link to %s, cluster %+v", l.target, c)
	}
	if out.AuthInfos["u"].Token != "t" || out.CurrentContext != "x" {
		t.Errorf("user or context lost: %+v", out)
	}
}
