package main

import (
	"slices"
	"strings"
	"testing"
)

func TestParseWatchMetrics(t *testing.T) {
	text := `# HELP nsdoctor_diagnosis_duration_seconds Time per diagnosis of a namespace.
# TYPE nsdoctor_diagnosis_duration_seconds histogram
nsdoctor_diagnosis_duration_seconds_bucket{le="0.05"} 3
nsdoctor_diagnosis_duration_seconds_sum 1.25
nsdoctor_diagnosis_duration_seconds_count 40
nsdoctor_diagnosis_errors_total 2
nsdoctor_namespace_blocker{kind="Finalizer",namespace="w-0001",subject="example.com/bench-gone"} 1
nsdoctor_namespace_blocker{kind="Other",namespace="w-0001",subject="x"} 1
nsdoctor_namespace_blocker{kind="Finalizer",namespace="w-0002",subject="a,b"} 1
nsdoctor_namespace_stuck{namespace="w-0003"} 1
`
	m, err := parseWatchMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if m.diagnoses != 40 || m.diagSeconds != 1.25 || m.errors != 2 {
		t.Errorf("counts %+v", m)
	}
	if len(m.blocked) != 2 || !m.blocked["w-0001"] || !m.blocked["w-0002"] {
		t.Errorf("blocked %v, want w-0001 and w-0002", m.blocked)
	}
}

func TestStatusField(t *testing.T) {
	status := "Name:\tkubectl-ns_doctor\nVmPeak:\t 1300000 kB\nVmHWM:\t   61234 kB\nVmRSS:\t   50000 kB\n"
	if v, err := statusField(status, "VmHWM"); err != nil || v != 61234 {
		t.Errorf("VmHWM %v, %v", v, err)
	}
	if v, err := statusField(status, "VmRSS"); err != nil || v != 50000 {
		t.Errorf("VmRSS %v, %v", v, err)
	}
	if _, err := statusField(status, "VmSwap"); err == nil {
		t.Error("a missing field read without error")
	}
}

// Many resources of one verb with the same counts collapse into one row;
// the rest stay one row each, biggest first.
func TestVerbRows(t *testing.T) {
	idle := map[string]float64{"PUT leases": 1}
	a := map[string]float64{"PUT leases": 1, "PATCH events": 20, "GET /apis": 1}
	b := map[string]float64{"PUT leases": 1, "PATCH events": 40, "GET /apis": 1}
	for _, r := range []string{"configmaps", "secrets", "pods", "services", "leases"} {
		a["LIST "+r], b["LIST "+r] = 20, 40
	}
	rows := verbRows([]map[string]float64{idle, a, b})
	var names []string
	for _, r := range rows {
		names = append(names, r.name)
	}
	want := []string{"LIST, each of 5 resources (configmaps, leases, pods, secrets, …)", "PATCH events", "PUT leases", "GET /apis"}
	if !slices.Equal(names, want) {
		t.Fatalf("rows %q, want %q", names, want)
	}
	if !slices.Equal(rows[0].values, []float64{0, 20, 40}) {
		t.Errorf("values %v", rows[0].values)
	}
}

func TestTrimFloat(t *testing.T) {
	for v, want := range map[float64]string{0: "–", 20: "20", 2.5: "2.5", 0.25: "0.2"} {
		if got := trimFloat(v); got != want {
			t.Errorf("trimFloat(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestCollapseLists(t *testing.T) {
	m := map[string]float64{"LIST configmaps": 1000, "GET namespaces": 1000, "PUT namespaces/finalize": 1000}
	for _, r := range []string{"a", "b", "c", "d", "e"} {
		m["LIST "+r] = 2
	}
	got := collapseLists(m)
	want := "GET namespaces ×1000, LIST configmaps ×1000, PUT namespaces/finalize ×1000, LIST ×2 each of 5 other resources"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestWatchSectionTables: each of the watch section's two tables has a
// column per step, its header and separator as wide as its rows.
func TestWatchSectionTables(t *testing.T) {
	step := func(stuck int) watchStep {
		return watchStep{Stuck: stuck, Resyncs: 4, Diagnoses: float64(4 * stuck), Requests: sample{Requests: 100, ByVerb: map[string]float64{"LIST configmaps": 80}}}
	}
	r := &report{}
	r.watchSection(&watchResult{Namespaces: 10, ObjectsPer: 5, Types: 31, Resync: 15e9, BuildSeconds: 1, IdleResyncs: 2,
		Idle: sample{ByVerb: map[string]float64{"PUT leases": 3}}, Steps: []watchStep{step(2), step(4)}, Argv: []string{"x", "watch"}})
	out := strings.Join(r.sections, "\n")
	for _, want := range []string{
		"| | API server alone, per resync's time | 2 stuck, per resync | 4 stuck, per resync |\n|---|---|---|---|\n| requests, all |",
		"| verb resource | API server alone | 2 stuck | 4 stuck |\n|---|---|---|---|\n| LIST configmaps |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}
