package diagnose_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// Every blocker kind is listed by BlockerKinds and has its page under
// docs/blockers, which the README there links; no page is left for a kind
// that is gone.
func TestEveryBlockerKindHasItsPage(t *testing.T) {
	declared := declaredKinds(t)
	listed := diagnose.BlockerKinds()
	for _, k := range declared {
		if !slices.Contains(listed, k) {
			t.Errorf("%s is declared but not in BlockerKinds()", k)
		}
	}
	if len(listed) != len(declared) {
		t.Errorf("BlockerKinds() lists %d kinds, blocker.go declares %d", len(listed), len(declared))
	}
	dir := filepath.Join("..", "..", "docs", "blockers")
	index, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range listed {
		if _, err := os.Stat(filepath.Join(dir, string(k)+".md")); err != nil {
			t.Errorf("no page for %s: %v", k, err)
		}
		if !strings.Contains(string(index), "("+string(k)+".md)") {
			t.Errorf("docs/blockers/README.md does not link %s.md", k)
		}
	}
	pages, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	for _, p := range pages {
		kind := diagnose.BlockerKind(strings.TrimSuffix(filepath.Base(p), ".md"))
		if kind != "README" && !slices.Contains(listed, kind) {
			t.Errorf("%s documents no blocker kind", p)
		}
	}
}

// declaredKinds reads the BlockerKind constants from the source itself.
func declaredKinds(t *testing.T) []diagnose.BlockerKind {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "blocker.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []diagnose.BlockerKind
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok || spec.Type == nil || len(spec.Values) != 1 {
			return true
		}
		if id, ok := spec.Type.(*ast.Ident); ok && id.Name == "BlockerKind" {
			if lit, ok := spec.Values[0].(*ast.BasicLit); ok {
				v, _ := strconv.Unquote(lit.Value)
				out = append(out, diagnose.BlockerKind(v))
			}
		}
		return true
	})
	if len(out) == 0 {
		t.Fatal("no BlockerKind constant found in blocker.go")
	}
	return out
}
