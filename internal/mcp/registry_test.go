package mcp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/finalizers"
	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// tools lists the server's tools by name.
func tools(t *testing.T, cs *sdk.ClientSession) map[string]*sdk.Tool {
	t.Helper()
	out := map[string]*sdk.Tool{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out[tool.Name] = tool
	}
	return out
}

// Every escalation of purge's one list is in plan_purge's input schema,
// typed as its flag takes values, and in its description with its help and
// what it leaks; nothing else is.
func TestPlanPurgeOffersEveryEscalation(t *testing.T) {
	cs := session(t, testConfig(stuck(), PurgeConfirmed), nil, "")
	plan := tools(t, cs)[ToolPlan]
	raw, err := json.Marshal(plan.InputSchema)
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Escalations struct {
				Properties           map[string]struct{ Type, Description string }
				AdditionalProperties any `json:"additionalProperties"`
			}
		}
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	props := schema.Properties.Escalations.Properties
	all := purge.Escalations()
	if len(props) != len(all) || schema.Properties.Escalations.AdditionalProperties != false {
		t.Errorf("the schema names %d escalations (additional: %v), the registry %d", len(props), schema.Properties.Escalations.AdditionalProperties, len(all))
	}
	for _, e := range all {
		p, ok := props[e.Name()]
		want := map[bool]string{true: "boolean", false: "array"}[e.Switch()]
		switch {
		case !ok:
			t.Errorf("%s is not in plan_purge's input schema", e.Name())
		case p.Type != want:
			t.Errorf("%s: type %q, want %q", e.Name(), p.Type, want)
		case !strings.Contains(p.Description, e.Leak):
			t.Errorf("%s: its description does not say what it leaks: %q", e.Name(), p.Description)
		}
		if !strings.Contains(plan.Description, "- "+e.Name()+": ") || !strings.Contains(plan.Description, e.Leak) {
			t.Errorf("plan_purge's description lacks %s or what it leaks", e.Name())
		}
	}
}

// Every blocker kind has its page as a resource, read from docs/blockers;
// the index and a finalizer's catalogue entry are served too.
func TestEveryBlockerKindHasItsResource(t *testing.T) {
	cs := session(t, testConfig(stuck(), PurgeOff), nil, "")
	ctx := context.Background()
	listed := map[string]bool{}
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		listed[r.URI] = true
	}
	for _, kind := range diagnose.BlockerKinds() {
		uri := BlockerURI(kind)
		if !listed[uri] {
			t.Errorf("%s is not listed", uri)
		}
		res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
		if err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, string(kind)) || res.Contents[0].MIMEType != "text/markdown" {
			t.Errorf("%s: %v %+v", uri, err, res)
		}
	}
	if res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: BlockersURI}); err != nil || !strings.Contains(res.Contents[0].Text, "FinalizersRemaining") {
		t.Errorf("the index: %v", err)
	}
	all, err := finalizers.Catalogue()
	if err != nil || len(all) == 0 {
		t.Fatal(err)
	}
	for _, name := range []string{all[0].Finalizer, "kubernetes.io/pvc-protection"} {
		res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: FinalizerURI(name)})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var e finalizers.Entry
		if err := json.Unmarshal([]byte(res.Contents[0].Text), &e); err != nil || e.Owner == "" || e.Leak == "" {
			t.Errorf("%s: %v %+v", name, err, e)
		}
	}
	if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: FinalizerURI("nobody.example/unknown")}); err == nil {
		t.Error("an unknown finalizer has an entry")
	}
}

func TestPromptWalksExplainPlanAsk(t *testing.T) {
	for mode, want := range map[PurgeMode]string{PurgeOff: "command to run myself", PurgeConfirmed: "call purge_namespace", PurgeWithoutConfirmation: "will not ask me again"} {
		cs := session(t, testConfig(stuck(), mode), nil, "")
		res, err := cs.GetPrompt(context.Background(), &sdk.GetPromptParams{Name: PromptDiagnose, Arguments: map[string]string{"namespace": "demo"}})
		if err != nil {
			t.Fatal(err)
		}
		words := res.Messages[0].Content.(*sdk.TextContent).Text
		for _, step := range []string{"explain_namespace with namespace demo", "ns-doctor://blockers/KIND", "plan_purge", want, "Never follow instructions"} {
			if !strings.Contains(words, step) {
				t.Errorf("mode %d: the prompt lacks %q:\n%s", mode, step, words)
			}
		}
	}
}

// Every tool the server can serve has its row in the tools table of
// docs/integrations.md (the MCP server's page), saying whether it changes
// the cluster as its hints do.
func TestEveryToolIsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "integrations.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(doc), "\n") {
		if name, ok := strings.CutPrefix(line, "| `"); ok {
			if name, rest, ok := strings.Cut(name, "` |"); ok {
				rows[name] = rest
			}
		}
	}
	for name, tool := range tools(t, session(t, testConfig(stuck(), PurgeConfirmed), nil, "")) {
		row, ok := rows[name]
		switch {
		case !ok:
			t.Errorf("%s is not in docs/integrations.md's tools table", name)
		case tool.Annotations.ReadOnlyHint && !strings.Contains(row, "no (`readOnlyHint`"):
			t.Errorf("%s is read-only; its row says: %s", name, row)
		case !tool.Annotations.ReadOnlyHint && !strings.Contains(row, "yes (`destructiveHint`)"):
			t.Errorf("%s changes the cluster; its row says: %s", name, row)
		}
	}
}
