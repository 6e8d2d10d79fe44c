package distribution

import (
	"context"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// completions splits cobra's __complete output into the choices and the
// directive line (":36" is NoFileComp|KeepOrder).
func completions(t *testing.T, r plugintest.Result) ([]string, string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(r.Stdout, "\n"), "\n")
	if r.Code != 0 || len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], ":") {
		t.Fatalf("not a completion answer: exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	return lines[:len(lines)-1], lines[len(lines)-1]
}

// stuckAndActive makes two namespaces sharing a prefix: one Active and one
// Terminating (held by a ConfigMap's finalizer), named so that alphabetical
// order would put the Active one first.
func stuckAndActive(t *testing.T) (prefix, stuck, active string) {
	t.Helper()
	ctx := context.Background()
	prefix = plugintest.UniqueName(t) + "-"
	active, stuck = prefix+"a-active", prefix+"z-stuck"
	plugintest.Must(t, cluster.CreateNamespace(ctx, active))
	plugintest.Must(t, cluster.CreateNamespace(ctx, stuck))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, stuck, "held", nil, "example.com/hold"))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, stuck))
	ns, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, stuck, metav1.GetOptions{})
	plugintest.Must(t, err)
	if ns.DeletionTimestamp == nil {
		t.Fatalf("namespace %s is not terminating", stuck)
	}
	return prefix, stuck, active
}

// NAME completes to namespace names, terminating ones first, with the
// order kept; the prefix typed filters them.
func TestNamespaceCompletion(t *testing.T) {
	prefix, stuck, active := stuckAndActive(t)
	for _, sub := range []string{"explain", "purge"} {
		names, directive := completions(t, pluginRun(t, cp.Kubeconfig, "__complete", sub, prefix))
		if want := []string{stuck, active}; !slices.Equal(names, want) || directive != ":36" {
			t.Errorf("__complete %s %s: %v %s, want %v :36", sub, prefix, names, directive, want)
		}
	}

	names, _ := completions(t, pluginRun(t, cp.Kubeconfig, "__complete", "explain", ""))
	terminating := map[string]bool{}
	list, err := cluster.Kube.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	plugintest.Must(t, err)
	for _, ns := range list.Items {
		terminating[ns.Name] = ns.DeletionTimestamp != nil
	}
	if !slices.Contains(names, "default") || !slices.Contains(names, stuck) {
		t.Fatalf("completion misses namespaces: %v", names)
	}
	// Terminating namespaces form a sorted block at the start.
	split := 0
	for split < len(names) && terminating[names[split]] {
		split++
	}
	for _, n := range names[split:] {
		if terminating[n] {
			t.Errorf("terminating namespace %s listed after an Active one: %v", n, names)
		}
	}
	if !slices.IsSorted(names[:split]) || !slices.IsSorted(names[split:]) {
		t.Errorf("namespaces not sorted within their group: %v", names)
	}

	// -n completes namespaces as well; a second NAME completes the
	// namespaces not named yet.
	names, _ = completions(t, pluginRun(t, cp.Kubeconfig, "__complete", "explain", "-n", prefix))
	if !slices.Equal(names, []string{stuck, active}) {
		t.Errorf("-n %s: %v", prefix, names)
	}
	if names, _ = completions(t, pluginRun(t, cp.Kubeconfig, "__complete", "purge", stuck, prefix)); !slices.Equal(names, []string{active}) {
		t.Errorf("a second NAME completes %v, want only %s", names, active)
	}
}

// kubectl (1.26+) completes `kubectl ns-doctor ...` by running the shipped
// kubectl_complete-ns_doctor from PATH: it must answer as the plugin does.
func TestKubectlPluginCompletion(t *testing.T) {
	prefix, stuck, active := stuckAndActive(t)
	direct := pluginRun(t, cp.Kubeconfig, "__complete", "explain", "")
	viaKubectl := plugin.Kubectl(t, cp.Kubeconfig, "__complete", "ns-doctor", "explain", "")
	want, wantDirective := completions(t, direct)
	got, directive := completions(t, viaKubectl)
	if !slices.Equal(got, want) || directive != wantDirective {
		t.Errorf("kubectl __complete ns-doctor explain \"\":\n%v %s\nthe plugin itself:\n%v %s\nkubectl's stderr:\n%s", got, directive, want, wantDirective, viaKubectl.Stderr)
	}
	got, _ = completions(t, plugin.Kubectl(t, cp.Kubeconfig, "__complete", "ns-doctor", "purge", prefix))
	if !slices.Equal(got, []string{stuck, active}) {
		t.Errorf("kubectl __complete ns-doctor purge %s: %v", prefix, got)
	}
	// Subcommands too, and kubectl itself lists the plugin.
	got, _ = completions(t, plugin.Kubectl(t, cp.Kubeconfig, "__complete", "ns-doctor", ""))
	for _, sub := range []string{"completion", "explain", "purge", "version"} {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, sub+"\t") || s == sub }) {
			t.Errorf("kubectl __complete ns-doctor \"\" lacks %s: %v", sub, got)
		}
	}
	got, _ = completions(t, plugin.Kubectl(t, cp.Kubeconfig, "__complete", "ns-"))
	if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "ns-doctor") }) {
		t.Errorf("kubectl does not offer the plugin: %v", got)
	}
}

// Through kubectl, each shell's script comes out whole and names the binary.
func TestCompletionScriptsThroughKubectl(t *testing.T) {
	for shell, want := range map[string]string{
		"bash":       "complete -o default -F __start_kubectl-ns_doctor kubectl-ns_doctor",
		"zsh":        "#compdef kubectl-ns_doctor",
		"fish":       "complete -c kubectl-ns_doctor",
		"powershell": "Register-ArgumentCompleter -CommandName 'kubectl-ns_doctor'",
	} {
		r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "completion", shell)
		if r.Code != 0 || r.Stderr != "" || len(r.Stdout) < 1000 || !strings.Contains(r.Stdout, want) {
			t.Errorf("kubectl ns-doctor completion %s: exit %d, %d bytes, stderr %q; want %q in it", shell, r.Code, len(r.Stdout), r.Stderr, want)
		}
	}
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "completion", "kubectl-plugin")
	if r.Code != 0 || !strings.Contains(r.Stdout, `exec kubectl-ns_doctor __complete "$@"`) {
		t.Errorf("kubectl ns-doctor completion kubectl-plugin: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}
