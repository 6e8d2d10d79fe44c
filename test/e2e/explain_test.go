package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// A namespace held by a ConfigMap finalizer, with a Secret beside it.
func heldNamespace(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "held", nil, "example.com/hold"))
	_, err := cluster.Kube.CoreV1().Secrets(name).Create(ctx, &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", Finalizers: []string{"example.com/hold"}},
		StringData: map[string]string{"password": "s3cr3t-value-" + name},
	}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)
	return name
}

func TestExplainOracleEmptyNamespaceWithDiscoveryFailure(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	group := fmt.Sprintf("e%d.example.com", time.Now().UnixNano()%100000)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	svc, err := cluster.BrokenAPIService(ctx, group, "v1", "kube-system", "gone")
	t.Cleanup(func() { _ = cluster.DeleteAPIService(context.Background(), svc) })
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceDeletionDiscoveryFailure, v1.ConditionTrue)

	e := explain(t, cp.Kubeconfig, name)
	e.agrees(t)
	e.blocker(t, diagnose.BlockerAPIServiceUnavailable, "service kube-system/gone: not found", "--delete-apiservice="+svc)
	if len(e.report.Content) != 0 {
		t.Errorf("empty namespace reported content: %+v", e.report.Content)
	}
}

func TestExplainOracleFinalizersOnBuiltins(t *testing.T) {
	name := heldNamespace(t)
	e := explain(t, cp.Kubeconfig, name)
	e.agrees(t)
	b := e.blocker(t, diagnose.BlockerFinalizers, "example.com/hold on 1 of 1 configmaps", "--remove-finalizers=example.com/hold")
	if !strings.Contains(b.Summary, "configmaps") {
		t.Errorf("summary %q", b.Summary)
	}
}

func TestExplainNeverShowsSecretOrConfigMapData(t *testing.T) {
	name := heldNamespace(t)
	for _, format := range [][]string{nil, {"-o", "json"}, {"-o", "yaml"}} {
		r := plugin.Kubectl(t, cp.Kubeconfig, append([]string{"ns-doctor", "explain", name, "--grace=0s"}, format...)...)
		if r.Code != 3 {
			t.Fatalf("explain %v: exit %d\n%s", format, r.Code, r.Stderr)
		}
		for _, secret := range []string{"s3cr3t-value-" + name, "value-held"} {
			if strings.Contains(r.Stdout+r.Stderr, secret) {
				t.Errorf("explain %v printed object data %q", format, secret)
			}
		}
	}
}

func TestExplainAllTerminatingNamespaces(t *testing.T) {
	a, b := heldNamespace(t), heldNamespace(t)
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", "--grace=0s")
	if r.Code != 3 || !strings.Contains(r.Stdout, "NAMESPACE") {
		t.Fatalf("explain with no name: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, ns := range []string{a, b} {
		line := lineWith(r.Stdout, ns)
		if !strings.Contains(line, "Stuck") || !strings.Contains(line, string(diagnose.BlockerFinalizers)) {
			t.Errorf("line for %s: %q", ns, line)
		}
	}
	// -o json is the list view as data: each line's name, state and
	// blockers, no more.
	r = plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", "-o", "json", "--grace=0s")
	var lines printer.SummaryListDocument
	if err := json.Unmarshal([]byte(r.Stdout), &lines); err != nil || lines.Kind != printer.SummaryListKind {
		t.Fatalf("explain -o json: %v, kind %q", err, lines.Kind)
	}
	found := 0
	for _, item := range lines.Items {
		if item.Namespace.DeletionTimestamp == nil {
			t.Errorf("active namespace %s in the list", item.Namespace.Name)
		}
		if item.Namespace.Name == a || item.Namespace.Name == b {
			found++
			if item.Verdict.State != diagnose.StateStuck || len(item.Blockers) == 0 || item.Blockers[0].Kind != diagnose.BlockerFinalizers || item.Remaining != 2 { // the ConfigMap and the Secret
				t.Errorf("line of %s: %+v", item.Namespace.Name, item)
			}
		}
	}
	if found != 2 {
		t.Errorf("found %d of the 2 stuck namespaces in %d items", found, len(lines.Items))
	}
	// --full: every namespace's full report, the document of old.
	r = plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", "-o", "json", "--grace=0s", "--full")
	var list printer.DiagnosisListDocument
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil || list.Kind != diagnose.ListKind || len(list.Items) != len(lines.Items) {
		t.Fatalf("explain -o json --full: %v, kind %q, %d items for %d lines", err, list.Kind, len(list.Items), len(lines.Items))
	}
	for k, item := range list.Items {
		if item.Namespace.Name != lines.Items[k].Namespace.Name || item.Verdict != lines.Items[k].Verdict {
			t.Errorf("item %d: %s %+v, its line %s %+v", k, item.Namespace.Name, item.Verdict, lines.Items[k].Namespace.Name, lines.Items[k].Verdict)
		}
	}
	human := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", "--grace=0s", "--full")
	if human.Code != 3 || strings.Count(human.Stdout, "\nBlockers\n") < 2 || !strings.Contains(human.Stdout, a) || !strings.Contains(human.Stdout, b) {
		t.Errorf("explain --full: exit %d, want the full report of each\n%s", human.Code, human.Stdout)
	}
}

func TestExplainActiveNamespace(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "held", nil, "example.com/hold"))

	e := explain(t, cp.Kubeconfig, name)
	if e.code != 0 || e.report.Verdict.State != diagnose.StateActive || len(e.report.Blockers) != 0 {
		t.Fatalf("active namespace: exit %d, verdict %+v, blockers %+v", e.code, e.report.Verdict, e.report.Blockers)
	}
	if !strings.Contains(e.human, "--if-deleted") {
		t.Errorf("human output does not offer --if-deleted:\n%s", e.human)
	}
	e = explain(t, cp.Kubeconfig, name, "--if-deleted")
	if e.code != 0 || e.report.Verdict.State != diagnose.StateActive {
		t.Fatalf("--if-deleted: exit %d, verdict %+v", e.code, e.report.Verdict)
	}
	e.blocker(t, diagnose.BlockerFinalizers, "example.com/hold on 1 of 1 configmaps", "--remove-finalizers=example.com/hold")
}

