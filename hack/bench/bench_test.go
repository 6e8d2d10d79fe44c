package main

import (
	"bytes"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

var update = flag.Bool("update", false, "rewrite the golden file and docs/benchmarks.md")

// The markdown of a fixed result (every phase in it) is the golden file's,
// and docs/benchmarks.md is what docs/benchmarks.json renders to, so a
// change of the template re-renders it (-update, or -render).
func TestRenderGolden(t *testing.T) {
	for json, md := range map[string]string{"testdata/result.json": "testdata/benchmarks.md", "../../docs/benchmarks.json": "../../docs/benchmarks.md"} {
		if _, err := os.Stat(json); os.IsNotExist(err) && !strings.HasPrefix(json, "testdata") {
			t.Logf("no %s yet: make bench writes it", json)
			continue
		}
		out := filepath.Join(t.TempDir(), "benchmarks.md")
		err := renderFile(json, out)
		got, _ := os.ReadFile(out)
		if err == nil && *update {
			err = os.WriteFile(md, got, 0o644)
		}
		if want, _ := os.ReadFile(md); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not what %s renders to (%v); go test ./hack/bench -update rewrites it, then read the diff", md, json, err)
		}
	}
	// Every phase has its block in the template and a section in the golden result.
	data, _ := os.ReadFile("testdata/result.json")
	for _, p := range phases {
		if tmpl.Lookup(p.name) == nil || !bytes.Contains(data, []byte(`"Phase": "`+p.name+`"`)) {
			t.Errorf("phase %s: no block in benchmarks.md.tmpl or no section in testdata/result.json", p.name)
		}
	}
	got, _ := os.ReadFile("testdata/benchmarks.md")
	for _, want := range []string{"**met**", "**MISSED**", "**info**", "[link (50ms RTT)]", "- API server alone: "} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("no %q in testdata/benchmarks.md", want)
		}
	}
}

// The explain targets read a section of explain's series; a threshold
// reached is met; a run that measured nothing yet renders, incomplete.
func TestTargets(t *testing.T) {
	s := &Section{Phase: "explain", Scope: "medium"}
	for key, secs := range map[string][]float64{"explain": {0.5, 0.4, 0.6}, "plugin": {0.3}, "floor": {0.2}, "recipe": {12}} {
		for _, x := range secs {
			s.series(key, key).add(Sample{Seconds: x, Requests: 3, Lists: 1})
		}
	}
	var got []string
	for _, v := range verdicts(&Result{Sections: []*Section{s}}) {
		got = append(got, v.Mark+" "+v.Text[strings.Index(v.Text, "): ")+3:])
	}
	// 12 / 0.5 = 24; 0.3 / 0.2 = 1.5, the threshold; 0.5 / 0.2 = 2.5.
	if want := []string{"**met** 24x, target >= 20x; 12 s vs 0.5 s", "**met** 1.5x, target <= 1.5x; 0.3 s vs 0.2 s", "**MISSED** 2.5x, target <= 1.5x; 0.5 s vs 0.2 s",
		"**met** 0, target <= 15", "**met** 2, target <= 12"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if (target{op: "<", limit: 60}).met(60) || !(target{op: ">=", limit: 20}).met(20) || (target{op: ">", limit: 0}).met(0) {
		t.Error("< and > are strict, <= and >= not")
	}
	var b strings.Builder
	if err := render(&b, &Result{}); err != nil || !strings.Contains(b.String(), "**Incomplete run**") || !strings.Contains(b.String(), "Targets met: 0; MISSED: 0;") {
		t.Errorf("%v:\n%s", err, b.String())
	}
}

// Over 2n runs every contender takes every place; for 3, every order runs once.
func TestOrder(t *testing.T) {
	seen := map[string]bool{}
	for r := range 6 {
		seen[fmt.Sprint(order(r, 3))] = true
	}
	if len(seen) != 6 || !slices.Equal(order(0, 3), []int{0, 1, 2}) || !slices.Equal(order(1, 2), []int{1, 0}) {
		t.Errorf("orders %v", seen)
	}
}

// A histogram's quantiles are PromQL's, linear within the bucket, of the
// series selected; the runs' by nearest rank.
func TestQuantiles(t *testing.T) {
	m, err := parse(strings.NewReader("# TYPE x histogram\n" + `x_bucket{a="b",le="0.1"} 5
x_bucket{a="b",le="0.5"} 9
x_bucket{a="b",le="1"} 10
x_bucket{a="b",le="+Inf"} 10
x_count{a="b"} 10
x_bucket{a="c",le="0.1"} 100
x_bucket{a="c",le="0.5"} 100
x_bucket{a="c",le="1"} 100
x_bucket{a="c",le="+Inf"} 100
x_count{a="c"} 100
`))
	// Since an earlier read of one answer under 0.1 s: 4, 8 and 9 of 9.
	h := histogram(m["x"], "a=b").minus(Histogram{Counts: []float64{1, 1, 1}, Count: 1})
	if p50, p99 := h.Quantile(0.5), h.Quantile(0.99); err != nil || h.Count != 9 || math.Abs(p50-0.15) > 1e-9 || math.Abs(p99-0.955) > 1e-9 {
		t.Errorf("count %v, p50 %v, p99 %v, want 9, 0.15, 0.955 (%v)", h.Count, p50, p99, err)
	}
	if xs := (floats{3, 1, 2, 4}); xs.Quantile(0.5) != 2 || xs.Quantile(0.99) != 4 {
		t.Errorf("p50 %v, p99 %v of %v", xs.Quantile(0.5), xs.Quantile(0.99), xs)
	}
}

// A link to an echo server, from a kubeconfig whose copy points at the
// link and keeps the rest: 3 MiB (about fifty 64 KiB chunks each way)
// cross intact and the half-close after them is passed on, a round trip
// later than sent, but far sooner than if chunks waited one after another.
func TestLink(t *testing.T) {
	const delay = 50 * time.Millisecond
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
	kc.Clusters["c"], kc.AuthInfos["u"] = &clientcmdapi.Cluster{Server: "https://" + server.Addr().String(), CertificateAuthorityData: []byte("CA")}, &clientcmdapi.AuthInfo{Token: "t"}
	if err := clientcmd.WriteToFile(*kc, filepath.Join(dir, "src")); err != nil {
		t.Fatal(err)
	}
	l, err := linkTo(filepath.Join(dir, "src"), filepath.Join(dir, "dst"), delay)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	out, err := clientcmd.LoadFromFile(filepath.Join(dir, "dst"))
	if c := out.Clusters["c"]; err != nil || c.Server != "https://"+l.Addr().String() || string(c.CertificateAuthorityData) != "CA" || c.InsecureSkipTLSVerify || out.AuthInfos["u"].Token != "t" {
		t.Fatalf("linkTo wrote %+v (%v)", out, err)
	}
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	up, t0 := make([]byte, 3<<20+17), time.Now()
	_, _ = rand.Read(up)
	go func() { _, _ = c.Write(up); _ = c.(*net.TCPConn).CloseWrite() }()
	back, err := io.ReadAll(c)
	if took := time.Since(t0); err != nil || !bytes.Equal(back, up) || took < 2*delay || took > 20*delay {
		t.Errorf("got %d bytes back of %d (%v) after %v; want them all after a round trip of %v, not chunk after chunk", len(back), len(up), err, took, 2*delay)
	}
}
