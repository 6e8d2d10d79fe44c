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

// A link to an echo server, from a kubeconfig: the copy linkTo writes
// points at the link and keeps the CA and the user, skipping no TLS
// check; each chunk comes back a round trip (twice the delay) later, but
// chunks sent one after another are not serialized (latency, not a
// bandwidth cap); megabytes cross intact, and a half-close is passed on
// after the data before it.
func TestLink(t *testing.T) {
	const delay, n = 50 * time.Millisecond, 40
	server, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = server.Close() }()
	go func() {
		for c, err := server.Accept(); err == nil; c, err = server.Accept() {
			go func() { _, _ = io.Copy(c, c); _ = c.(*net.TCPConn).CloseWrite() }()
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
	defer func() { _ = l.Close() }()
	out, err := clientcmd.LoadFromFile(dst)
	if c := out.Clusters["c"]; err != nil || c.Server != "https://"+l.Addr().String() || string(c.CertificateAuthorityData) != "CA" || c.TLSServerName != "" || c.InsecureSkipTLSVerify || out.AuthInfos["u"].Token != "t" || out.CurrentContext != "x" {
		t.Fatalf("linkTo wrote %+v (%v)", out, err)
	}
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	sent := make(chan time.Time, n)
	go func() {
		for i := range n {
			sent <- time.Now()
			_, _ = c.Write([]byte{byte(i)})
			time.Sleep(5 * time.Millisecond)
		}
	}()
	t0, b := time.Now(), make([]byte, 1)
	for i := range n {
		if _, err := io.ReadFull(c, b); err != nil || b[0] != byte(i) {
			t.Fatalf("byte %d: got %d, %v", i, b[0], err)
		}
		if got := time.Since(<-sent); got < 2*delay {
			t.Fatalf("byte %d back after %v, want at least %v", i, got, 2*delay)
		}
	}
	// Serialized, n round trips would take n*2*delay = 4 s; pipelined it
	// is the sending time (n*5 ms) plus one round trip.
	if total := time.Since(t0); total > n*delay {
		t.Errorf("%d pipelined chunks took %v: the link serializes them", n, total)
	}
	up := make([]byte, 3<<20+17)
	_, _ = rand.Read(up)
	go func() { _, _ = c.Write(up); _ = c.(*net.TCPConn).CloseWrite() }()
	if back, err := io.ReadAll(c); err != nil || !bytes.Equal(back, up) {
		t.Errorf("got %d bytes back (%v), want the %d sent", len(back), err, len(up))
	}
}
