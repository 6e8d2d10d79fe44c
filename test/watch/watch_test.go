package watch

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
	"github.com/ns-doctor/ns-doctor/test/support/prometheus"
)

// stuckCase is one namespace made stuck, and the blocker the watch must
// name for it.
type stuckCase struct {
	ns, kind, subject string
}

// TestWatchNamesEachBlocker makes three namespaces stuck for three
// reasons (an orphaned finalizer, an unavailable APIService, a pod on a
// node that is gone) and checks, within --after plus a resync or so, that
// the watch records a NamespaceStuck Event on each naming its blocker,
// updated rather than repeated; that /metrics exports the blocker series,
// and a real Prometheus scraping it fires the shipped alert for each; that
// -o json prints a line per changed diagnosis only; and, the namespaces
// gone, that their series go and the alerts resolve. Not parallel: the
// broken APIService holds every terminating namespace of the cluster.
func TestWatchNamesEachBlocker(t *testing.T) {
	ctx := context.Background()
	tools, err := prometheus.Install(ctx)
	if err != nil {
		t.Fatalf("the pinned Prometheus is needed for this test: %v", err)
	}
	base := plugintest.UniqueName(t)
	finNS, apiNS, podNS := base+"-fin", base+"-api", base+"-pod"
	group := "watch-" + base[len(base)-5:] + ".example.com"
	for _, ns := range []string{finNS, apiNS, podNS} {
		must(t, cluster.CreateNamespace(ctx, ns))
	}
	must(t, cluster.CreateConfigMap(ctx, finNS, "held", nil, "example.com/gone-operator"))
	must(t, cluster.CreateConfigMap(ctx, apiNS, "plain", nil))
	must(t, cluster.CreateBoundPod(ctx, podNS, "on-lost-node", 1))
	apiservice, err := cluster.BrokenAPIService(ctx, group, "v1", "default", "missing-"+base)
	must(t, err)
	t.Cleanup(func() { _ = cluster.DeleteAPIService(context.Background(), apiservice) })
	for _, ns := range []string{finNS, apiNS, podNS} {
		must(t, cluster.DeleteNamespace(ctx, ns))
	}
	cases := []stuckCase{
		{finNS, "FinalizersRemaining", "example.com/gone-operator"},
		{apiNS, "APIServiceUnavailable", group + "/v1"},
		{podNS, "PodsNotTerminating", "pods"},
	}

	after, resync := 10*time.Second, 5*time.Second
	w := startWatch(t, cp.Kubeconfig, "--after="+after.String(), "--resync="+resync.String(), "--grace=5s", "-o", "json")
	rules, err := prometheus.WriteRuleFile(filepath.Join("..", "..", "deploy", "monitoring", "prometheusrule.yaml"), t.TempDir(), "rules.yaml")
	must(t, err)
	srv, err := prometheus.Start(ctx, prometheus.Options{
		Binary:       tools.Prometheus,
		Targets:      []string{strings.TrimPrefix(w.metricsURL, "http://")},
		TargetLabels: map[string]string{"namespace": "ns-doctor", "pod": "ns-doctor-watch-0"},
		HonorLabels:  true,
		RuleFiles:    []string{rules},
	})
	must(t, err)
	defer srv.Stop()

	for _, c := range cases {
		label := fmt.Sprintf(`namespace=%q`, c.ns)
		poll(t, after+resync+90*time.Second, c.ns+"'s Event and series naming "+c.kind, func() (bool, error) {
			if len(w.series(t, "nsdoctor_namespace_blocker", label, fmt.Sprintf(`kind=%q`, c.kind), fmt.Sprintf(`subject=%q`, c.subject))) == 0 {
				return false, nil
			}
			for _, e := range events(t, c.ns, "NamespaceStuck") {
				if e.Type == "Warning" && strings.Contains(e.Message, c.kind) && strings.Contains(e.Message, "kubectl ns-doctor explain "+c.ns) {
					return true, nil
				}
			}
			return false, nil
		})
		if got := w.series(t, "nsdoctor_namespace_stuck", label); len(got) != 1 || !strings.HasSuffix(got[0], " 1") {
			t.Errorf("nsdoctor_namespace_stuck for %s: %v, want one series at 1", c.ns, got)
		}
		if got := w.series(t, "nsdoctor_namespace_terminating_seconds", label); len(got) != 1 {
			t.Errorf("nsdoctor_namespace_terminating_seconds for %s: %v, want one series", c.ns, got)
		}
	}

	for _, c := range cases {
		want := map[string]string{"namespace": c.ns, "kind": c.kind}
		err := prometheus.Poll(ctx, 3*time.Minute, fmt.Sprintf("NamespaceStuckTerminating firing for %v", want), func(ctx context.Context) (bool, error) {
			firing, err := srv.Firing(ctx, "NamespaceStuckTerminating", want)
			return len(firing) > 0, err
		})
		if err != nil {
			t.Fatalf("%v\n%s", err, srv.LogTail())
		}
	}
	checkEventsUpdatedNotMultiplied(t, cases)
	checkJSONLines(t, w.Stdout.String(), cases)

	// The namespaces let go: their series go, and so do the alerts.
	must(t, cluster.DeleteAPIService(ctx, apiservice))
	must(t, cluster.ReleaseConfigMap(ctx, finNS, "held"))
	must(t, cluster.Kube.CoreV1().Pods(podNS).Delete(ctx, "on-lost-node", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
	for _, c := range cases {
		poll(t, 2*time.Minute, c.ns+" gone", func() (bool, error) {
			_, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, c.ns, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	}
	poll(t, 30*time.Second, "the series of the namespaces gone", func() (bool, error) {
		for _, c := range cases {
			if len(w.series(t, "nsdoctor_namespace", fmt.Sprintf(`namespace=%q`, c.ns))) > 0 {
				return false, nil
			}
		}
		return true, nil
	})
	for _, c := range cases {
		for _, metric := range []string{"nsdoctor_namespace_blocker", "nsdoctor_namespace_stuck", "nsdoctor_namespace_terminating_seconds"} {
			if got := w.series(t, metric, fmt.Sprintf(`namespace=%q`, c.ns)); len(got) > 0 {
				t.Errorf("%s gone, yet /metrics has %v", c.ns, got)
			}
		}
	}
	err = prometheus.Poll(ctx, time.Minute, "NamespaceStuckTerminating resolved", func(ctx context.Context) (bool, error) {
		for _, c := range cases {
			active, err := srv.Active(ctx, "NamespaceStuckTerminating", map[string]string{"namespace": c.ns})
			if err != nil || len(active) > 0 {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, srv.LogTail())
	}
	if n := w.series(t, "nsdoctor_diagnosis_errors_total"); len(n) != 1 || !strings.HasSuffix(n[0], " 0") {
		t.Errorf("diagnoses failed: %v", n)
	}

	// A signal ends the watch cleanly.
	w.Signal(syscall.SIGTERM)
	if code := w.Exit(t, 30*time.Second); code != 0 {
		t.Errorf("watch exited %d on SIGTERM, want 0", code)
	}
}

// checkEventsUpdatedNotMultiplied: the same diagnosis repeated at every
// resync is one Event whose count grows, never two Events with the same
// message.
func checkEventsUpdatedNotMultiplied(t *testing.T, cases []stuckCase) {
	t.Helper()
	for _, c := range cases {
		seen := map[string]bool{}
		counted := false
		for _, e := range events(t, c.ns, "NamespaceStuck") {
			if seen[e.Message] {
				t.Errorf("%s: two NamespaceStuck Events say %q", c.ns, e.Message)
			}
			seen[e.Message] = true
			counted = counted || e.Count > 1
		}
		if !counted {
			t.Errorf("%s: no NamespaceStuck Event was updated (count > 1) over the resyncs", c.ns)
		}
	}
}

// checkJSONLines: -o json prints one Diagnosis per line, and a namespace's
// next line only when its diagnosis changed.
func checkJSONLines(t *testing.T, out string, cases []stuckCase) {
	t.Helper()
	last := map[string]string{}
	lines := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<24)
	for sc.Scan() {
		var doc struct {
			Kind      string `json:"kind"`
			Namespace struct {
				Name string `json:"name"`
			} `json:"namespace"`
			Verdict struct {
				State string `json:"state"`
			} `json:"verdict"`
			Blockers []struct {
				Kind    string `json:"kind"`
				Subject string `json:"subject"`
			} `json:"blockers"`
		}
		if err := json.Unmarshal(sc.Bytes(), &doc); err != nil || doc.Kind != "NamespaceDiagnosis" {
			t.Fatalf("a line of -o json is not a NamespaceDiagnosis (%v): %.200s", err, sc.Text())
		}
		key := doc.Verdict.State
		for _, b := range doc.Blockers {
			key += "|" + b.Kind + "=" + b.Subject
		}
		name := doc.Namespace.Name
		if last[name] == key {
			t.Errorf("%s: two lines in a row with the same diagnosis %q", name, key)
		}
		last[name] = key
		lines[name]++
	}
	for _, c := range cases {
		if lines[c.ns] == 0 {
			t.Errorf("no JSON line for %s", c.ns)
		}
	}
}
