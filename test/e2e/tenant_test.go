package e2e

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// A tenant, admin of its namespace only (no cluster-scoped read), gets a
// verdict: on its Active namespace with --if-deleted, and on it
// terminating while the controller has not yet passed; the report names
// what it could not check. Once the controller's first pass has deleted
// the tenant's RoleBinding with the rest, the tenant sees nothing, and
// explain says so in one line.
func TestTenantGetsAVerdict(t *testing.T) {
	ctx := context.Background()
	restart := withoutController(t)
	name := plugintest.UniqueName(t)
	user := "tenant-" + name
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.GrantNamespaceAdmin(ctx, name, user))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "held", nil, "example.com/hold"))
	t.Cleanup(func() { _ = cluster.ReleaseConfigMap(context.Background(), name, "held") })
	_, kubeconfig, err := cp.MintUser(user)
	plugintest.Must(t, err)

	e := explain(t, kubeconfig, name, "--if-deleted")
	if e.code != 0 || e.report.Verdict.State != diagnose.StateActive {
		t.Fatalf("--if-deleted: exit %d, verdict %+v\n%s", e.code, e.report.Verdict, e.human)
	}
	e.blocker(t, diagnose.BlockerFinalizers, "example.com/hold on 1 of 1 configmaps", "--remove-finalizers=example.com/hold")
	missed := strings.Join(e.report.Unchecked, "\n")
	for _, what := range []string{"validating webhooks", "mutating webhooks", "CustomResourceDefinitions",
		"clusterroles (who may remove a finalizer)", "workloads named e2e.test"} {
		if !strings.Contains(missed, what) {
			t.Errorf("unchecked does not name %s:\n%s", what, missed)
		}
	}

	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	e = explain(t, kubeconfig, name)
	if e.code != 3 || e.report.Verdict.State != diagnose.StateStuck {
		t.Fatalf("terminating: exit %d, verdict %+v\n%s", e.code, e.report.Verdict, e.human)
	}
	// No controller has passed: what it would do, the tenant sees too.
	e.blocker(t, diagnose.BlockerControllerNotRunning, "status.conditions is empty", "kubectl ns-doctor purge "+name)

	restart()
	waitCondition(t, name, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)
	r := plugin.Kubectl(t, kubeconfig, "ns-doctor", "explain", name)
	if r.Code != 1 || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 || !strings.Contains(r.Stderr, "forbidden") ||
		!strings.Contains(r.Stderr, "its deletion removed that RoleBinding with the rest, and a terminating namespace accepts no new one") ||
		!strings.Contains(r.Stderr, "a cluster admin can run kubectl ns-doctor explain "+name) ||
		!strings.Contains(r.Stderr, "kubectl create clusterrolebinding ns-doctor-explain-"+user+" --clusterrole=ns-doctor-explain --user="+user) {
		t.Errorf("after the controller's first pass: exit %d, stderr %q", r.Code, r.Stderr)
	}
	t.Logf("tenant after the first pass: %s", r.Stderr)
}
