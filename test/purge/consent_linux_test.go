package purge_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// runOnTerminal runs purge on a terminal.
func runOnTerminal(t *testing.T, args ...string) *plugintest.Terminal {
	t.Helper()
	return plugin.RunOnTerminal(t, cp.Kubeconfig, append([]string{"ns-doctor", "purge"}, args...)...)
}

// The confirmation prompt on a terminal: typing the namespace's name is
// consent, anything else and Ctrl-C are not, and Ctrl-C ends the command at
// once, without waiting for Enter.
func TestConfirmationOnATerminal(t *testing.T) {
	ctx := context.Background()
	const prompt = "Type the namespace name to go on: "
	cases := []struct {
		name, typed, want string
		code              int
	}{
		{"Ctrl-C at the prompt", "\x03", "interrupted: nothing was changed", 1},
		{"another name", "default\n", "not confirmed: nothing was changed", 1},
		{"the namespace's name", "", "is gone", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ns := plugintest.UniqueName(t)
			plugintest.Must(t, cluster.CreateNamespace(ctx, ns))
			plugintest.Must(t, cluster.CreateConfigMap(ctx, ns, "plain", nil))
			plugintest.Must(t, cluster.DeleteNamespace(ctx, ns))
			term := runOnTerminal(t, ns, "--force", "--backup-dir", t.TempDir(), "--timeout=1m")
			term.WaitFor(t, prompt)
			if !strings.Contains(term.Output(), fmt.Sprintf("namespace %q", ns)) {
				t.Errorf("the prompt does not name the namespace:\n%s", term.Output())
			}
			typed := c.typed
			if typed == "" {
				typed = ns + "\n"
			}
			term.Type(t, typed)
			if code := term.ExitCode(t); code != c.code {
				t.Fatalf("exit %d, want %d:\n%s", code, c.code, term.Output())
			}
			// What it printed last may still be on its way through the terminal.
			term.WaitFor(t, c.want)
			_, err := cluster.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "plain", metav1.GetOptions{})
			if gone := apierrors.IsNotFound(err); gone != (c.code == 0) {
				t.Errorf("configmap gone: %v (err %v), want gone only with consent", gone, err)
			}
		})
	}
}
