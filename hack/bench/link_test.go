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

// through starts a server on loopback that runs serve for each connection
// and a link to it from a kubeconfig, checks the copy linkTo writes (the
// server is the link, the CA and the user are kept, no TLS check is
// skipped), and returns a connection through the link.
func through(t *testing.T, delay time.Duration, serve func(net.Conn)) net.Conn {
	server, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for c, err := server.Accept(); err == nil; c, err = server.Accept() {
			go func() { serve(c); _ = c.Close() }()
		}
	}()
	kc, dir := clientcmdapi.NewConfig(), t.TempDir()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://" + server.Addr().String(), CertificateAuthorityData: []byte("CA")}
	kc.AuthInfos["u"], kc.Contexts["x"], kc.CurrentContext = &clientcmdapi.AuthInfo{Token: "t"}, &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}, "x"
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	if err := clientcmd.WriteToFile(*kc, src); err != nil {
		t.Fatal(err)
	}
	l, err := linkTo(src, dst, delay)
	if err != nil {
		t.Fatal(err)
	}
	out, err := clientcmd.LoadFromFile(dst)
	if c := out.Clusters["c"]; err != nil || c.Server != "https://"+l.Addr().String() || string(c.CertificateAuthorityData) != "CA" || c.TLSServerName != "" || c.InsecureSkipTLSVerify || out.AuthInfos["u"].Token != "t" || out.CurrentContext != "x" {
		t.Fatalf("linkTo wrote %+v (%v)", out, err)
	}
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _, _ = c.Close(), l.Close(), server.Close() })
	return c
}

// Each chunk comes back after a round trip, twice the delay, but chunks
// sent one after another are not serialized: the link adds latency, not a
// bandwidth cap.
func TestLinkDelaysEachChunkWithoutSerializing(t *testing.T) {
	const delay, n = 50 * time.Millisecond, 40
	c, sent := through(t, delay, func(c net.Conn) { _, _ = io.Copy(c, c) }), make(chan time.Time, n)
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
	up, down, got := make([]byte, 3<<20+17), make([]byte, 2<<20+5), make(chan []byte, 1)
	_, _ = rand.Read(up)
	_, _ = rand.Read(down)
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
