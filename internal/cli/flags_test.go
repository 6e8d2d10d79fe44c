package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/ns-doctor/ns-doctor/internal/fleet"
	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// Every flag of purge is documented in docs/purge.md and offered by the
// shell completion, so a new escalation cannot ship undocumented or
// unreachable by <TAB>.
func TestEveryPurgeFlagIsDocumentedAndCompleted(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "purge.md"))
	if err != nil {
		t.Fatal(err)
	}
	flags := genericclioptions.NewConfigFlags(true)
	root := newRootCommand(flags, flagsFactory{flags}, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	purgeCmd, _, err := root.Find([]string{"purge"})
	if err != nil {
		t.Fatal(err)
	}
	completed := completion(t, "purge", "--")
	n := 0
	purgeCmd.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
		n++
		if !strings.Contains(string(doc), "`--"+f.Name) {
			t.Errorf("--%s is not documented in docs/purge.md", f.Name)
		}
		if !strings.Contains(completed, "--"+f.Name+"\t") && !strings.Contains(completed, "--"+f.Name+"\n") {
			t.Errorf("completion of 'purge --' does not offer --%s", f.Name)
		}
	})
	if n < 15 {
		t.Fatalf("only %d purge flags seen", n)
	}
}

// completion is what `kubectl-ns_doctor __complete ARGS...` prints.
func completion(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	flags := genericclioptions.NewConfigFlags(true)
	code := run(context.Background(), append([]string{"__complete"}, args...), genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, flags, flagsFactory{flags})
	if code != 0 {
		t.Fatalf("__complete %v: exit %d: %s", args, code, errOut.String())
	}
	return out.String()
}

var updateDocs = flag.Bool("update", false, "rewrite the generated parts of docs/purge.md")

