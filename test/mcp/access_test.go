package mcp_test

import (
	"context"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ns-doctor/ns-doctor/internal/mcp"
	"github.com/ns-doctor/ns-doctor/test/support/apimetrics"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// accessReviews counts the access reviews (rules and access) kube-apiserver
// served while fn ran; no other client of the test bed sends any.
func accessReviews(t *testing.T, fn func()) int {
	t.Helper()
	ctx := context.Background()
	before, err := apimetrics.RequestCounts(ctx, cluster.Kube)
	plugintest.Must(t, err)
	fn()
	after, err := apimetrics.RequestCounts(ctx, cluster.Kube)
	plugintest.Must(t, err)
	n := 0
	for what, count := range apimetrics.Delta(before, after) {
		if strings.HasSuffix(what, " selfsubjectaccessreviews") || strings.HasSuffix(what, " selfsubjectrulesreviews") {
			n += int(count)
		}
	}
	return n
}

// A rescue's access is checked once, with its plan: rescue_namespace,
// which plans again before asking the person and again after their
// answer, inside the window the pods leave, sends no access review (its
// plan's fingerprint covers what the check asked about).
func TestRescueChecksAccessOnlyWithItsPlan(t *testing.T) {
	name, _ := beingDeleted(t)
	cs, _ := serve(t, cp.Kubeconfig, func(*sdk.ElicitRequest) *sdk.ElicitResult {
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"namespace": name}}
	}, "--allow-purge", "--backup-dir", t.TempDir())
	var p mcp.RescuePlanResult
	planned := accessReviews(t, func() { p = planRescue(t, cs, name) })
	var done mcp.RescueResult
	acting := accessReviews(t, func() {
		if res := call(t, cs, mcp.ToolRescue, map[string]any{"plan_id": p.PlanID}, &done); res.IsError {
			t.Fatalf("rescue_namespace: %s", summary(res))
		}
	})
	t.Logf("rescue_plan: %d access review(s); rescue_namespace (asked, answered, acted): %d", planned, acting)
	if planned == 0 || acting != 0 {
		t.Errorf("rescue_plan sent %d access reviews, rescue_namespace %d: want some, then none", planned, acting)
	}
}
