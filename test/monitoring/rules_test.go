package monitoring

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
	"github.com/ns-doctor/ns-doctor/test/support/prometheus"
)

const prometheusRule = "deploy/monitoring/prometheusrule.yaml"

// TestAlertRulesPassPromtool writes the PrometheusRule's groups as the
// rules file Prometheus gets from the operator, checks it with `promtool
// check rules`, and runs testdata/rules_test.yaml on it with `promtool
// test rules`: when each alert fires, once per namespace, kind and
// subject, with which words, and never without a blocker series.
func TestAlertRulesPassPromtool(t *testing.T) {
	bin := promtool(t)
	dir := t.TempDir()
	if _, err := prometheus.WriteRuleFile(filepath.Join(repoRoot, prometheusRule), dir, "nsdoctor-rules.yaml"); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join("testdata", "rules_test.yaml"))
	plugintest.Must(t, err)
	plugintest.Must(t, os.WriteFile(filepath.Join(dir, "rules_test.yaml"), tests, 0o644))

	check := plugintest.Command(t, dir, 2*time.Minute, nil, bin, "check", "rules", "nsdoctor-rules.yaml")
	if check.Code != 0 || !strings.Contains(check.Stdout, "SUCCESS: 3 rules found") {
		t.Errorf("promtool check rules %s: exit %d\n%s%s", prometheusRule, check.Code, check.Stdout, check.Stderr)
	}
	unit := plugintest.Command(t, dir, 2*time.Minute, nil, bin, "test", "rules", "rules_test.yaml")
	if unit.Code != 0 || !strings.Contains(unit.Stdout, "SUCCESS") {
		t.Errorf("promtool test rules test/monitoring/testdata/rules_test.yaml: exit %d\n%s%s", unit.Code, unit.Stdout, unit.Stderr)
	}
}

// ruleDoc is what these tests read of the PrometheusRule.
type ruleDoc struct {
	Spec struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert       string            `json:"alert"`
				Expr        string            `json:"expr"`
				For         string            `json:"for"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

// TestStuckAlertHasWordsForEveryBlockerKind keeps the alert's next steps in
// step with the blocker kinds explain raises: a kind added to
// internal/diagnose needs its branch in the description (it would
// otherwise get the generic "run explain"). ListForbidden never makes a
// namespace stuck, so the watch exports no such blocker.
func TestStuckAlertHasWordsForEveryBlockerKind(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, prometheusRule))
	plugintest.Must(t, err)
	var doc ruleDoc
	plugintest.Must(t, yaml.Unmarshal(data, &doc))
	var description, runbook string
	for _, g := range doc.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert == "NamespaceStuckTerminating" {
				description, runbook = r.Annotations["description"], r.Annotations["runbook_url"]
			}
		}
	}
	if description == "" {
		t.Fatalf("%s: no NamespaceStuckTerminating alert with a description", prometheusRule)
	}
	for _, kind := range diagnose.BlockerKinds() {
		if kind == diagnose.BlockerForbidden {
			continue
		}
		if !strings.Contains(description, `eq $labels.kind "`+string(kind)+`"`) {
			t.Errorf("NamespaceStuckTerminating's description has no next step for %s (docs/blockers/%s.md)", kind, kind)
		}
	}
	if want := "https://github.com/ns-doctor/ns-doctor/blob/main/docs/blockers/{{ $labels.kind }}.md"; runbook != want {
		t.Errorf("runbook_url %q, want %q", runbook, want)
	}
}
