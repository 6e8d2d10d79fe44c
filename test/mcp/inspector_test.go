package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/mcp"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// inspect runs the MCP Inspector's CLI on server (a command, or a URL)
// with args (its variadic --tool-arg last).
func inspect(t *testing.T, inspector string, server []string, args ...string) plugintest.Result {
	t.Helper()
	return plugintest.Command(t, t.TempDir(), 3*time.Minute, nil, inspector, append(append([]string{"--cli"}, server...), args...)...)
}

// checkInspected checks what the Inspector got from a server: the tools,
// their schemas portable enough for it (no error, --strict), and
// explain_namespace's diagnosis of a stuck namespace.
func checkInspected(t *testing.T, inspector, name string, server ...string) {
	t.Helper()
	r := inspect(t, inspector, server, "--method", "tools/list", "--strict")
	if r.Code != 0 || !strings.Contains(r.Stderr, "0 errors") {
		t.Fatalf("tools/list: exit %d\n%s\n%.2000s", r.Code, r.Stdout, r.Stderr)
	}
	var list struct{ Tools []sdk.Tool }
	plugintest.Must(t, json.Unmarshal([]byte(r.Stdout), &list))
	names := map[string]bool{}
	for _, tool := range list.Tools {
		names[tool.Name] = tool.InputSchema != nil && tool.OutputSchema != nil
	}
	for _, want := range []string{mcp.ToolListStuck, mcp.ToolExplain, mcp.ToolOrphans, mcp.ToolPlan, mcp.ToolRescuePlan} {
		if !names[want] {
			t.Errorf("the Inspector lists no %s with its schemas: %v", want, names)
		}
	}
	for _, acts := range []string{mcp.ToolPurge, mcp.ToolRescue} {
		if _, ok := names[acts]; ok {
			t.Errorf("%s served without --allow-purge", acts)
		}
	}
	r = inspect(t, inspector, server, "--method", "tools/call", "--tool-name", mcp.ToolExplain, "--tool-arg", "namespace="+name, "grace=0s")
	var res struct {
		Content           []struct{ Type, Text string }
		StructuredContent mcp.DiagnosisResult
		IsError           bool
	}
	if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil || r.Code != 0 || res.IsError {
		t.Fatalf("tools/call explain_namespace: exit %d, %v\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
	}
	d := res.StructuredContent
	if d.Namespace.Name != name || len(d.Blockers) == 0 || d.Blockers[0].Kind != diagnose.BlockerFinalizers || !strings.Contains(res.Content[0].Text, "stuck in Terminating") {
		t.Errorf("explain_namespace through the Inspector: %+v\n%s", d.Blockers, res.Content[0].Text)
	}
}

// The MCP Inspector's CLI, a client nobody here wrote, lists the tools and
// calls explain_namespace over stdio, the server as its subprocess.
func TestInspectorOverStdio(t *testing.T) {
	inspector := inspector(t)
	name := heldNamespace(t, "example.com/hold")
	// The Inspector passes a subprocess only a few variables of its own
	// environment: the kubeconfig goes on the command line.
	checkInspected(t, inspector, name, binary(), "mcp", "--kubeconfig="+cp.Kubeconfig)
}

// The same over streamable HTTP; and each HTTP session keeps its own
// plans.
func TestInspectorOverHTTP(t *testing.T) {
	inspector := inspector(t)
	name := heldNamespace(t, "example.com/hold")
	url := serveHTTP(t, cp.Kubeconfig)
	checkInspected(t, inspector, name, url)

	url = serveHTTP(t, cp.Kubeconfig, "--allow-purge")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	connect := func() *sdk.ClientSession {
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "ns-doctor-test", Version: "v0"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url}, nil)
		plugintest.Must(t, err)
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	a, b := connect(), connect()
	p := plan(t, a, name)
	if res := call(t, b, mcp.ToolPurge, map[string]any{"plan_id": p.PlanID}, nil); !res.IsError || !strings.Contains(summary(res), "unknown plan_id") {
		t.Fatalf("another HTTP session used the plan: %s", summary(res))
	}
	if res := call(t, a, mcp.ToolPurge, map[string]any{"plan_id": p.PlanID}, nil); !res.IsError || !strings.Contains(summary(res), "cannot ask the person") {
		t.Fatalf("a client without elicitation: %s", summary(res))
	}
}
