package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// heldByFinalizers is a namespace holding ConfigMaps with finalizers:
// example.com/a on two, example.com/b on one; deleted when deleted is set,
// and returned once the namespace controller has said so.
func heldByFinalizers(t *testing.T, deleted bool, labels map[string]string) string {
	t.Helper()
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespaceWithLabels(ctx, name, labels))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "a1", nil, "example.com/a"))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "a2", nil, "example.com/a", "example.com/b"))
	if deleted {
		plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
		// The controller's first pass done: what explain says is then
		// the finalizers, not a controller that has not looked yet.
		waitCondition(t, name, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)
	}
	return name
}

// Every -o form kubectl users reach for, through the real kubectl, prints
// from the same document as -o json; a bad template is a usage error in
// kubectl's words.
func TestOutputFormatsThroughKubectl(t *testing.T) {
	name := heldByFinalizers(t, true, nil)
	dir := t.TempDir()
	jsonpathFile := filepath.Join(dir, "verdict.jsonpath")
	templateFile := filepath.Join(dir, "verdict.tmpl")
	plugintest.Must(t, os.WriteFile(jsonpathFile, []byte(`{.verdict.state}`), 0o600))
	plugintest.Must(t, os.WriteFile(templateFile, []byte(`{{.namespace.name}} {{len .blockers}}`), 0o600))

	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"explain", name, "-o", "jsonpath={.namespace.name}"}, 3, name},
		{[]string{"explain", name, "-o", "jsonpath-file=" + jsonpathFile}, 3, "Stuck"},
		{[]string{"explain", name, "-o", "go-template={{.verdict.state}}"}, 3, "Stuck"},
		{[]string{"explain", name, "-o", "go-template-file=" + templateFile}, 3, name + " 1"},
		{[]string{"explain", name, "-o", "go-template", "--template={{.kind}}"}, 3, "NamespaceDiagnosis"},
		{[]string{"explain", name, "-o", "name"}, 3, "namespace/" + name + "\n"},
		{[]string{"purge", name, "-o", "name"}, 0, "namespace/" + name + "\n"},
		{[]string{"purge", name, "-o", "jsonpath={.outcome} {.mode}"}, 0, "Planned client"},
	}
	for _, tc := range cases {
		args := tc.args
		if args[0] == "explain" {
			args = append(args, "--grace=0s")
		}
		r := plugin.Kubectl(t, cp.Kubeconfig, append([]string{"ns-doctor"}, args...)...)
		if r.Code != tc.code || r.Stdout != tc.want {
			t.Errorf("%s: exit %d, stdout %q; want exit %d, %q\n%s", strings.Join(tc.args, " "), r.Code, r.Stdout, tc.code, tc.want, r.Stderr)
		}
	}

	// Without a name: the list of every terminating namespace, ours in it.
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", "--grace=0s", "-o", "jsonpath={.items[*].namespace.name}")
	if r.Code != 3 || !strings.Contains(" "+r.Stdout+" ", " "+name+" ") {
		t.Errorf("explain -o jsonpath over the list: exit %d, %q\n%s", r.Code, r.Stdout, r.Stderr)
	}
	// The filter docs/integrations.md gives scripts: stuck ones, a line each.
	r = plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", "--grace=0s", "-o", `jsonpath={range .items[?(@.verdict.state=="Stuck")]}{.namespace.name}{"\n"}{end}`)
	if r.Code != 3 || !strings.Contains("\n"+r.Stdout, "\n"+name+"\n") {
		t.Errorf("explain -o jsonpath with a filter: exit %d, %q\n%s", r.Code, r.Stdout, r.Stderr)
	}
	// YAML reads back as the JSON's document.
	r = plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", name, "--grace=0s", "-o", "yaml")
	var doc struct {
		Kind      string                `json:"kind"`
		Namespace struct{ Name string } `json:"namespace"`
	}
	if err := yaml.Unmarshal([]byte(r.Stdout), &doc); err != nil || doc.Kind != "NamespaceDiagnosis" || doc.Namespace.Name != name {
		t.Errorf("-o yaml: %v, %+v", err, doc)
	}

	for _, bad := range []struct{ output, want string }{
		{"jsonpath={.items[", "error parsing jsonpath"},
		{"go-template={{.verdict", "error parsing template"},
		{"jsonpath", "template format specified but no template given"},
		{"xml", `unknown output format "xml": use one of`},
	} {
		r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", name, "-o", bad.output)
		if r.Code != 2 || r.Stdout != "" || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 || !strings.Contains(r.Stderr, "error: "+bad.want) {
			t.Errorf("-o %s: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", bad.output, r.Code, r.Stdout, r.Stderr, bad.want)
		}
	}
}