// A user who may not list Secrets gets the rest of the report, and the
// report names what it could not see.
func TestExplainPartialReportUnderRBAC(t *testing.T) {
	ctx := context.Background()
	name := heldNamespace(t)
	user := "viewer-" + name
	plugintest.Must(t, cluster.GrantClusterRole(ctx, user, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces", "pods", "configmaps", "services", "endpoints", "persistentvolumeclaims",
			"serviceaccounts", "events", "replicationcontrollers", "resourcequotas", "limitranges", "podtemplates"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"apps", "batch", "autoscaling", "policy", "networking.k8s.io", "discovery.k8s.io", "coordination.k8s.io",
			"events.k8s.io", "rbac.authorization.k8s.io", "storage.k8s.io", "example.com", "resource.k8s.io"}, Resources: []string{"*"}, Verbs: []string{"get", "list"}},
	}))
	_, kubeconfig, err := cp.MintUser(user)
	plugintest.Must(t, err)

	e := explain(t, kubeconfig, name)
	if e.code != 3 {
		t.Fatalf("exit %d, want 3 (the ConfigMap finalizer still blocks)", e.code)
	}
	b := e.blocker(t, diagnose.BlockerForbidden, `cannot list resource "secrets"`, "kubectl auth can-i list secrets")
	if b.Subject != "secrets" || !hasAction(b, diagnose.Action{Kind: diagnose.ActionCheckAccess, Target: "secrets"}) {
		t.Errorf("forbidden blocker does not name secrets: %+v", b)
	}
	e.blocker(t, diagnose.BlockerFinalizers, "example.com/hold on 1 of 1 configmaps", "--remove-finalizers")
}

func lineWith(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// Content waiting for its finalizers is in progress, not stuck, until it has
// waited past --grace; and -n names the namespace as in kubectl.
func TestExplainGraceAndNamespaceFlag(t *testing.T) {
	name := heldNamespace(t)
	e := explain(t, cp.Kubeconfig, name, "--grace=1h")
	if e.code != 0 || e.report.Verdict.State != diagnose.StateTerminating || len(e.report.Blockers) != 0 {
		t.Fatalf("within the grace period: exit %d, verdict %+v, blockers %+v", e.code, e.report.Verdict, e.report.Blockers)
	}
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", "-n", name, "--grace=0s", "-o", "json")
	var rep printer.DiagnosisDocument
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || rep.Namespace.Name != name || r.Code != 3 {
		t.Fatalf("explain -n %s: exit %d, %v, namespace %q", name, r.Code, err, rep.Namespace.Name)
	}
}

// Types with many plain objects (nothing holds them) are counted without
// being kept object by object: the counts and examples are those of a
// full list, and the conditions computed still equal the controller's.
func TestExplainCountsPlainObjectsExactly(t *testing.T) {
	ctx := context.Background()
	restart := withoutController(t)
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	for i := 0; i < 12; i++ {
		plugintest.Must(t, cluster.CreateConfigMap(ctx, name, fmt.Sprintf("plain-%02d", i), nil))
	}
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "zz-held", nil, "example.com/hold"))
	t.Cleanup(func() {
		_ = cluster.ReleaseConfigMap(context.Background(), name, "zz-held")
	})
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))

	e := explain(t, cp.Kubeconfig, name)
	var cms *diagnose.Content
	for i := range e.report.Content {
		if e.report.Content[i].Resource == "configmaps" {
			cms = &e.report.Content[i]
		}
	}
	if cms == nil || cms.Count != 13 || cms.Finalizers["example.com/hold"] != 1 ||
		strings.Join(cms.Examples, ",") != "plain-00,plain-01,plain-02" {
		t.Fatalf("configmaps content %+v, want 13 objects, 1 held, examples plain-00..02", cms)
	}

	restart()
	waitCondition(t, name, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)
	explain(t, cp.Kubeconfig, name).agrees(t)
}
