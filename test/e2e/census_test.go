package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// TestExplainManyWithOneCensus: explain over many terminating namespaces
// reads one census across the cluster and then only the types each
// namespace holds. Its diagnosis of each must be the one explain gives of
// that namespace alone (which reads every type), and its conditions must
// agree with those the namespace controller wrote.
func TestExplainManyWithOneCensus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	batch := plugintest.UniqueName(t)
	gvr, err := cluster.EnsureCRD(ctx, "census.example.com", "Widget", "widgets")
	plugintest.Must(t, err)
	var names []string
	for i := range 9 {
		ns := fmt.Sprintf("%s-%d", batch, i)
		names = append(names, ns)
		plugintest.Must(t, cluster.CreateNamespaceWithLabels(ctx, ns, map[string]string{"batch": batch}))
		switch i % 3 {
		case 0:
			plugintest.Must(t, cluster.CreateConfigMap(ctx, ns, "held", nil, "example.com/census"))
		case 1:
			plugintest.Must(t, cluster.CreateCustomResource(ctx, gvr, "Widget", ns, "widget", "census.example.com/cleanup"))
		case 2:
			plugintest.Must(t, cluster.CreateConfigMap(ctx, ns, "held", nil, "example.com/census"))
			plugintest.Must(t, cluster.CreateCustomResource(ctx, gvr, "Widget", ns, "widget", "census.example.com/cleanup"))
		}
		plugintest.Must(t, cluster.DeleteNamespace(ctx, ns))
		t.Cleanup(func() {
			_ = cluster.ReleaseConfigMap(context.Background(), ns, "held")
			_, _ = cluster.Dynamic.Resource(gvr).Namespace(ns).Patch(context.Background(), "widget", "application/merge-patch+json",
				[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		})
	}
	for _, ns := range names {
		waitCondition(t, ns, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)
	}

	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", "-l", "batch="+batch, "-o", "json", "--grace=0s", "--full")
	var list printer.DiagnosisListDocument
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil || len(list.Items) != len(names) {
		t.Fatalf("explain -l --full: exit %d, %v, %d items\n%s", r.Code, err, len(list.Items), r.Stderr)
	}
	// The list view says of each what its full report says, in less.
	r2 := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", "-l", "batch="+batch, "-o", "json", "--grace=0s")
	var lines printer.SummaryListDocument
	if err := json.Unmarshal([]byte(r2.Stdout), &lines); err != nil || len(lines.Items) != len(names) || len(r2.Stdout)*3 > len(r.Stdout) {
		t.Fatalf("explain -l: exit %d, %v, %d items, %d bytes against --full's %d\n%s", r2.Code, err, len(lines.Items), len(r2.Stdout), len(r.Stdout), r2.Stderr)
	}
	for k, many := range list.Items {
		if got, want := summaryLine(lines.Items[k]), fullLine(many); got != want {
			t.Errorf("%s: the list view's line %s, its full report's %s", many.Namespace.Name, got, want)
		}
	}
	for _, many := range list.Items {
		alone := explain(t, cp.Kubeconfig, many.Namespace.Name).report
		if got, want := summary(many), summary(alone); got != want {
			t.Errorf("%s with the census:\n%s\nalone:\n%s", many.Namespace.Name, got, want)
		}
		for _, c := range many.Conditions {
			if !c.Agree {
				t.Errorf("%s with the census: condition %s: controller %+v, ns-doctor %+v", many.Namespace.Name, c.Type, c.Controller, c.Computed)
			}
		}
	}
}

// summary is what a diagnosis says, the content read in it: the verdict,
// each blocker and the content left per type (types holding nothing
// apart: the census does not read them).
func summary(d printer.DiagnosisDocument) string {
	lines := []string{string(d.Verdict.State)}
	for _, b := range d.Blockers {
		lines = append(lines, fmt.Sprintf("blocker %s %s", b.Kind, b.Subject))
	}
	var content []string
	for _, c := range d.Content {
		if c.Count > 0 || c.Error != "" {
			content = append(content, fmt.Sprintf("content %s %d terminating %d %v %s", c.Name(), c.Count, c.Terminating, c.Finalizers, c.Error))
		}
	}
	slices.Sort(content)
	for _, c := range d.Conditions {
		if v := c.Computed; v != nil {
			lines = append(lines, fmt.Sprintf("condition %s computed %s %s %s", c.Type, v.Status, v.Reason, v.Message))
		}
	}
	return strings.Join(append(lines, content...), "\n")
}

// summaryLine is what the list view says of a namespace; fullLine the
// same read from its full report.
func summaryLine(s printer.SummaryDocument) string {
	line := fmt.Sprintf("%s %s remaining %d", s.Namespace.Name, s.Verdict.State, s.Remaining)
	for _, b := range s.Blockers {
		line += fmt.Sprintf("; %s %s", b.Kind, b.Subject)
	}
	return line
}

func fullLine(d printer.DiagnosisDocument) string {
	remaining := 0
	for _, c := range d.Content {
		remaining += c.Count
	}
	line := fmt.Sprintf("%s %s remaining %d", d.Namespace.Name, d.Verdict.State, remaining)
	for _, b := range d.Blockers {
		line += fmt.Sprintf("; %s %s", b.Kind, b.Subject)
	}
	return line
}
