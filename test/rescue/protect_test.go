package rescue

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// TestProtectRefusesDeletionUntilAnnotated: kubectl delete namespace is
// refused by kube-apiserver with the policy's message, and goes through
// once the namespace carries the confirmation naming it.
func TestProtectRefusesDeletionUntilAnnotated(t *testing.T) {
	ctx := context.Background()
	ns := plugintest.UniqueName(t)
	_, err := cluster.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	ifDeleted(t, ns, nil, "not protected against a mistaken deletion: 'kubectl ns-doctor protect "+ns+"'")

	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "protect", ns, "--yes")
	if r.Code != 0 || !strings.Contains(r.Stdout, "PROTECTED namespace "+ns) {
		t.Fatalf("protect: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	t.Cleanup(func() { plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "protect", ns, "--remove", "--yes") })
	ifDeleted(t, ns, &diagnose.Protection{Policy: "ns-doctor-protect-" + ns}, "but protected: a deletion is refused until it is annotated ns-doctor.io/confirm-delete="+ns)

	del := plugin.Kubectl(t, cp.Kubeconfig, "delete", "namespace", ns, "--wait=false")
	if del.Code == 0 || !strings.Contains(del.Stderr, "ns-doctor protects namespace "+ns) {
		t.Fatalf("kubectl delete namespace of a protected one: exit %d\n%s", del.Code, del.Stderr)
	}
	// An annotation naming another namespace confirms nothing.
	if r := plugin.Kubectl(t, cp.Kubeconfig, "annotate", "namespace", ns, "ns-doctor.io/confirm-delete=other"); r.Code != 0 {
		t.Fatalf("annotate: %s", r.Stderr)
	}
	if del := plugin.Kubectl(t, cp.Kubeconfig, "delete", "namespace", ns, "--wait=false"); del.Code == 0 {
		t.Fatalf("deleted with a confirmation naming another namespace")
	}
	ifDeleted(t, ns, &diagnose.Protection{Policy: "ns-doctor-protect-" + ns}, "but protected")
	if r := plugin.Kubectl(t, cp.Kubeconfig, "annotate", "--overwrite", "namespace", ns, "ns-doctor.io/confirm-delete="+ns); r.Code != 0 {
		t.Fatalf("annotate: %s", r.Stderr)
	}
	ifDeleted(t, ns, &diagnose.Protection{Policy: "ns-doctor-protect-" + ns, Confirmed: true}, "protected, and its deletion confirmed")
	if del := plugin.Kubectl(t, cp.Kubeconfig, "delete", "namespace", ns, "--wait=false"); del.Code != 0 {
		t.Fatalf("kubectl delete namespace once confirmed: exit %d\n%s", del.Code, del.Stderr)
	}
	eventually(t, 60*time.Second, "the confirmed namespace gone", func() (bool, string) {
		_, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), "still there"
	})
	rm := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "protect", ns, "--remove", "--yes")
	if rm.Code != 0 || !strings.Contains(rm.Stdout, "UNPROTECTED namespace "+ns) {
		t.Errorf("protect --remove: exit %d\n%s\n%s", rm.Code, rm.Stdout, rm.Stderr)
	}
	if _, err := cluster.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, "ns-doctor-protect-"+ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the protect policy is still there after --remove: %v", err)
	}
}

// TestUnprotectIsInForceWhenItReturns: protect --remove returns once
// kube-apiserver no longer enforces the policy, so a deletion sent right
// after it goes through (it did not, in one of two runs, when --remove
// returned on the DELETE of the policy alone). Three rounds, each dry run
// sent the moment --remove returns.
func TestUnprotectIsInForceWhenItReturns(t *testing.T) {
	ctx := context.Background()
	ns := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, ns))
	t.Cleanup(func() { _ = cluster.DeleteNamespace(context.Background(), ns) })
	for round := range 3 {
		if r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "protect", ns, "--yes"); r.Code != 0 {
			t.Fatalf("round %d: protect: exit %d\n%s", round, r.Code, r.Stderr)
		}
		rm := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "protect", ns, "--remove", "--yes", "-o", "json")
		var doc printer.ProtectedDocument
		if err := json.Unmarshal([]byte(rm.Stdout), &doc); err != nil || rm.Code != 0 || !doc.Enforced {
			t.Fatalf("round %d: protect --remove: exit %d, %v, %+v\n%s", round, rm.Code, err, doc.Protected, rm.Stderr)
		}
		if del := plugin.Kubectl(t, cp.Kubeconfig, "delete", "namespace", ns, "--dry-run=server"); del.Code != 0 {
			t.Fatalf("round %d: a dry-run deletion right after --remove returned: exit %d\n%s", round, del.Code, del.Stderr)
		}
	}
}

// ifDeleted: explain --if-deleted says whether protect would refuse the
// deletion first, in its document and its verdict.
func ifDeleted(t *testing.T, ns string, want *diagnose.Protection, words string) {
	t.Helper()
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", ns, "--if-deleted", "-o", "json")
	var doc printer.DiagnosisDocument
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
		t.Fatalf("explain --if-deleted: exit %d %v\n%s", r.Code, err, r.Stderr)
	}
	if want == nil {
		want = &diagnose.Protection{}
	}
	if doc.Protection == nil || *doc.Protection != *want || !strings.Contains(doc.Verdict.Summary, words) {
		t.Errorf("explain --if-deleted: protection %+v, summary %q; want %+v and %q", doc.Protection, doc.Verdict.Summary, want, words)
	}
}