// Every escalation of purge's one list (purge.Escalations) reaches every
// place that names escalations: purge's flags with its help, the janitor's
// when it may use it, the completion of its values, the confirmation, and
// docs/purge.md (the generated rows of "Flags at a glance", and a row of
// the Escalations table). The engine's side (permissions, plan, report,
// next steps) is TestEveryEscalationDeclaresItself in internal/purge.
func TestEveryEscalationEverywhere(t *testing.T) {
	flags := genericclioptions.NewConfigFlags(true)
	root := newRootCommand(flags, flagsFactory{flags}, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	purgeCmd, _, err := root.Find([]string{"purge"})
	if err != nil {
		t.Fatal(err)
	}
	watchCmd, _, err := root.Find([]string{"watch"})
	if err != nil {
		t.Fatal(err)
	}
	doc := generatedDocs(t)
	security, err := os.ReadFile(filepath.Join("..", "..", "SECURITY.md"))
	if err != nil {
		t.Fatal(err)
	}
	rbac, err := os.ReadFile(filepath.Join("..", "..", "docs", "rbac.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range purge.Escalations() {
		t.Run(e.Name(), func(t *testing.T) {
			f := purgeCmd.Flags().Lookup(e.Name())
			wantType := map[bool]string{true: "bool", false: "stringSlice"}[e.Switch()]
			if f == nil || f.Usage != e.Help || f.Value.Type() != wantType {
				t.Fatalf("purge's flag: %+v, want a %s with the entry's help", f, wantType)
			}
			if _, ok := purgeCmd.GetFlagCompletionFunc(e.Name()); ok != e.Completes() {
				t.Errorf("completion of its values registered: %v, the entry completes: %v", ok, e.Completes())
			}
			w := watchCmd.Flags().Lookup(e.Name())
			if (w != nil) != e.Janitor || w != nil && !strings.Contains(w.Usage, "Janitor escalation") && !strings.Contains(w.Usage, "janitor") {
				t.Errorf("watch's flag %+v; the janitor may use it: %v", w, e.Janitor)
			}
			values := []string{e.Example}
			if e.Switch() {
				values = nil
			}
			o := &PurgeOptions{Purge: purge.Options{Escalations: purge.Asked{e.Flag: values}}}
			fleetText := o.fleetConfirmation([]*clusterPurge{{Context: fleet.Context{Name: "ci-1", Cluster: "c1"}, names: []string{"a", "b"}}}).Prompt()
			texts := map[string]string{"fleet": fleetText}
			for _, names := range [][]string{{"demo"}, {"a", "b"}} {
				texts[strings.Join(names, ",")] = o.confirmation(names).Prompt()
			}
			for which, text := range texts {
				if e.Leak == "" || !strings.Contains(text, "leaks: "+e.Leak+"\n") {
					t.Errorf("the confirmation (%s) does not say what %s leaks (%q):\n%s", which, e.Flag, e.Leak, text)
				}
				for _, line := range e.Consent(values) {
					if !strings.Contains(text, "  "+line+"\n") {
						t.Errorf("the confirmation (%s) does not say %q:\n%s", which, line, text)
					}
				}
			}
			if !strings.Contains(section(string(security), "## What ns-doctor writes\n"), "`"+e.Flag+"`") {
				t.Errorf("SECURITY.md's \"What ns-doctor writes\" does not name %s", e.Flag)
			}
			if !strings.Contains(section(string(rbac), "## purge\n"), "`"+e.Flag) {
				t.Errorf("docs/rbac.md's purge section does not name %s", e.Flag)
			}
			if !strings.Contains(purgeCmd.Long, e.Usage()) {
				t.Errorf("purge --help does not name %s", e.Usage())
			}
			if e.Janitor && !strings.Contains(watchCmd.Long, e.Usage()) {
				t.Errorf("watch --help does not name the janitor's %s", e.Usage())
			}
			if !strings.Contains(section(doc, "## Escalations\n"), "| `"+e.Usage()+"` |") {
				t.Errorf("docs/purge.md's Escalations table has no row for %s", e.Usage())
			}
		})
	}
}

// generatedDocs checks (or, with -update, rewrites) the rows of
// docs/purge.md that come from purge.Escalations(), and returns the file.
func generatedDocs(t *testing.T) string {
	t.Helper()
	path := filepath.Join("..", "..", "docs", "purge.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	const begin, end = "<!-- escalations: generated from purge.Escalations() (go test ./internal/cli -run TestEveryEscalationEverywhere -update) -->\n", "<!-- end of escalations -->\n"
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("docs/purge.md lacks the generated rows' markers %q ... %q", begin, end)
	}
	var rows strings.Builder
	rows.WriteString("| flag | what it does |\n|---|---|\n")
	for _, e := range purge.Escalations() {
		janitor := ""
		if e.Janitor {
			janitor = " (watch's janitor too)"
		}
		fmt.Fprintf(&rows, "| `%s` | %s%s |\n", e.Usage(), strings.ReplaceAll(e.Help, "|", "\\|"), janitor)
	}
	want := doc[:i+len(begin)] + rows.String() + doc[j:]
	if want != doc {
		if !*updateDocs {
			t.Errorf("docs/purge.md's generated escalation rows differ from purge.Escalations(): go test ./internal/cli -run TestEveryEscalationEverywhere -update")
		} else if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return want
}

// section is a markdown section of doc, from its heading to the next one
// of the same level.
func section(doc, heading string) string {
	i := strings.Index(doc, heading)
	if i < 0 {
		return ""
	}
	rest := doc[i+len(heading):]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		return rest[:j]
	}
	return rest
}

// Every flag of the deletion guard is documented in docs/guard.md's table
// and offered by the shell completion, and --guard completes its modes.
func TestEveryGuardFlagIsDocumentedAndCompleted(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "guard.md"))
	if err != nil {
		t.Fatal(err)
	}
	usage, err := os.ReadFile(filepath.Join("..", "..", "docs", "usage.md"))
	if err != nil {
		t.Fatal(err)
	}
	completed := completion(t, "watch", "--")
	fs := pflag.NewFlagSet("guard", pflag.ContinueOnError)
	(&guardFlags{}).addFlags(fs)
	n := 0
	fs.VisitAll(func(f *pflag.Flag) {
		n++
		if !strings.Contains(string(doc), "| `--"+f.Name+"` |") {
			t.Errorf("--%s is not in docs/guard.md's table of flags", f.Name)
		}
		if !strings.Contains(string(usage), "`--"+f.Name+"`") {
			t.Errorf("--%s is not named in docs/usage.md's watch section", f.Name)
		}
		if !strings.Contains(completed, "--"+f.Name+"\t") && !strings.Contains(completed, "--"+f.Name+"\n") {
			t.Errorf("completion of 'watch --' does not offer --%s", f.Name)
		}
		if f.Name != "guard" && !slices.Contains(guardOnlyFlags, f.Name) {
			t.Errorf("--%s is not in guardOnlyFlags: without --guard it would be accepted and ignored", f.Name)
		}
	})
	if n != len(guardOnlyFlags)+1 {
		t.Errorf("%d guard flags, %d in guardOnlyFlags", n, len(guardOnlyFlags))
	}
	if modes := completion(t, "watch", "--guard="); !strings.Contains(modes, "warn\n") || !strings.Contains(modes, "deny\n") {
		t.Errorf("completion of --guard: %q", modes)
	}
}
