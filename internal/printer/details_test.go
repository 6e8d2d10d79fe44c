package printer

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ns-doctor/ns-doctor/internal/apierror"
	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// changes, warnings and errors are said twice in the document: as words,
// and typed beside them, entry for entry, with the same words as message.
func TestDetailsAreTheWordsTyped(t *testing.T) {
	r := incompleteReport()
	r.Failures = append(r.Failures,
		purge.Failure{Verb: "strip", Resource: "gadgets.example.com", Name: "g2", Count: 1, First: now, Last: now,
			Error: `gadgets.example.com "g2" is forbidden: User "jane" cannot patch resource "gadgets" in API group "example.com" in the namespace "team-a"`},
		purge.Failure{Verb: "restore", Resource: "ValidatingWebhookConfiguration", Name: "guard", Path: "/b/guard.yaml", Count: 1, First: now, Last: now,
			Error: `Get "https://10.0.0.1/apis": dial tcp 10.0.0.1:443: connect: connection refused`})
	r.Warnings = append(r.Warnings, purge.Warning{Kind: purge.WarnBypassedRefusal, Request: "delete pods/p1",
		Text: `admission webhook "deny.guard" denied the request: pods stay`})
	var doc PurgeDocument
	b, err := json.Marshal(Purge(r))
	if err != nil || json.Unmarshal(b, &doc) != nil {
		t.Fatal(err)
	}
	if len(doc.ChangeDetails) != len(doc.Changes) || len(doc.WarningDetails) != len(doc.Warnings) || len(doc.ErrorDetails) != len(doc.Errors) {
		t.Fatalf("not one detail per entry: %d/%d changes, %d/%d warnings, %d/%d errors", len(doc.ChangeDetails), len(doc.Changes),
			len(doc.WarningDetails), len(doc.Warnings), len(doc.ErrorDetails), len(doc.Errors))
	}
	for i, c := range doc.ChangeDetails {
		if c.Message != doc.Changes[i] || c.Kind != r.Changes[i].Kind {
			t.Errorf("change %d: %+v", i, c)
		}
	}
	if c := doc.ChangeDetails[1]; c.Resource != "gadgets.example.com" || c.Name != "g2" || len(c.Finalizers) != 1 {
		t.Errorf("a strip's fields: %+v", c)
	}
	for i, w := range doc.WarningDetails {
		if w.Message != doc.Warnings[i] || w.Kind != r.Warnings[i].Kind {
			t.Errorf("warning %d: %+v", i, w)
		}
	}
	if w := doc.WarningDetails[2]; w.APIError == nil || w.APIError.Kind != apierror.WebhookDenied || w.APIError.Webhook != "deny.guard" || w.APIError.Denial != "pods stay" {
		t.Errorf("a bypassed refusal's answer: %+v", w)
	}
	for i, e := range doc.ErrorDetails {
		if e.Message != doc.Errors[i] || e.Kind != e.APIError.Kind || e.Error != r.Failures[i].Error {
			t.Errorf("error %d: %+v", i, e)
		}
	}
	if e := doc.ErrorDetails[0]; e.Kind != apierror.Other || e.Verb != "deletecollection" || e.Count != 1 {
		t.Errorf("an answer ns-doctor does not know: %+v", e)
	}
	if e := doc.ErrorDetails[1]; e.Kind != apierror.Forbidden || e.APIError.User != "jane" || e.APIError.Verb != "patch" || e.APIError.Group != "example.com" || e.Name != "g2" {
		t.Errorf("a refusal: %+v", e)
	}
	if e := doc.ErrorDetails[2]; e.Kind != apierror.Unreachable || e.APIError.Cause != apierror.CauseRefused || e.BackupPath != "/b/guard.yaml" {
		t.Errorf("a restore that failed: %+v", e)
	}
	// Empty, they are empty lists, as their words are.
	empty, _ := json.Marshal(Purge(&purge.Report{Namespace: "x"}))
	for _, key := range []string{`"changeDetails":[]`, `"warningDetails":[]`, `"errorDetails":[]`} {
		if !strings.Contains(string(empty), key) {
			t.Errorf("no %s in %s", key, empty)
		}
	}
}

// Every kind a detail can carry is in docs/schema.md: the change and
// warning kinds purge declares, the API error kinds and causes apierror
// declares, read from their sources.
func TestDetailKindsAreDocumented(t *testing.T) {
	schema, err := os.ReadFile(filepath.Join("..", "..", "docs", "schema.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []struct{ file, typ string }{
		{"../purge/report.go", "ChangeKind"}, {"../purge/report.go", "WarningKind"},
		{"../apierror/apierror.go", "Kind"}, {"../apierror/apierror.go", "Cause"},
	} {
		values := constants(t, src.file, src.typ)
		if len(values) < 5 {
			t.Fatalf("%s: only %d %s constants found", src.file, len(values), src.typ)
		}
		for _, v := range values {
			if !strings.Contains(string(schema), "`"+v+"`") {
				t.Errorf("docs/schema.md does not name %s %q", src.typ, v)
			}
		}
	}
}

// constants are the string values of a file's constants of type typ.
func constants(t *testing.T, file, typ string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok || spec.Type == nil || len(spec.Values) != 1 {
			return true
		}
		if id, ok := spec.Type.(*ast.Ident); ok && id.Name == typ {
			if lit, ok := spec.Values[0].(*ast.BasicLit); ok {
				v, _ := strconv.Unquote(lit.Value)
				out = append(out, v)
			}
		}
		return true
	})
	return out
}
