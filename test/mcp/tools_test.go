package mcp_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/mcp"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/internal/purge"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// The tools, each with its input and output schema and its hints;
// purge_namespace only with --allow-purge.
func TestToolsAreListedWithSchemasAndHints(t *testing.T) {
	for _, allow := range []bool{false, true} {
		var args []string
		if allow {
			args = []string{"--allow-purge"}
		}
		cs, _ := serve(t, cp.Kubeconfig, nil, args...)
		tools := map[string]*sdk.Tool{}
		for tool, err := range cs.Tools(context.Background(), nil) {
			plugintest.Must(t, err)
			tools[tool.Name] = tool
		}
		for _, name := range []string{mcp.ToolListStuck, mcp.ToolExplain, mcp.ToolOrphans, mcp.ToolPlan} {
			tool := tools[name]
			if tool == nil {
				t.Fatalf("--allow-purge=%v: no tool %s", allow, name)
			}
			in, _ := json.Marshal(tool.InputSchema)
			out, _ := json.Marshal(tool.OutputSchema)
			if !strings.Contains(string(in), `"type":"object"`) || !strings.Contains(string(out), `"type":"object"`) || !tool.Annotations.ReadOnlyHint {
				t.Errorf("%s: input %s, output %.200s, annotations %+v", name, in, out, tool.Annotations)
			}
		}
		if !strings.Contains(fmt.Sprint(tools[mcp.ToolExplain].OutputSchema), "blockers") {
			t.Errorf("explain_namespace's output schema is not the diagnosis document's")
		}
		purgeTool, ok := tools[mcp.ToolPurge]
		if ok != allow {
			t.Fatalf("--allow-purge=%v: purge_namespace listed: %v", allow, ok)
		}
		if ok && (purgeTool.Annotations.ReadOnlyHint || purgeTool.Annotations.DestructiveHint == nil || !*purgeTool.Annotations.DestructiveHint) {
			t.Errorf("purge_namespace's hints: %+v", purgeTool.Annotations)
		}
	}
}

// explain_namespace returns the blockers explain -o json prints, on a
// finalizer nobody removes, then on an APIService whose service is gone
// (which holds every terminating namespace of the cluster meanwhile).
func TestExplainIsExplainJSON(t *testing.T) {
	ctx := context.Background()
	cs, _ := serve(t, cp.Kubeconfig, nil)
	held := heldNamespace(t, "example.com/hold")
	explainedAlike(t, cs, held, diagnose.BlockerFinalizers)

	apiName := plugintest.UniqueName(t) + "-api"
	group := fmt.Sprintf("m%d.example.com", time.Now().UnixNano()%100000)
	plugintest.Must(t, cluster.CreateNamespace(ctx, apiName))
	svc, err := cluster.BrokenAPIService(ctx, group, "v1", "kube-system", "gone")
	t.Cleanup(func() { _ = cluster.DeleteAPIService(context.Background(), svc) })
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.DeleteNamespace(ctx, apiName))
	settled(t, apiName, v1.NamespaceDeletionDiscoveryFailure)
	explainedAlike(t, cs, apiName, diagnose.BlockerAPIServiceUnavailable)

	// Both in the list, each diagnosed (in full: the package's other
	// tests leave stuck namespaces too).
	var list mcp.DiagnosisListResult
	call(t, cs, mcp.ToolListStuck, map[string]any{"detail": "full"}, &list)
	found := 0
	for _, item := range list.Items {
		if item.Namespace.Name == apiName || item.Namespace.Name == held {
			found++
		}
	}
	if found != 2 {
		t.Errorf("list_stuck_namespaces lists %d of the 2: %d items, cut %+v", found, len(list.Items), list.Cut)
	}
}

// explainedAlike compares explain_namespace's result on name with explain
// -o json's, which must hold a blocker of kind.
func explainedAlike(t *testing.T, cs *sdk.ClientSession, name string, kind diagnose.BlockerKind) {
	t.Helper()
	explainedAlikeIf(t, cs, name, kind, false)
}

