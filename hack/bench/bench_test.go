package main

import (
	"bytes"
	"crypto/rand"
	"flag"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

var update = flag.Bool("update", false, "rewrite the golden file and docs/benchmarks.md")

// The markdown of a fixed result (every phase in it) is the golden file's, and
// docs/benchmarks.md is what docs/benchmarks.json renders to, so a change of
// the template re-renders it (-update, or -render).
func TestRenderGolden(t *testing.T) {
	for json, md := range map[string]string{"testdata/result.json": "testdata/benchmarks.md", "../../docs/benchmarks.json": "../../docs/benchmarks.md"} {
		if _, err := os.Stat(json); os.IsNotExist(err) && !strings.HasPrefix(json, "testdata") {
			t.Logf("no %s yet: make bench writes it", json)
			continue
		}
		out := md
		if !*update {
			out = filepath.Join(t.TempDir(), "benchmarks.md")
		}
		err := renderFile(json, out)
		got, _ := os.ReadFile(out)
		if want, _ := os.ReadFile(md); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not what %s renders to (%v); go test ./hack/bench -update rewrites it, then read the diff", md, json, err)
		}
	}
	// Every phase has its block in the template and a section in the result.
	data, _ := os.ReadFile("testdata/result.json")
	for _, p := range phases {
		if tmpl.Lookup(p.name) == nil || !bytes.Contains(data, []byte(`"Phase": "`+p.name+`"`)) {
			t.Errorf("phase %s: no block in benchmarks.md.tmpl or no section in testdata/result.json", p.name)
		}
	}
	got, _ := os.ReadFile("testdata/benchmarks.md")
	for _, want := range []string{"**met**", "**MISSED**", "**info**", "[link (50ms RTT)]", "- API server alone: ", "Measured by a run of its own (`-phases`)"} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("no %q in testdata/benchmarks.md", want)
		}
	}
}

// A target reads its phase's section of its scope (12 / 0.5); a threshold
// reached is met, < and > strict; a run that measured nothing renders.
func TestTargets(t *testing.T) {
	s := &Section{Phase: "explain", Scope: "medium", Series: []*Series{{Key: "explain", Runs: []Sample{{Seconds: 0.5}, {Seconds: 0.4}, {Seconds: 0.6}}}, {Key: "recipe", Runs: []Sample{{Seconds: 12}}}}}
	if v := (&Result{Sections: []*Section{s}}).Verdicts()[0]; v.V != 24 || v.Mark() != "**met**" || v.Detail != "12 s vs 0.5 s" {
		t.Errorf("got %+v", v)
	}
	mark := func(op string, limit, v float64) string {
		return verdict{target{Op: op, Limit: limit}, "", "", v}.Mark()
	}
	if mark("<", 60, 60) != "**MISSED**" || mark(">=", 20, 20) != "**met**" || mark(">", 0, 0) != "**MISSED**" || mark("", 0, 1) != "**info**" {
		t.Error("< and > are strict, <= and >= not; a target without op is info")
	}
	var b strings.Builder
	if err := render(&b, &Result{}); err != nil || !strings.Contains(b.String(), "**Incomplete run**") || !strings.Contains(b.String(), "Targets met: 0; MISSED: 0;") {
		t.Errorf("%v:\n%s", err, b.String())
	}
}

// Over 2n runs every contender takes every place; for 3, every order runs once.
func TestOrder(t *testing.T) {
	seen := map[[3]int]bool{}
	for r := range 6 {
		seen[[3]int(order(r, 3))] = true
	}
	if len(seen) != 6 || !slices.Equal(order(0, 3), []int{0, 1, 2}) || !slices.Equal(order(1, 2), []int{1, 0}) {
		t.Errorf("orders %v", seen)
	}
}

