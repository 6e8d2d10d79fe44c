package prometheus_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ns-doctor/ns-doctor/test/support/prometheus"
)

// exposition is a hand-written /metrics of `kubectl ns-doctor watch`
// (the text format, as client_golang writes it), switchable at run time.
type exposition struct {
	mu   sync.Mutex
	body string
}

func (e *exposition) set(body string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.body = body
}

func (e *exposition) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	// Prometheus 3 refuses a scrape without a known Content-Type.
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = fmt.Fprint(w, e.body)
}

const (
	leader = `# HELP nsdoctor_leader 1 on the leader replica.
# TYPE nsdoctor_leader gauge
nsdoctor_leader 1
`
	blockers = `# HELP nsdoctor_namespace_blocker 1 per blocker of a stuck namespace.
# TYPE nsdoctor_namespace_blocker gauge
nsdoctor_namespace_blocker{kind="FinalizersRemaining",namespace="demo",subject="example.com/gone"} 1
nsdoctor_namespace_blocker{kind="ControllerNotRunning",namespace="idle",subject=""} 1
`
)

// TestShippedRuleFiresAndResolves runs a real Prometheus with the rules of
// deploy/monitoring/prometheusrule.yaml, scraping a target labelled as a
// ServiceMonitor labels it (namespace=ns-doctor, honorLabels), and checks
// that NamespaceStuckTerminating fires for each blocker once `for` is over,
// with the stuck namespace (not the pod's) and its annotations, and
// resolves when the series goes.
func TestShippedRuleFiresAndResolves(t *testing.T) {
	ctx := context.Background()
	tools, err := prometheus.Install(ctx)
	if err != nil {
		t.Fatalf("the pinned Prometheus is needed for this test: %v", err)
	}
	root, err := prometheus.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	rules, err := prometheus.WriteRuleFile(filepath.Join(root, "deploy", "monitoring", "prometheusrule.yaml"), t.TempDir(), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}

	metrics := &exposition{body: leader + blockers}
	target := httptest.NewServer(metrics)
	defer target.Close()
	srv, err := prometheus.Start(ctx, prometheus.Options{
		Binary:       tools.Prometheus,
		Targets:      []string{strings.TrimPrefix(target.URL, "http://")},
		TargetLabels: map[string]string{"namespace": "ns-doctor", "pod": "ns-doctor-watch-0"},
		HonorLabels:  true,
		RuleFiles:    []string{rules},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()

	// The series as scraped: the metric's namespace label wins.
	err = prometheus.Poll(ctx, time.Minute, "nsdoctor_namespace_blocker scraped", func(ctx context.Context) (bool, error) {
		v, err := srv.Query(ctx, `nsdoctor_namespace_blocker{kind="FinalizersRemaining"}`)
		if err != nil || len(v) == 0 {
			return false, err
		}
		if len(v) != 1 || v[0].Metric["namespace"] != "demo" || v[0].Metric["pod"] != "ns-doctor-watch-0" || v[0].Value != 1 {
			return false, fmt.Errorf("scraped %v, want one series with namespace=demo, pod=ns-doctor-watch-0, value 1", v)
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, srv.LogTail())
	}

	want := []struct {
		labels                           map[string]string
		summary, descriptionPrefix, page string
	}{{
		labels:            map[string]string{"namespace": "demo", "kind": "FinalizersRemaining", "subject": "example.com/gone", "severity": "warning"},
		summary:           "Namespace demo is stuck in Terminating: FinalizersRemaining example.com/gone",
		descriptionPrefix: "Objects in demo wait for example.com/gone: finalizers",
		page:              "FinalizersRemaining",
	}, {
		labels:            map[string]string{"namespace": "idle", "kind": "ControllerNotRunning", "subject": "", "severity": "warning"},
		summary:           "Namespace idle is stuck in Terminating: ControllerNotRunning",
		descriptionPrefix: "No namespace controller seems to work on idle:",
		page:              "ControllerNotRunning",
	}}
	for _, w := range want {
		var firing []prometheus.Alert
		err := prometheus.Poll(ctx, 3*time.Minute, fmt.Sprintf("NamespaceStuckTerminating firing for %v", w.labels), func(ctx context.Context) (bool, error) {
			var err error
			firing, err = srv.Firing(ctx, "NamespaceStuckTerminating", w.labels)
			return len(firing) > 0, err
		})
		if err != nil {
			t.Fatalf("%v\n%s", err, srv.LogTail())
		}
		if len(firing) != 1 {
			t.Fatalf("firing %+v, want one alert for %v", firing, w.labels)
		}
		a := firing[0]
		// Not a timing assertion: an alert must have been active for its
		// whole `for` (1m) before it fires, however slow the machine.
		if held := time.Since(a.ActiveAt); held < time.Minute {
			t.Errorf("%v fired %s after it became active, before its for: 1m", w.labels, held)
		}
		// Only alertname and the expected labels; an empty subject is no
		// label at all in Prometheus.
		for k := range a.Labels {
			if _, ok := w.labels[k]; !ok && k != "alertname" {
				t.Errorf("alert labels %v: %s is not one of alertname, %v", a.Labels, k, w.labels)
			}
		}
		if got := a.Annotations["summary"]; got != w.summary {
			t.Errorf("summary %q, want %q", got, w.summary)
		}
		if got := a.Annotations["description"]; !strings.HasPrefix(got, w.descriptionPrefix) || strings.Contains(got, "\n") {
			t.Errorf("description %q, want one line starting %q", got, w.descriptionPrefix)
		}
		if got, want := a.Annotations["runbook_url"], "https://github.com/ns-doctor/ns-doctor/blob/main/docs/blockers/"+w.page+".md"; got != want {
			t.Errorf("runbook_url %q, want %q", got, want)
		}
	}
	// The watch up and leading: its dead man's switch stays quiet.
	if down, err := srv.Active(ctx, "NsDoctorWatchDown", nil); err != nil || len(down) > 0 {
		t.Errorf("NsDoctorWatchDown active while the watch is scraped and leads: %+v %v", down, err)
	}

	// The namespace gone: the series go, and so does each alert.
	metrics.set(leader)
	err = prometheus.Poll(ctx, 2*time.Minute, "NamespaceStuckTerminating resolved", func(ctx context.Context) (bool, error) {
		active, err := srv.Active(ctx, "NamespaceStuckTerminating", nil)
		return len(active) == 0, err
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, srv.LogTail())
	}
}

// TestQueryRejectsNonVectors keeps Query honest about its result type.
func TestQueryRejectsNonVectors(t *testing.T) {
	ctx := context.Background()
	tools, err := prometheus.Install(ctx)
	if err != nil {
		t.Fatalf("the pinned Prometheus is needed for this test: %v", err)
	}
	srv, err := prometheus.Start(ctx, prometheus.Options{Binary: tools.Prometheus})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	if _, err := srv.Query(ctx, `"a string"`); err == nil {
		t.Error("a string result was accepted as a vector")
	}
	v, err := srv.Query(ctx, `vector(3)`)
	if err != nil || len(v) != 1 || v[0].Value != 3 {
		t.Errorf("vector(3) = %+v, %v", v, err)
	}
	if _, err := srv.Query(ctx, `sum(`); err == nil {
		t.Error("a bad query gave no error")
	}
}