// explainedAlikeIf is explainedAlike, for an Active namespace with
// if_deleted (explain --if-deleted).
func explainedAlikeIf(t *testing.T, cs *sdk.ClientSession, name string, kind diagnose.BlockerKind, ifDeleted bool) {
	t.Helper()
	var got mcp.DiagnosisResult
	args, flags := map[string]any{"namespace": name, "grace": "0s", "detail": "full"}, []string{"ns-doctor", "explain", name, "--grace=0s", "-o", "json"}
	if ifDeleted {
		args["if_deleted"], flags = true, append(flags, "--if-deleted")
	}
	res := call(t, cs, mcp.ToolExplain, args, &got)
	if res.IsError {
		t.Fatalf("%s: %s", name, summary(res))
	}
	j := plugin.Kubectl(t, cp.Kubeconfig, flags...)
	var want printer.DiagnosisDocument
	plugintest.Must(t, json.Unmarshal([]byte(j.Stdout), &want))
	kinds := ""
	for _, b := range want.Blockers {
		kinds += " " + string(b.Kind)
	}
	if !strings.Contains(kinds, string(kind)) {
		t.Fatalf("%s: explain -o json's blockers:%s, want %s", name, kinds, kind)
	}
	// The whole document, but when each was observed (and the durations
	// that follow from it) and what bounding cut (nothing, at full detail).
	if len(got.Cut) > 0 || got.TextCut > 0 {
		t.Errorf("%s: explain_namespace at full detail cut %+v, %d texts", name, got.Cut, got.TextCut)
	}
	if g, w := comparable(t, got.DiagnosisDocument), comparable(t, want); g != w {
		t.Errorf("%s: explain_namespace differs from explain -o json:\n%s", name, firstDifference(g, w))
	}
	if s := summary(res); !strings.Contains(s, string(kind)) || !ifDeleted && !strings.Contains(s, "stuck in Terminating") {
		t.Errorf("%s: summary %q", name, s)
	}
}

// explain_namespace with if_deleted predicts, as explain --if-deleted does,
// what would hold an Active namespace if it were deleted now, changing
// nothing.
func TestExplainIfDeleted(t *testing.T) {
	ctx := context.Background()
	cs, _ := serve(t, cp.Kubeconfig, nil)
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "held", nil, "example.com/hold"))
	t.Cleanup(func() {
		_ = cluster.ReleaseConfigMap(context.Background(), name, "held")
		_ = cluster.DeleteNamespace(context.Background(), name)
	})
	before := resourceVersions(t, name)
	explainedAlikeIf(t, cs, name, diagnose.BlockerFinalizers, true)
	if after := resourceVersions(t, name); after != before {
		t.Errorf("explaining changed the cluster: %s, then %s", before, after)
	}
	// Without if_deleted, an Active namespace is no question of explain's.
	var got mcp.DiagnosisResult
	res := call(t, cs, mcp.ToolExplain, map[string]any{"namespace": name}, &got)
	if res.IsError || got.Verdict.State == diagnose.StateStuck {
		t.Errorf("an Active namespace without if_deleted: %s %+v", summary(res), got.Verdict)
	}
}

