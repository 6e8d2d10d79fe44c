package guard

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// docs/guard.md's table says, for every blocker kind, when deny refuses:
// the same as DenyPolicy, kind by kind.
func TestDenyPolicyIsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "guard.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^\| \[(\w+)\]\(blockers/(\w+)\.md\) \| ([a-z ]+) \|`)
	documented := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		if m[1] != m[2] {
			t.Errorf("row %s links to %s.md", m[1], m[2])
		}
		documented[m[1]] = m[3]
	}
	for _, kind := range diagnose.BlockerKinds() {
		got, ok := documented[string(kind)]
		if !ok {
			t.Errorf("docs/guard.md has no row for %s in its table of what deny refuses", kind)
			continue
		}
		if want := string(DenyPolicy(kind)); got != want {
			t.Errorf("docs/guard.md says deny refuses %s %q; DenyPolicy says %q", kind, got, want)
		}
	}
	if len(documented) != len(diagnose.BlockerKinds()) {
		t.Errorf("docs/guard.md's table has %d rows for %d kinds", len(documented), len(diagnose.BlockerKinds()))
	}
}
