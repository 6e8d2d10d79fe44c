package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

func TestPluginDispatchVersion(t *testing.T) {
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "version")
	if r.Code != 0 || !strings.Contains(r.Stdout, "ns-doctor "+testVersion) {
		t.Fatalf("kubectl ns-doctor version: code %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	r = plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "version", "-o", "json")
	var info map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &info); err != nil || info["version"] != testVersion || info["commit"] == "" {
		t.Fatalf("version -o json: %v, %q", err, r.Stdout)
	}
	if server, _ := info["server"].(map[string]any); server["version"] != "v1.37.2" || server["known"] != true {
		t.Errorf("version -o json names no server: %q", r.Stdout)
	}
}

func TestPluginHelpReadsAsKubectlPlugin(t *testing.T) {
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", "--help")
	if r.Code != 0 || !strings.Contains(r.Stdout, "kubectl ns-doctor explain [NAME...]") || !strings.Contains(r.Stdout, "--kubeconfig") {
		t.Fatalf("help: code %d\n%s", r.Code, r.Stdout)
	}
}

// The demo's namespace: the controller reports what the shared facts say,
// explain through kubectl names both blockers, and ns-doctor's computed
// conditions equal the controller's.
func TestExplainDemoNamespaceThroughKubectl(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	group := fmt.Sprintf("m%d.example.com", time.Now().UnixNano()%100000)
	demo, err := cluster.CreateDemo(ctx, name, group, 60*time.Second)
	t.Cleanup(func() { _ = cluster.DeleteAPIService(context.Background(), demo.APIService) })
	if err != nil {
		t.Fatal(err)
	}

	ns, err := cluster.WaitForConditions(ctx, name, 30*time.Second, v1.NamespaceDeletionDiscoveryFailure, v1.NamespaceContentRemaining, v1.NamespaceFinalizersRemaining)
	if err != nil {
		t.Fatal(err)
	}
	want := map[v1.NamespaceConditionType][2]string{
		v1.NamespaceDeletionDiscoveryFailure: {"DiscoveryFailed", "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: " + group + "/v1beta1: stale GroupVersion discovery: " + group + "/v1beta1"},
		v1.NamespaceContentRemaining:         {"SomeResourcesRemain", "Some resources are remaining: widgets.example.com has 1 resource instances"},
		v1.NamespaceFinalizersRemaining:      {"SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: example.com/cleanup in 1 resource instances"},
	}
	for _, c := range ns.Status.Conditions {
		if w, ok := want[c.Type]; ok && (c.Reason != w[0] || c.Message != w[1]) {
			t.Errorf("controller condition %s = %s / %q, want %s / %q", c.Type, c.Reason, c.Message, w[0], w[1])
		}
	}

	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", name, "--grace=0s")
	if r.Code != 3 {
		t.Fatalf("explain exit code %d, want 3 (stuck); stderr %q\n%s", r.Code, r.Stderr, r.Stdout)
	}
	for _, s := range []string{"STUCK", "APIServiceUnavailable", "v1beta1." + group, "ServiceNotFound", "--delete-apiservice=v1beta1." + group,
		"FinalizersRemaining", "example.com/cleanup", "widgets.example.com", "stuck-widget"} {
		if !strings.Contains(r.Stdout, s) {
			t.Errorf("explain output lacks %q:\n%s", s, r.Stdout)
		}
	}

	r = plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", name, "-o", "json", "--grace=0s")
	var report printer.DiagnosisDocument
	if err := json.Unmarshal([]byte(r.Stdout), &report); err != nil {
		t.Fatalf("explain -o json: %v\n%s", err, r.Stdout)
	}
	if report.APIVersion != printer.APIVersion || report.Kind != printer.DiagnosisKind || report.Verdict.State != diagnose.StateStuck {
		t.Errorf("report header: %s %s %s", report.APIVersion, report.Kind, report.Verdict.State)
	}
	if len(report.Blockers) != 2 || report.Blockers[0].Kind != diagnose.BlockerAPIServiceUnavailable || report.Blockers[1].Kind != diagnose.BlockerFinalizers ||
		!hasAction(report.Blockers[0], diagnose.Action{Kind: diagnose.ActionPurge, Flag: diagnose.FlagDeleteAPIService, Value: "v1beta1." + group}) {
		t.Errorf("blockers: %+v", report.Blockers)
	}
	for _, c := range report.Conditions {
		if !c.Agree {
			t.Errorf("condition %s: controller %+v, ns-doctor %+v", c.Type, c.Controller, c.Computed)
		}
	}
}