// durations are the times a document says that depend on when it was
// made ("for 12s", "5m3s ago").
var durations = regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|ms|s|m|h)(\d+(\.\d+)?(ms|s|m))*\b`)

// comparable is a diagnosis document as JSON, one field a line, without
// when it was observed and the durations that follow from that.
func comparable(t *testing.T, d printer.DiagnosisDocument) string {
	t.Helper()
	d.ObservedAt = time.Time{}
	out, err := json.MarshalIndent(d, "", " ")
	plugintest.Must(t, err)
	return durations.ReplaceAllString(string(out), "D")
}

// firstDifference shows where two texts first differ, line by line.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d:\n  explain_namespace: %s\n  explain -o json:   %s", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(g), len(w))
}

// resourceVersions are the namespace's and its ConfigMaps'.
func resourceVersions(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	ns, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	plugintest.Must(t, err)
	cms, err := cluster.Kube.CoreV1().ConfigMaps(name).List(ctx, metav1.ListOptions{})
	plugintest.Must(t, err)
	out := ns.ResourceVersion
	for _, cm := range cms.Items {
		out += " " + cm.Name + "=" + cm.ResourceVersion + fmt.Sprint(cm.Finalizers)
	}
	return out
}

// plan plans a purge that strips the namespace's example.com finalizers.
func plan(t *testing.T, cs *sdk.ClientSession, name string) mcp.PlanResult {
	t.Helper()
	var p mcp.PlanResult
	res := call(t, cs, mcp.ToolPlan, map[string]any{"namespace": name, "escalations": map[string]any{"remove-finalizers": []string{"example.com/*"}}}, &p)
	if res.IsError || p.PlanID == "" || p.WouldChange.Of(purge.RowStrip).Rows != 1 || !p.WouldChange.Finalize {
		t.Fatalf("plan_purge: %s %+v", summary(res), p)
	}
	return p
}

// plan_purge, then purge_namespace, the person accepting through the
// client: the namespace is gone, everything deleted or stripped saved. A
// client of the latest protocol gets the question in the tool's result
// (multi round-trip), one of 2025-06-18 (what Claude Code, VS Code and
// Cursor speak in 2026) as an elicitation/create request.
func TestPurgeWithThePersonsConsent(t *testing.T) {
	for _, protocol := range []string{"", "2025-06-18"} {
		t.Run("protocol="+cmp.Or(protocol, "latest"), func(t *testing.T) { purgeWithConsent(t, protocol) })
	}
}

func purgeWithConsent(t *testing.T, protocol string) {
	name := heldNamespace(t, "example.com/hold")
	backups := t.TempDir()
	var asked []string
	cs, _ := serveAs(t, protocol, cp.Kubeconfig, func(req *sdk.ElicitRequest) *sdk.ElicitResult {
		asked = append(asked, req.Params.Message)
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"namespace": name}}
	}, "--allow-purge", "--backup-dir", backups)
	before := resourceVersions(t, name)
	p := plan(t, cs, name)
	if after := resourceVersions(t, name); after != before {
		t.Fatalf("the plan changed the cluster: %s, then %s", before, after)
	}
	if !strings.Contains(p.Command, "kubectl ns-doctor purge "+name+" --force") || !strings.Contains(p.Command, "--remove-finalizers='example.com/*'") {
		t.Errorf("command %q", p.Command)
	}
	var done mcp.PurgeResult
	res := call(t, cs, mcp.ToolPurge, map[string]any{"plan_id": p.PlanID}, &done)
	if res.IsError {
		t.Fatalf("purge_namespace: %s", summary(res))
	}
	if len(asked) != 1 || !strings.Contains(asked[0], fmt.Sprintf("FOR REAL on namespace %q", name)) || !strings.Contains(asked[0], "strip finalizers example.com/*") ||
		!strings.Contains(asked[0], "Type the namespace name to go on") {
		t.Errorf("the person was asked: %q", asked)
	}
	if done.Purge.Outcome != purge.OutcomeGone || !strings.HasPrefix(done.Purge.BackupDir, backups) || !strings.Contains(done.Consent, "the person confirmed") {
		t.Fatalf("purge: %s %+v", summary(res), done)
	}
	if _, err := cluster.Kube.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace still there: %v", err)
	}
	saved, err := backup.Saved(done.Purge.BackupDir)
	plugintest.Must(t, err)
	if !strings.Contains(strings.Join(saved, " "), "configmaps.core.json/held") {
		t.Errorf("backup holds %v", saved)
	}
	if _, err := os.Stat(filepath.Join(done.Purge.BackupDir, "namespace.yaml")); err != nil {
		t.Errorf("namespace not saved: %v", err)
	}
}

// The person declines, or cancels: nothing changes.
func TestDeclinedPurgeChangesNothing(t *testing.T) {
	name := heldNamespace(t, "example.com/hold")
	for _, action := range []string{"decline", "cancel"} {
		cs, _ := serve(t, cp.Kubeconfig, func(*sdk.ElicitRequest) *sdk.ElicitResult { return &sdk.ElicitResult{Action: action} }, "--allow-purge")
		p := plan(t, cs, name)
		before := resourceVersions(t, name)
		res := call(t, cs, mcp.ToolPurge, map[string]any{"plan_id": p.PlanID}, nil)
		if !res.IsError || !strings.Contains(summary(res), "nothing was changed") {
			t.Fatalf("%s: %s", action, summary(res))
		}
		if after := resourceVersions(t, name); after != before {
			t.Fatalf("%s changed the cluster: %s, then %s", action, before, after)
		}
	}
	// A client that cannot ask its person is refused.
	cs, _ := serve(t, cp.Kubeconfig, nil, "--allow-purge")
	p := plan(t, cs, name)
	res := call(t, cs, mcp.ToolPurge, map[string]any{"plan_id": p.PlanID}, nil)
	if !res.IsError || !strings.Contains(summary(res), "cannot ask the person") {
		t.Fatalf("no elicitation: %s", summary(res))
	}
}

// A plan whose would-change set moved after it was made (a finalizer
// gone from the held object) is refused: plan again. So is a plan_id
// from another connection.
func TestStalePlanIsRefused(t *testing.T) {
	name := heldNamespace(t, "example.com/hold", "example.com/other")
	accepted := func(*sdk.ElicitRequest) *sdk.ElicitResult {
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"namespace": name}}
	}
	cs, _ := serve(t, cp.Kubeconfig, accepted, "--allow-purge")
	p := plan(t, cs, name)
	other, _ := serve(t, cp.Kubeconfig, accepted, "--allow-purge")
	if res := call(t, other, mcp.ToolPurge, map[string]any{"plan_id": p.PlanID}, nil); !res.IsError || !strings.Contains(summary(res), "unknown plan_id") {
		t.Fatalf("a plan from another connection: %s", summary(res))
	}
	ctx := context.Background()
	_, err := cluster.Kube.CoreV1().ConfigMaps(name).Patch(ctx, "held", types.JSONPatchType,
		[]byte(`[{"op":"test","path":"/metadata/finalizers/1","value":"example.com/other"},{"op":"remove","path":"/metadata/finalizers/1"}]`), metav1.PatchOptions{})
	plugintest.Must(t, err)
	before := resourceVersions(t, name)
	res := call(t, cs, mcp.ToolPurge, map[string]any{"plan_id": p.PlanID}, nil)
	if !res.IsError || !strings.Contains(summary(res), "plan again") || !strings.Contains(summary(res), "nothing was changed") {
		t.Fatalf("stale plan: %s", summary(res))
	}
	t.Logf("refused: %s", summary(res))
	if after := resourceVersions(t, name); after != before {
		t.Fatalf("a stale plan changed the cluster: %s, then %s", before, after)
	}
	if s := summary(res); !strings.Contains(s, "has moved since") && !strings.Contains(s, "changed since the plan") {
		t.Errorf("stale plan: %s, want it to say what moved", s)
	}
	// Planned again, it goes.
	settled(t, name, v1.NamespaceFinalizersRemaining)
	p = plan(t, cs, name)
	var done mcp.PurgeResult
	if res := call(t, cs, mcp.ToolPurge, map[string]any{"plan_id": p.PlanID}, &done); res.IsError || done.Purge.Outcome != purge.OutcomeGone {
		t.Fatalf("planned again: %s %+v", summary(res), done.Purge.Outcome)
	}
}

// A plan of an Active namespace, to delete it first (delete-namespace),
// goes stale when an object is added to the namespace after it: the
// namespace's own resourceVersion does not move, what the plan would
// change does (its fingerprint). Nothing is changed, the namespace stays.
func TestPlanStaleWhenAnObjectIsAdded(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "first", nil))
	t.Cleanup(func() { _ = cluster.DeleteNamespace(context.Background(), name) })
	cs, _ := serve(t, cp.Kubeconfig, func(*sdk.ElicitRequest) *sdk.ElicitResult {
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"namespace": name}}
	}, "--allow-purge")
	var p mcp.PlanResult
	res := call(t, cs, mcp.ToolPlan, map[string]any{"namespace": name, "escalations": map[string]any{"delete-namespace": true}}, &p)
	if res.IsError || p.PlanID == "" || !p.WouldChange.Finalize || p.WouldChange.Objects < 1 {
		t.Fatalf("plan_purge: %s %+v", summary(res), p.WouldChange)
	}
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "added", nil))
	before := resourceVersions(t, name)
	res = call(t, cs, mcp.ToolPurge, map[string]any{"plan_id": p.PlanID}, nil)
	if s := summary(res); !res.IsError || !strings.Contains(s, "has moved since") || !strings.Contains(s, "nothing was changed") {
		t.Fatalf("an object added after the plan: %s", s)
	}
	ns, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	plugintest.Must(t, err)
	if after := resourceVersions(t, name); after != before || ns.DeletionTimestamp != nil {
		t.Fatalf("a stale plan changed the cluster: %s, then %s (deleting: %v)", before, after, ns.DeletionTimestamp != nil)
	}
}

// list_orphans returns what a namespace finalized by hand left in storage:
// the document explain --orphans -o json prints.
func TestListOrphansIsExplainOrphans(t *testing.T) {
	ctx := context.Background()
	former := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, former))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, former, "plain", nil))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, former, "held", nil, "example.com/keep"))
	plugintest.Must(t, cluster.ForceFinalize(ctx, former))
	t.Cleanup(func() {
		for _, name := range []string{"plain", "kube-root-ca.crt"} {
			_ = cluster.Kube.CoreV1().ConfigMaps(former).Delete(context.Background(), name, metav1.DeleteOptions{})
		}
		_ = cluster.Kube.CoreV1().ServiceAccounts(former).Delete(context.Background(), "default", metav1.DeleteOptions{})
		_ = cluster.ReleaseConfigMap(context.Background(), former, "held")
	})
	cs, _ := serve(t, cp.Kubeconfig, nil)
	var got mcp.OrphansResult
	res := call(t, cs, mcp.ToolOrphans, map[string]any{"namespace": former, "detail": "full"}, &got)
	if res.IsError {
		t.Fatalf("list_orphans: %s", summary(res))
	}
	j := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", "--orphans", former, "-o", "json")
	var want printer.OrphansDocument
	plugintest.Must(t, json.Unmarshal([]byte(j.Stdout), &want))
	// The two made here, and kube-root-ca.crt and default where the bed's
	// controllers made them.
	made := 2
	if cluster.Settle {
		made = 4
	}
	if len(want.Namespaces) != 1 || want.Namespaces[0].Objects != made {
		t.Fatalf("explain --orphans %s: %+v, want %d objects", former, want.Namespaces, made)
	}
	got.ObservedAt, want.ObservedAt = time.Time{}, time.Time{}
	g, _ := json.MarshalIndent(got.OrphansDocument, "", " ")
	w, _ := json.MarshalIndent(want, "", " ")
	if string(g) != string(w) {
		t.Errorf("list_orphans differs from explain --orphans -o json:\n%s", firstDifference(string(g), string(w)))
	}
	// A namespace that exists has no orphans: one clear line.
	res = call(t, cs, mcp.ToolOrphans, map[string]any{"namespace": "default"}, nil)
	if s := summary(res); !res.IsError || !strings.Contains(s, "exists") || strings.Contains(s, "\n") {
		t.Errorf("list_orphans of a namespace that exists: %s", s)
	}
}

// A server dry run through plan_purge: every request is sent with
// dryRun=All, nothing persists. With --allow-purge=without-confirmation,
// purge_namespace acts on the plan without asking, and says nobody was
// asked.
func TestServerDryRunAndWithoutConfirmation(t *testing.T) {
	name := heldNamespace(t, "example.com/hold")
	cs, _ := serve(t, cp.Kubeconfig, nil, "--allow-purge=without-confirmation", "--backup-dir", t.TempDir())
	before := resourceVersions(t, name)
	var dry mcp.PlanResult
	res := call(t, cs, mcp.ToolPlan, map[string]any{"namespace": name, "dry_run": "server",
		"escalations": map[string]any{"remove-finalizers": []string{"example.com/*"}}}, &dry)
	if res.IsError || dry.Plan.Mode != purge.DryRunServer || dry.Plan.Outcome != purge.OutcomePlanned {
		t.Fatalf("plan_purge dryRun=server: %s mode %q outcome %q", summary(res), dry.Plan.Mode, dry.Plan.Outcome)
	}
	if after := resourceVersions(t, name); after != before {
		t.Fatalf("a server dry run changed the cluster: %s, then %s", before, after)
	}
	p := plan(t, cs, name)
	var done mcp.PurgeResult
	res = call(t, cs, mcp.ToolPurge, map[string]any{"plan_id": p.PlanID}, &done)
	if res.IsError || done.Purge.Outcome != purge.OutcomeGone || !strings.Contains(done.Consent, "nobody was asked") {
		t.Fatalf("purge_namespace without confirmation: %s %+v", summary(res), done.Consent)
	}
}
