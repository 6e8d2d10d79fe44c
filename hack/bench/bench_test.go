package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden file and docs/benchmarks.md")

// The markdown of a fixed result (every phase in it) is the golden file's,
// and docs/benchmarks.md is what docs/benchmarks.json renders to, so a
// change of the template re-renders it (-update, or -render).
func TestRenderGolden(t *testing.T) {
	for json, md := range map[string]string{"testdata/result.json": "testdata/benchmarks.md", "../../docs/benchmarks.json": "../../docs/benchmarks.md"} {
		if _, err := os.Stat(json); os.IsNotExist(err) && !strings.HasPrefix(json, "testdata") {
			t.Logf("no %s yet: make bench writes it", json)
			continue
		}
		out := filepath.Join(t.TempDir(), "benchmarks.md")
		err := renderFile(json, out)
		got, _ := os.ReadFile(out)
		if err == nil && *update {
			err = os.WriteFile(md, got, 0o644)
		}
		if want, _ := os.ReadFile(md); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not what %s renders to (%v); go test ./hack/bench -update rewrites it, then read the diff", md, json, err)
		}
	}
	// Every phase has its block in the template and a section in the golden result.
	data, _ := os.ReadFile("testdata/result.json")
	for _, p := range phases {
		if tmpl.Lookup(p.name) == nil || !bytes.Contains(data, []byte(`"Phase": "`+p.name+`"`)) {
			t.Errorf("phase %s: no block in benchmarks.md.tmpl or no section in testdata/result.json", p.name)
		}
	}
	got, _ := os.ReadFile("testdata/benchmarks.md")
	for _, want := range []string{"**met**", "**MISSED**", "**info**", "### link (50ms RTT)", "| verb resource | API server alone |"} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("no %q in testdata/benchmarks.md", want)
		}
	}
}

func TestTargets(t *testing.T) {
	s := &Section{Phase: "explain", Scope: "medium"}
	for key, secs := range map[string][]float64{"explain": {0.5, 0.4, 0.6}, "plugin": {0.3}, "floor": {0.2}, "recipe": {12}} {
		for _, x := range secs {
			s.series(key, key).add(Sample{Seconds: x})
		}
	}
	got := map[string]string{}
	for _, v := range verdicts(&Result{Sections: []*Section{s}}) {
		got[v.Text[:strings.Index(v.Text, " (")]] = v.Mark
	}
	for what, mark := range map[string]string{
		"explain at least 20x faster than the shell recipe":                               "**met**",    // 12 / 0.5 = 24
		"explain within 1.5x of the floor, the plugin binary run directly like the floor": "**met**",    // 1.5: the threshold is met
		"explain within 1.5x of the floor, through kubectl":                               "**MISSED**", // 2.5
	} {
		if got[what] != mark {
			t.Errorf("%s: %s, want %s (%v)", what, got[what], mark, got)
		}
	}
	for _, c := range []struct {
		op       string
		v, limit float64
		met      bool
	}{{"<=", 1.5, 1.5, true}, {"<", 60, 60, false}, {">=", 20, 20, true}, {">", 0, 0, false}, {">", 0.1, 0, true}} {
		if got := (target{op: c.op, limit: c.limit}).met(c.v); got != c.met {
			t.Errorf("%v %s %v: %v", c.v, c.op, c.limit, got)
		}
	}
	// A run that measured nothing yet renders, and says it is incomplete.
	var b strings.Builder
	if err := render(&b, &Result{}); err != nil || !strings.Contains(b.String(), "**Incomplete run**") || !strings.Contains(b.String(), "Targets met: 0; MISSED: 0;") {
		t.Errorf("%v:\n%s", err, b.String())
	}
}

// Over 2n runs every contender takes every place; for 3, every order runs once.
func TestOrder(t *testing.T) {
	seen := map[string]bool{}
	for r := range 6 {
		seen[fmt.Sprint(order(r, 3))] = true
	}
	if len(seen) != 6 || !slices.Equal(order(0, 3), []int{0, 1, 2}) || !slices.Equal(order(1, 2), []int{1, 0}) {
		t.Errorf("orders %v", seen)
	}
}
