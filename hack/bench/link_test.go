package main

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// listen starts a TCP server on loopback that runs serve for each
// connection, and the link in front of it.
func listen(t *testing.T, delay time.Duration, serve func(net.Conn)) *link {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer func() { _ = c.Close() }()
				serve(c)
			})
		}
	})
	l, err := startLink(ln.Addr().String(), delay)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = l.Close()
		_ = ln.Close()
		wg.Wait()
	})
	return l
}

func echo(c net.Conn) { _, _ = io.Copy(c, c) }

func dial(t *testing.T, l *link) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A round trip through the link costs twice the one-way delay.
func TestLinkRoundTripCostsTwiceTheDelay(t *testing.T) {
	const delay = 30 * time.Millisecond
	c := dial(t, listen(t, delay, echo))
	buf := make([]byte, 5)
	for i := range 5 {
		t0 := time.Now()
		if _, err := c.Write([]byte("ping" + string(rune('0'+i)))); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
		rtt := time.Since(t0)
		if string(buf) != "ping"+string(rune('0'+i)) {
			t.Fatalf("round trip %d: got %q", i, buf)
		}
		// At least the delay both ways; the upper bound only catches a
		// delay applied many times, with room for a busy machine.
		if rtt < 2*delay || rtt > 2*delay+time.Second {
			t.Errorf("round trip %d took %v, want about %v", i, rtt, 2*delay)
		}
	}
}

// Chunks sent one after another arrive one delay later each, not one
// after the other's round trip: the link adds latency, not a bandwidth cap.
func TestLinkDoesNotSerializeChunks(t *testing.T) {
	const delay = 50 * time.Millisecond
	const n = 40
	c := dial(t, listen(t, delay, echo))
	sent := make([]time.Time, n)
	errc := make(chan error, 1)
	go func() {
		for i := range n {
			sent[i] = time.Now()
			if _, err := c.Write([]byte{byte(i)}); err != nil {
				errc <- err
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		errc <- nil
	}()
	t0 := time.Now()
	b := make([]byte, 1)
	for i := range n {
		if _, err := io.ReadFull(c, b); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(sent[i]); b[0] != byte(i) || got < 2*delay {
			t.Fatalf("byte %d: got %d after %v, want %d after at least %v", i, b[0], got, i, 2*delay)
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	// Serialized, n round trips would take n*2*delay = 4 s; pipelined it
	// is the sending time (n*5 ms) plus one round trip.
	if total := time.Since(t0); total > n*2*delay/2 {
		t.Errorf("%d pipelined chunks took %v: the link serializes them", n, total)
	}
}

// Bytes cross intact in both directions at once, and a half-close is
// passed on after the data before it.
func TestLinkBytesIntactBothWays(t *testing.T) {
	up, down := random(t, 3<<20+17), random(t, 2<<20+5)
	got := make(chan []byte, 1)
	l := listen(t, 10*time.Millisecond, func(c net.Conn) {
		var wg sync.WaitGroup
		wg.Go(func() {
			b, _ := io.ReadAll(c) // until the client's half-close
			got <- b
		})
		_, _ = c.Write(down)
		_ = c.(*net.TCPConn).CloseWrite()
		wg.Wait()
	})
	c := dial(t, l)
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := c.Write(up); err != nil {
			t.Error(err)
		}
		_ = c.(*net.TCPConn).CloseWrite()
	})
	back, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if !bytes.Equal(back, down) {
		t.Errorf("server to client: got %d bytes, want %d, equal %v", len(back), len(down), bytes.Equal(back, down))
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

func TestLinkKubeconfigKeepsCAAndPointsAtTheLink(t *testing.T) {
	dir := t.TempDir()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443", CertificateAuthorityData: []byte("CA")}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	kc.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "x"
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	if err := clientcmd.WriteToFile(*kc, src); err != nil {
		t.Fatal(err)
	}
	if err := linkKubeconfig(src, dst, "127.0.0.1:40000"); err != nil {
		t.Fatal(err)
	}
	out, err := clientcmd.LoadFromFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	c := out.Clusters["c"]
	if c.Server != "https://127.0.0.1:40000" || string(c.CertificateAuthorityData) != "CA" || c.TLSServerName != "" || c.InsecureSkipTLSVerify {
		t.Errorf("cluster = %+v", c)
	}
	if out.AuthInfos["u"].Token != "t" || out.CurrentContext != "x" {
		t.Errorf("user or context lost: %+v", out)
	}
}
