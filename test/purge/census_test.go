package purge_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// requestLine is one request in client-go's -v=6 log.
var requestLine = regexp.MustCompile(`verb="(\w+)" url="https://[^/]+([^"?]*)`)

// TestPurgeManyAsksOnlyTheTypesEachHolds: ten terminating namespaces with
// content in some types only (ConfigMaps held by a finalizer in some,
// Secrets in others, a custom resource held by its operator's finalizer in
// a few), beside a terminating namespace the selector does not choose and
// an Active one. One purge -l run empties the ten: every object is in its
// namespace's backup before it is gone, the namespaces not chosen are
// untouched, and no namespace is asked about a type it did not hold (one
// census across the cluster said which) while each is asked about the
// types it held.
func TestPurgeManyAsksOnlyTheTypesEachHolds(t *testing.T) {
	ctx := context.Background()
	batch := plugintest.UniqueName(t)
	gvr, err := cluster.EnsureCRD(ctx, "sparse.example.com", "Gizmo", "gizmos")
	plugintest.Must(t, err)
	type content struct{ resource, name string }
	held := map[string][]content{}
	var chosen []string
	for i := range 10 {
		ns := fmt.Sprintf("%s-%02d", batch, i)
		chosen = append(chosen, ns)
		plugintest.Must(t, cluster.CreateNamespaceWithLabels(ctx, ns, map[string]string{"batch": batch}))
		switch i % 3 {
		case 0:
			plugintest.Must(t, cluster.CreateConfigMap(ctx, ns, "held", nil, "example.com/sparse"))
			plugintest.Must(t, cluster.CreateConfigMap(ctx, ns, "plain", nil))
			held[ns] = []content{{"configmaps", "held"}, {"configmaps", "plain"}}
		case 1:
			createSecret(t, ns, "token")
			held[ns] = []content{{"secrets", "token"}}
		case 2:
			plugintest.Must(t, cluster.CreateCustomResource(ctx, gvr, "Gizmo", ns, "gizmo", "sparse.example.com/cleanup"))
			createSecret(t, ns, "creds")
			held[ns] = []content{{"gizmos", "gizmo"}, {"secrets", "creds"}}
		}
		// What controllers make in every namespace the bed settled.
		held[ns] = append(held[ns], content{"configmaps", "kube-root-ca.crt"}, content{"serviceaccounts", "default"})
		plugintest.Must(t, cluster.DeleteNamespace(ctx, ns))
	}
	// Not chosen: terminating without the label, and Active with it.
	other, active := batch+"-other", batch+"-active"
	plugintest.Must(t, cluster.CreateNamespace(ctx, other))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, other, "held", nil, "example.com/sparse"))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, other))
	t.Cleanup(func() { _ = cluster.ReleaseConfigMap(context.Background(), other, "held") })
	plugintest.Must(t, cluster.CreateNamespaceWithLabels(ctx, active, map[string]string{"batch": batch}))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, active, "kept", nil))

	dir := t.TempDir()
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", "-l", "batch="+batch, "--force", "--yes",
		"--remove-finalizers=example.com/sparse,sparse.example.com/cleanup", "--backup-dir", dir, "--timeout=2m", "-v=6")
	if r.Code != 0 || !strings.Contains(r.Stdout, "10 gone") {
		t.Fatalf("purge: exit %d\n%s\n%s", r.Code, r.Stdout, tailLines(r.Stderr, 30))
	}

	for _, ns := range chosen {
		if _, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil {
			t.Errorf("namespace %s still there", ns)
		}
		for _, c := range held[ns] {
			// objects/ holds what a restore re-applies, record/ what it
			// leaves to its controllers (kube-root-ca.crt, default):
			// both are saved (docs/restore.md).
			files, _ := filepath.Glob(filepath.Join(dir, ns, "*", c.resource+".*.json"))
			found := false
			for _, f := range files {
				data, _ := os.ReadFile(f)
				found = found || strings.Contains(string(data), fmt.Sprintf("%q", c.name))
			}
			if !found {
				t.Errorf("%s %s/%s was deleted without a backup (%v)", c.resource, ns, c.name, files)
			}
		}
	}
	if cm, err := cluster.Kube.CoreV1().ConfigMaps(other).Get(ctx, "held", metav1.GetOptions{}); err != nil || len(cm.Finalizers) != 1 {
		t.Errorf("the unchosen terminating namespace's configmap: %v, %v", cm, err)
	}
	if _, err := cluster.Kube.CoreV1().ConfigMaps(active).Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Errorf("the Active namespace's configmap: %v", err)
	}

	asked := askedTypes(r.Stderr)
	for _, ns := range chosen {
		holds := map[string]bool{}
		for _, c := range held[ns] {
			holds[c.resource] = true
			if !asked[ns][c.resource] {
				t.Errorf("%s held %s, but purge never asked about them", ns, c.resource)
			}
		}
		for resource := range asked[ns] {
			if !holds[resource] {
				t.Errorf("%s held no %s, yet purge asked about them", ns, resource)
			}
		}
	}
	for _, ns := range []string{other, active} {
		if len(asked[ns]) > 0 {
			t.Errorf("purge sent requests about the unchosen namespace %s: %v", ns, asked[ns])
		}
	}
}

// askedTypes are, per namespace, the resource types requests went to
// (namespaced URLs only), from a -v=6 log.
func askedTypes(log string) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, m := range requestLine.FindAllStringSubmatch(log, -1) {
		parts := strings.Split(strings.Trim(m[2], "/"), "/")
		for i := 0; i+2 < len(parts); i++ {
			if parts[i] != "namespaces" {
				continue
			}
			ns, resource := parts[i+1], parts[i+2]
			if resource == "finalize" || resource == "status" {
				break // the namespace's own subresources
			}
			if out[ns] == nil {
				out[ns] = map[string]bool{}
			}
			out[ns][resource] = true
			break
		}
	}
	return out
}

func createSecret(t *testing.T, ns, name string) {
	t.Helper()
	s := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: map[string]string{"k": "v"}}
	if _, err := cluster.Kube.CoreV1().Secrets(ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
