package purge_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// On a terminal, purge --force shows its progress in place (pass, types
// done, objects deleted, what it waits for); with -o json it adds nothing
// but the JSON. Without a terminal it prints a line per pass (the other
// tests read those).
func TestProgressOnATerminal(t *testing.T) {
	ctx := context.Background()
	for _, output := range []string{"", "json"} {
		t.Run("output="+output, func(t *testing.T) {
			name := plugintest.UniqueName(t)
			plugintest.Must(t, cluster.CreateNamespace(ctx, name))
			plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "plain", nil))
			plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "held", nil, "example.com/hold"))
			plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
			args := []string{"ns-doctor", "purge", name, "--force", "--yes", "--remove-finalizers=example.com/*", "--backup-dir", t.TempDir()}
			if output != "" {
				args = append(args, "-o", output)
			}
			term := plugin.RunOnTerminal(t, cp.Kubeconfig, args...)
			if code := term.ExitCode(t); code != 0 {
				t.Fatalf("exit %d:\n%s", code, term.Output())
			}
			out := term.Output()
			live := strings.Contains(out, name+": pass 1, ") && strings.Contains(out, "objects deleted")
			switch {
			case output == "" && !live:
				t.Errorf("no live progress on the terminal:\n%q", out)
			case output == "" && !strings.Contains(out, "waiting for ") && !strings.Contains(out, "passes, "):
				t.Errorf("the progress never said what it waited for nor how it ended:\n%q", out)
			case output == "" && strings.Contains(out, "\npass 1: "):
				t.Errorf("plain pass lines on a terminal:\n%q", out)
			case output == "json" && (live || strings.Contains(out, "pass 1: remaining")):
				t.Errorf("-o json on a terminal shows progress:\n%q", out)
			case output == "json" && !strings.Contains(out, `"outcome": "Gone"`):
				t.Errorf("no JSON report:\n%q", out)
			}
		})
	}
}
