package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// runCLI runs ns-doctor in-process and returns its exit code, stdout, stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), args, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	return code, out.String(), errOut.String()
}

// Each script registers completion for the binary the shell runs, and
// asks it for choices through cobra's __complete.
func TestCompletionScripts(t *testing.T) {
	for shell, registers := range map[string]string{
		"bash":       "-F __start_kubectl-ns_doctor kubectl-ns_doctor",
		"zsh":        "compdef _kubectl-ns_doctor kubectl-ns_doctor",
		"fish":       "complete -c kubectl-ns_doctor",
		"powershell": "Register-ArgumentCompleter -CommandName 'kubectl-ns_doctor'",
	} {
		t.Run(shell, func(t *testing.T) {
			code, out, errOut := runCLI(t, "completion", shell)
			if code != ExitOK || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			if !strings.Contains(out, registers) || !strings.Contains(out, "__complete") {
				t.Errorf("the %s script does not register %q or call __complete:\n%.400s", shell, registers, out)
			}
			if strings.Contains(out, "_ns-doctor") {
				t.Errorf("the %s script names ns-doctor, which no shell can run", shell)
			}
		})
	}
}

// The shim printed, the one at the repository root and the one the
// archives ship (.goreleaser.yaml takes the root one) are the same file.
func TestKubectlPluginShimMatchesRepository(t *testing.T) {
	code, out, errOut := runCLI(t, "completion", "kubectl-plugin")
	if code != ExitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	path := filepath.Join("..", "..", "kubectl_complete-ns_doctor")
	repo, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(repo) != out {
		t.Errorf("%s differs from `completion kubectl-plugin`: regenerate it with\n  go run ./cmd/kubectl-ns_doctor completion kubectl-plugin > kubectl_complete-ns_doctor\ngot:\n%s\nwant:\n%s", path, repo, out)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm()&0o111 == 0 {
		t.Errorf("%s is not executable (%v): kubectl runs it only if it is", path, info.Mode())
	}
	if !strings.HasPrefix(out, "#!/bin/sh\n") || !strings.Contains(out, `exec kubectl-ns_doctor __complete "$@"`) {
		t.Errorf("the shim does not hand kubectl's words to __complete:\n%s", out)
	}
}

func TestCompletionBadTarget(t *testing.T) {
	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}, {"completion", "bash", "zsh"}} {
		code, out, errOut := runCLI(t, args...)
		if code != ExitUsage || out != "" || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and one error line", args, code, out, errOut, ExitUsage)
		}
	}
}

// --context, --cluster and --user complete from the kubeconfig, with no
// cluster to ask; `completion` completes its targets.
func TestFlagAndTargetCompletion(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	data := `apiVersion: v1
kind: Config
clusters:
- {name: prod-eu, cluster: {server: "https://127.0.0.1:1"}}
- {name: staging, cluster: {server: "https://127.0.0.1:1"}}
users:
- {name: alice, user: {token: t}}
contexts:
- {name: prod-admin, context: {cluster: prod-eu, user: alice}}
- {name: prod-reader, context: {cluster: prod-eu, user: alice}}
- {name: staging, context: {cluster: staging, user: alice}}
current-context: staging
`
	if err := os.WriteFile(kubeconfig, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"__complete", "--kubeconfig", kubeconfig, "explain", "--context", "prod"}, "prod-admin\nprod-reader\n:4\n"},
		{[]string{"__complete", "--kubeconfig", kubeconfig, "--cluster", ""}, "prod-eu\nstaging\n:4\n"},
		{[]string{"__complete", "--kubeconfig", kubeconfig, "purge", "--user", "a"}, "alice\n:4\n"},
		{[]string{"__complete", "completion", "kubectl"}, "kubectl-plugin\tthe kubectl_complete-ns_doctor shim for `kubectl ns-doctor <TAB>`\n:4\n"},
	} {
		code, out, _ := runCLI(t, tc.args...)
		if code != ExitOK || out != tc.want {
			t.Errorf("%v: exit %d, got\n%q\nwant\n%q", tc.args, code, out, tc.want)
		}
	}
}
