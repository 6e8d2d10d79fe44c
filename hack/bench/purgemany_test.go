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
