package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The counts that grew are the sample; the bench's own "before" read of
// /metrics is not the command's.
func TestRequestDeltaLeavesOutTheBeforeRead(t *testing.T) {
	before := map[string]float64{"GET /metrics": 7, "GET /apis": 3, "LIST configmaps": 10, "PUT leases": 4}
	after := map[string]float64{"GET /metrics": 8, "GET /apis": 4, "LIST configmaps": 12, "LIST secrets": 1, "PUT leases": 4, "DELETE configmaps": 5}
	s := requestDelta(before, after)
	if s.Requests != 9 || s.Lists != 3 {
		t.Fatalf("requests %v, lists %v; want 9 and 3 (%v)", s.Requests, s.Lists, s.ByVerb)
	}
	if _, ok := s.ByVerb["GET /metrics"]; ok {
		t.Errorf("GET /metrics counted: %v", s.ByVerb)
	}
	if _, ok := s.ByVerb["PUT leases"]; ok {
		t.Errorf("an unchanged count is in the sample: %v", s.ByVerb)
	}
	if discoveries(s) != 1 {
		t.Errorf("discoveries %v, want 1", discoveries(s))
	}
}

// A command that read /metrics itself keeps those reads.
func TestRequestDeltaKeepsTheCommandsOwnMetricsReads(t *testing.T) {
	s := requestDelta(map[string]float64{"GET /metrics": 1}, map[string]float64{"GET /metrics": 4})
	if s.ByVerb["GET /metrics"] != 2 || s.Requests != 2 {
		t.Fatalf("%v", s.ByVerb)
	}
}

// One command for the batch, chosen by its label, against one command per
// namespace, each with the backup folder the single run would give it.
func TestPurgeManyArgvs(t *testing.T) {
	names := []string{"b-00", "b-01", "b-02"}
	one := oneRunArgvs("b", names, "/bk")
	if len(one) != 1 || !slices.Contains(one[0], "--all-terminating") || !slices.Contains(one[0], "batch=b") ||
		!slices.Contains(one[0], "/bk") || slices.Contains(one[0], "b-00") {
		t.Fatalf("one run: %q", one)
	}
	sep := separateRunArgvs("b", names, "/bk")
	if len(sep) != len(names) {
		t.Fatalf("%d commands for %d namespaces", len(sep), len(names))
	}
	for i, argv := range sep {
		if argv[3] != names[i] || !slices.Contains(argv, filepath.Join("/bk", names[i])) || slices.Contains(argv, "--all-terminating") {
			t.Errorf("run %d: %q", i, argv)
		}
	}
	for _, argv := range append(one, sep...) {
		joined := strings.Join(argv, " ")
		for _, want := range []string{"kubectl ns-doctor purge", "--force", "--yes", "--remove-finalizers=" + operatorGroup + "/*"} {
			if !strings.Contains(joined, want) {
				t.Errorf("%q lacks %q", joined, want)
			}
		}
	}
}

func TestFasterOrSlower(t *testing.T) {
	for _, c := range []struct {
		t, other float64
		want     string
	}{
		{2, 3, "1.50x faster"},
		{3, 2, "1.50x slower"},
		{2, 2, "1.00x faster"},
	} {
		if got := fasterOrSlower(c.t, c.other); got != c.want {
			t.Errorf("fasterOrSlower(%v, %v) = %q, want %q", c.t, c.other, got, c.want)
		}
	}
}

// The purge-1000 loop calls the binary itself, one namespace per command.
func TestPerNamespaceArgvsWithTheBinary(t *testing.T) {
	argvs := perNamespaceArgvs([]string{"/tmp/kubectl-ns_doctor"}, []string{"a", "b"}, p1kFinalizer, "/bk")
	want := []string{"/tmp/kubectl-ns_doctor", "purge", "b", "--force", "--yes", "--remove-finalizers=example.com/uninstalled", "--backup-dir", "/bk/b"}
	if len(argvs) != 2 || !slices.Equal(argvs[1], want) {
		t.Fatalf("%q", argvs)
	}
}

func TestLoopEstimate(t *testing.T) {
	l := p1kLoop{Ran: 50, Of: 1000, s: sample{Seconds: 40}}
	if !l.Extrapolated() || l.Estimate() != 800 {
		t.Errorf("sample: extrapolated %v, estimate %v", l.Extrapolated(), l.Estimate())
	}
	l.Ran = 1000
	if l.Extrapolated() || l.Estimate() != 40 {
		t.Errorf("all: extrapolated %v, estimate %v", l.Extrapolated(), l.Estimate())
	}
	s := addSamples(sample{Seconds: 1, Requests: 3, ByVerb: map[string]float64{"GET /apis": 1}}, sample{Seconds: 2, Requests: 4, ByVerb: map[string]float64{"GET /apis": 2, "PUT x": 2}})
	if s.Seconds != 3 || s.Requests != 7 || s.ByVerb["GET /apis"] != 3 || s.ByVerb["PUT x"] != 2 {
		t.Errorf("addSamples: %+v", s)
	}
}
