package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
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
	if modes := completion(t, "watch", "--guard", ""); !strings.Contains(modes, "warn\n") || !strings.Contains(modes, "deny\n") {
		t.Errorf("completion of --guard: %q", modes)
	}
}