// A histogram's quantiles are PromQL's, linear within the bucket, of the series
// selected; the runs' by nearest rank.
func TestQuantiles(t *testing.T) {
	m, err := parse(strings.NewReader("# TYPE x histogram\n" + `x_bucket{a="b",le="0.1"} 5
x_bucket{a="b",le="0.5"} 9
x_bucket{a="b",le="1"} 10
x_bucket{a="b",le="+Inf"} 10
x_count{a="b"} 10
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

// A link to an echo server: 3 MiB (about fifty 64 KiB chunks each way) cross
// intact and the half-close after them is passed on, a round trip later than
// sent, but far sooner than if chunks waited one after another.
func TestLink(t *testing.T) {
	const delay = 50 * time.Millisecond
	server, err := net.Listen("tcp", "127.0.0.1:0")
	plugintest.Must(t, err)
	defer func() { _ = server.Close() }()
	go func() {
		for c, err := server.Accept(); err == nil; c, err = server.Accept() {
			go func() { _, _ = io.Copy(c, c); _ = c.(*net.TCPConn).CloseWrite() }()
		}
	}()
	l, err := linkTo(server.Addr().String(), delay)
	plugintest.Must(t, err)
	defer func() { _ = l.Close() }()
	c, err := net.Dial("tcp", l.Addr().String())
	plugintest.Must(t, err)
	defer func() { _ = c.Close() }()
	up, t0 := make([]byte, 3<<20+17), time.Now()
	_, _ = rand.Read(up)
	go func() { _, _ = c.Write(up); _ = c.(*net.TCPConn).CloseWrite() }()
	back, err := io.ReadAll(c)
	if took := time.Since(t0); err != nil || !bytes.Equal(back, up) || took < 2*delay || took > 20*delay {
		t.Errorf("got %d bytes back of %d (%v) after %v; want them all after a round trip of %v, not chunk after chunk", len(back), len(up), err, took, 2*delay)
	}
}

// A -phases subset replaces its phases' sections, marked with its run, keeps
// the others and the file's run, in the phases' order.
func TestMerge(t *testing.T) {
	old := func(phase string) *Section { return &Section{Phase: phase, Scope: "old"} }
	base := &Result{Run: Run{Command: "all"}, Sections: []*Section{old("explain"), old("explain"), old("purge"), old("rescue")}}
	r := &Result{Run: Run{Command: "some"}, Sections: []*Section{{Phase: "rescue", Scope: "new"}, {Phase: "explain", Scope: "new"}}}
	got := merge(base, r)
	var have []string
	for _, s := range got.Sections {
		run := ""
		if s.Run != nil {
			run = " by " + s.Run.Command
		}
		have = append(have, s.Phase+" "+s.Scope+run)
	}
	if want := []string{"explain new by some", "purge old", "rescue new by some"}; got.Run.Command != "all" || !slices.Equal(have, want) {
		t.Errorf("run %q, sections %q; want all, %q", got.Run.Command, have, want)
	}
}

// spawn's marker passes the child's stderr on and times the first line that
// starts with the mark, whole, however the writes split it.
func TestMarker(t *testing.T) {
	var out bytes.Buffer
	m := &marker{prefix: []byte("rescue: hold in force"), out: &out, start: time.Now().Add(-time.Second), at: -1}
	in := "rescue: hold applied\nrescue: hold in fo"
	_, _ = m.Write([]byte(in))
	if m.at >= 0 {
		t.Fatalf("timed a line not yet ended: %v", m.at)
	}
	rest := "rce after 10ms: refused\nrescue: hold in force again\n"
	_, _ = m.Write([]byte(rest))
	if m.at < 1 || out.String() != in+rest {
		t.Errorf("at %v (want at least 1 s), passed on %q", m.at, out.String())
	}
}

// rescue's stderr says its in-force time, every object saved and the volumes
// retained; the recipe's file holds every object.
func TestRescueChecks(t *testing.T) {
	stderr := "rescue: hold applied (ValidatingAdmissionPolicy and binding ns-doctor-rescue-x)\n" +
		"rescue: hold in force after 1.25s: a dry-run DELETE of configmaps/obj-000000 as system:serviceaccount:kube-system:namespace-controller was refused\n" +
		"rescue: 1 volume(s) set to Retain\nrescue: 1002 object(s) saved to /tmp/x\n"
	if after, err := rescueSaid(stderr, 1002, 1); after != 1.25 || err != nil {
		t.Errorf("got %v, %v; want 1.25 s", after, err)
	}
	if _, err := rescueSaid(stderr, 1003, 1); err == nil {
		t.Error("1002 saved of 1003: no error")
	}
	if _, err := rescueSaid(strings.Replace(stderr, "hold in force after 1.25s", "hold NOT PROVEN in force (10s)", 1), 1002, 1); err == nil {
		t.Error("not proven: no error")
	}
	file := filepath.Join(t.TempDir(), "saved.yaml")
	plugintest.Must(t, os.WriteFile(file, []byte("apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n- apiVersion: v1\n  kind: Secret\nkind: List\n"), 0o600))
	if err := recipeSaved(file, 2); err != nil {
		t.Error(err)
	}
	if err := recipeSaved(file, 3); err == nil {
		t.Error("2 saved of 3: no error")
	}
}