// Completion offers what a stuck namespace needs, from the cluster: its
// finalizers with their counts, the webhook configurations that catch its
// content, and the former namespaces that left content.
func TestValueCompletionThroughKubectl(t *testing.T) {
	ctx := context.Background()
	label := plugintest.UniqueName(t)
	name := heldByFinalizers(t, false, map[string]string{"ns-doctor-completion": label})
	hook := label + "-guard"
	plugintest.Must(t, cluster.FailClosedWebhookSelecting(ctx, hook, "default", "no-such-service",
		&metav1.LabelSelector{MatchLabels: map[string]string{"ns-doctor-completion": label}}, configMaps))
	t.Cleanup(func() { _ = cluster.DeleteWebhook(context.Background(), hook) })

	complete := func(args ...string) string {
		t.Helper()
		r := plugin.Kubectl(t, cp.Kubeconfig, append([]string{"ns-doctor", "__complete"}, args...)...)
		if r.Code != 0 {
			t.Fatalf("__complete %v: exit %d\n%s", args, r.Code, r.Stderr)
		}
		return r.Stdout
	}
	got := complete("purge", name, "--remove-finalizers", "")
	if !strings.Contains(got, "example.com/a\ton 2 objects\n") || !strings.Contains(got, "example.com/b\ton 1 object\n") ||
		strings.Index(got, "example.com/a") > strings.Index(got, "example.com/b") {
		t.Errorf("--remove-finalizers: %q", got)
	}
	if got := complete("purge", name, "--remove-finalizers", "example.com/a,"); !strings.Contains(got, "example.com/a,example.com/b\t") || strings.Contains(got, "example.com/a,example.com/a") {
		t.Errorf("--remove-finalizers after a comma: %q", got)
	}
	if got := complete("purge", "-n", name, "--bypass-webhook", ""); !strings.Contains(got, hook+"\tvalidating: catches DELETE configmaps, UPDATE configmaps") {
		t.Errorf("--bypass-webhook: %q", got)
	}
	if got := complete("purge", "default", "--bypass-webhook", ""); strings.Contains(got, hook) {
		t.Errorf("--bypass-webhook offers %s for a namespace it does not select: %q", hook, got)
	}
	if got := complete("purge", "no-such-namespace", "--remove-finalizers", ""); got != ":4\n" && !strings.HasPrefix(got, ":4\n") {
		t.Errorf("an unknown namespace completes nothing: %q", got)
	}

	former := heldByFinalizers(t, false, nil)
	plugintest.Must(t, cluster.ForceFinalize(ctx, former))
	for _, cmd := range []string{"explain", "purge"} {
		if got := complete(cmd, "--orphans", ""); !strings.Contains(got, former+"\n") || strings.Contains(got, name+"\n") {
			t.Errorf("%s --orphans NAME: %q; want %s and no live namespace", cmd, got, former)
		}
	}
	if got := complete("purge", name, "--ordered-deletion", ""); !strings.Contains(got, "auto\non\noff\n") {
		t.Errorf("--ordered-deletion: %q", got)
	}
	if got := complete("explain", "-o", ""); !strings.Contains(got, "jsonpath\n") || !strings.Contains(got, "go-template-file\n") || !strings.Contains(got, "name\n") {
		t.Errorf("-o: %q", got)
	}
}