// TestBadInput: each refusal is one line with its documented exit code,
// and changes nothing.
func TestBadInput(t *testing.T) {
	ctx := context.Background()
	active := plugintest.UniqueName(t)
	_, err := cluster.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: active}}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	t.Cleanup(func() {
		_ = cluster.Kube.CoreV1().Namespaces().Delete(context.Background(), active, metav1.DeleteOptions{})
	})

	// A user who may read namespaces and nothing else.
	_, limited, err := cp.MintUser("rescue-limited")
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.GrantClusterRole(ctx, "rescue-limited", []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"namespaces"}}}))
	terminating := plugintest.UniqueName(t) + "-t"
	_, err = cluster.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: terminating}}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.CreateBoundPod(ctx, terminating, "stuck", 3600))
	plugintest.Must(t, cluster.Kube.CoreV1().Namespaces().Delete(ctx, terminating, metav1.DeleteOptions{}))

	// A backup as rescue wrote it before the one layout (its namespace in
	// cluster/, no manifest, no index: restore reads it still), for the
	// restore cases: restore's checks read the namespace's copy and the
	// types it holds.
	saved := t.TempDir()
	for path, data := range map[string]string{
		filepath.Join("cluster", "namespaces.core_"+terminating+".yaml"): "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + terminating + "\n",
		filepath.Join("objects", "configmaps.core.json"):                 `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"k":"v"}}` + "\n",
	} {
		plugintest.Must(t, os.MkdirAll(filepath.Join(saved, filepath.Dir(path)), 0o700))
		plugintest.Must(t, os.WriteFile(filepath.Join(saved, path), []byte(data), 0o600))
	}

	for _, tc := range []struct {
		name       string
		kubeconfig string
		args       []string
		code       int
		want       string
	}{
		{"active namespace", cp.Kubeconfig, []string{"rescue", active, "--yes"}, 2, "is Active, not being deleted: nothing to rescue; to guard it against deletion, use 'kubectl ns-doctor protect " + active + "'"},
		{"missing namespace", cp.Kubeconfig, []string{"rescue", "no-such-ns", "--yes"}, 4, `namespace "no-such-ns" not found`},
		{"protect a terminating namespace", cp.Kubeconfig, []string{"protect", terminating, "--yes"}, 2, "use 'kubectl ns-doctor rescue " + terminating + "'"},
		{"no confirmation and no terminal", cp.Kubeconfig, []string{"rescue", terminating}, 2, "add --yes"},
		{"missing permissions", limited, []string{"rescue", terminating, "--yes"}, 1, "permission(s): create validatingadmissionpolicies.admissionregistration.k8s.io"},
		{"restore without permissions", limited, []string{"rescue", terminating, "--restore", "--yes", "--backup-dir", saved}, 1, "create configmaps in namespace " + terminating},
		{"restore from a folder that is no backup", cp.Kubeconfig, []string{"rescue", terminating, "--restore", "--yes", "--backup-dir", t.TempDir()}, 2, "not an ns-doctor backup"},
		{"restore of another namespace's backup", cp.Kubeconfig, []string{"rescue", active, "--restore", "--yes", "--backup-dir", saved}, 2, "holds a backup of namespace " + terminating},
		{"restore DIR: no such folder", cp.Kubeconfig, []string{"restore", filepath.Join(saved, "nothing-here")}, 2, "is not a folder"},
		{"restore DIR: no backup", cp.Kubeconfig, []string{"restore", t.TempDir()}, 2, "not an ns-doctor backup"},
		{"restore DIR: a bad -n", cp.Kubeconfig, []string{"restore", saved, "-n", "Not_A_Name"}, 2, "is not a valid namespace name"},
		{"restore DIR: without permissions", limited, []string{"restore", saved, "--yes"}, 1, "create configmaps in namespace " + terminating},
		{"restore DIR: into a namespace being deleted", cp.Kubeconfig, []string{"restore", saved, "--yes"}, 5, "is being deleted"},
		{"bad name", cp.Kubeconfig, []string{"rescue", "Not_A_Name", "--yes"}, 2, "is not a valid namespace name"},
		{"unknown output", cp.Kubeconfig, []string{"protect", active, "-o", "wide", "--yes"}, 2, "unknown output format"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := plugin.Kubectl(t, tc.kubeconfig, append([]string{"ns-doctor"}, tc.args...)...)
			lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
			if r.Code != tc.code || len(lines) != 1 || !strings.HasPrefix(lines[0], "error: ") || !strings.Contains(r.Stderr, tc.want) {
				t.Errorf("exit %d (want %d), stderr:\n%s\nwant one error line containing %q", r.Code, tc.code, r.Stderr, tc.want)
			}
		})
	}
	// Nothing was changed by any of them.
	for _, name := range []string{"ns-doctor-rescue-" + terminating, "ns-doctor-rescue-" + active, "ns-doctor-protect-" + terminating} {
		if _, err := cluster.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("policy %s exists after refused runs: %v", name, err)
		}
	}
}
