package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestPercentile(t *testing.T) {
	for _, c := range []struct {
		xs      floats
		p, want float64
	}{{nil, 50, 0}, {floats{3}, 50, 3}, {floats{3, 1, 2}, 50, 2}, {floats{4, 1, 3, 2}, 50, 2.5}, {floats{1, 2, 3, 4, 5}, 100, 5}, {floats{1, 2, 3, 4, 5}, 0, 1}, {floats{10, 20}, 99, 19.9}} {
		if got := c.xs.Percentile(c.p); got < c.want-1e-9 || got > c.want+1e-9 {
			t.Errorf("%v p%v = %v, want %v", c.xs, c.p, got, c.want)
		}
	}
	if got := (floats{2, 1}).Spread(1); got != "1.0–2.0" {
		t.Errorf("spread %q", got)
	}
}

func TestRatioAndPaired(t *testing.T) {
	if ratio(3, 2) != 1.5 || ratio(3, 0) != 0 {
		t.Error("ratio")
	}
	if got := paired(floats{2, 9, 4}, floats{1, 3}); !slices.Equal(got, floats{2, 3}) {
		t.Errorf("paired %v", got)
	}
}

// The counts that grew are the sample; the bench's own "before" read of
// /metrics is not the command's, its own reads of /metrics are.
func TestRequestDelta(t *testing.T) {
	s := requestDelta(map[string]float64{"GET /metrics": 7, "GET /apis": 3, "LIST configmaps": 10, "PUT leases": 4},
		map[string]float64{"GET /metrics": 8, "GET /apis": 4, "LIST configmaps": 12, "LIST secrets": 1, "PUT leases": 4, "DELETE configmaps": 5})
	if s.Requests != 9 || s.Lists != 3 || s.Discoveries != 1 || len(s.ByVerb) != 4 {
		t.Errorf("%+v", s)
	}
	if s := requestDelta(map[string]float64{"GET /metrics": 1}, map[string]float64{"GET /metrics": 4}); s.ByVerb["GET /metrics"] != 2 || s.Requests != 2 {
		t.Errorf("the command's own reads of /metrics: %+v", s)
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

// Many resources of one verb with the same counts are one row; the rest
// one row each, biggest first.
func TestVerbRowsAndBreakdown(t *testing.T) {
	a, b := map[string]float64{"PUT leases": 1, "PATCH events": 20, "GET /apis": 1}, map[string]float64{"PUT leases": 1, "PATCH events": 40, "GET /apis": 1}
	for _, r := range []string{"configmaps", "secrets", "pods", "services", "leases"} {
		a["LIST "+r], b["LIST "+r] = 20, 40
	}
	var names []string
	for _, r := range verbRows([]map[string]float64{{"PUT leases": 1}, a, b}) {
		names = append(names, r.Name)
	}
	if want := []string{"LIST, each of 5 resources (configmaps, leases, pods, secrets, …)", "PATCH events", "PUT leases", "GET /apis"}; !slices.Equal(names, want) {
		t.Errorf("rows %q, want %q", names, want)
	}
	if got := breakdown(a); got != "LIST, each of 5 resources (configmaps, leases, pods, secrets, …) ×20, PATCH events ×20, GET /apis ×1, PUT leases ×1" {
		t.Errorf("breakdown %q", got)
	}
	if trimFloat(0) != "–" || trimFloat(20) != "20" || trimFloat(2.5) != "2.5" {
		t.Error("trimFloat")
	}
}

func TestParseWatchMetrics(t *testing.T) {
	m, err := parseWatchMetrics(strings.NewReader(`# TYPE nsdoctor_diagnosis_duration_seconds histogram
nsdoctor_diagnosis_duration_seconds_bucket{le="0.05"} 3
nsdoctor_diagnosis_duration_seconds_bucket{le="+Inf"} 40
nsdoctor_diagnosis_duration_seconds_sum 1.25
nsdoctor_diagnosis_duration_seconds_count 40
# TYPE nsdoctor_diagnosis_errors_total counter
nsdoctor_diagnosis_errors_total 2
# TYPE nsdoctor_namespace_blocker gauge
nsdoctor_namespace_blocker{kind="Finalizer",namespace="w-0001",subject="example.com/bench-gone"} 1
nsdoctor_namespace_blocker{kind="Other",namespace="w-0001",subject="x"} 1
nsdoctor_namespace_blocker{kind="Finalizer",namespace="w-0002",subject="a,b"} 1
nsdoctor_namespace_blocker{kind="Finalizer",namespace="w-0004",subject="c"} 0
# TYPE nsdoctor_namespace_stuck gauge
nsdoctor_namespace_stuck{namespace="w-0003"} 1
`))
	if err != nil || m.diagnoses != 40 || m.diagSeconds != 1.25 || m.errors != 2 || len(m.blocked) != 2 || !m.blocked["w-0001"] || !m.blocked["w-0002"] {
		t.Errorf("%+v, %v", m, err)
	}
}

// The loop users write: one purge per namespace, each backed up apart;
// a sample of it scales up to all the namespaces.
func TestLoop(t *testing.T) {
	argvs := perNamespace([]string{"kubectl", "ns-doctor"}, []string{"a", "b"}, "example.com/*", "/bk")
	if want := []string{"kubectl", "ns-doctor", "purge", "b", "--force", "--yes", "--remove-finalizers=example.com/*", "--backup-dir", "/bk/b"}; len(argvs) != 2 || !slices.Equal(argvs[1], want) {
		t.Errorf("%q", argvs)
	}
	l := Loop{Ran: 50, Of: 1000, Sample: Sample{Seconds: 40, Requests: 100}}
	if s := l.Scaled(); s.Seconds != 800 || s.Requests != 2000 {
		t.Errorf("scaled %+v", s)
	}
	s := addSamples(Sample{Seconds: 1, Requests: 3, MaxRSS: 5, ByVerb: map[string]float64{"GET /apis": 1}}, Sample{Seconds: 2, Requests: 4, MaxRSS: 4, ByVerb: map[string]float64{"GET /apis": 2, "PUT x": 2}})
	if s.Seconds != 3 || s.Requests != 7 || s.MaxRSS != 5 || s.ByVerb["GET /apis"] != 3 || s.ByVerb["PUT x"] != 2 {
		t.Errorf("addSamples %+v", s)
	}
}
