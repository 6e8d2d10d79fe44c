package e2e

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// A fail-closed webhook whose Service lived in another namespace, itself
// being deleted: that namespace accepts no new content, so restoring the
// Service there is no step. explain says so and gives the steps that
// work; the bypass, as given, lets the namespace go.
func TestNoRestoreInATerminatingNamespace(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	hooks := name + "-hooks"
	// The webhook's namespace, terminating, held by an object of its own.
	plugintest.Must(t, cluster.CreateNamespace(ctx, hooks))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, hooks, "held", nil, "example.com/hold"))
	t.Cleanup(func() { _ = cluster.ReleaseConfigMap(context.Background(), hooks, "held") })
	plugintest.Must(t, cluster.DeleteNamespace(ctx, hooks))
	waitCondition(t, hooks, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)

	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "settings", nil))
	plugintest.Must(t, cluster.FailClosedWebhook(ctx, name, name, hooks, "guard", configMaps))
	t.Cleanup(func() { _ = cluster.DeleteWebhook(context.Background(), name) })
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceDeletionContentFailure, v1.ConditionTrue)

	e := explain(t, cp.Kubeconfig, name)
	e.agrees(t)
	b := e.blocker(t, diagnose.BlockerWebhook, "service "+hooks+"/guard: not found; its namespace is being deleted, and accepts no new content: it cannot be restored there",
		"its service's namespace is being deleted and accepts no new content, so the service cannot come back there; for this namespace only, for the run: kubectl ns-doctor purge "+name+" --bypass-webhook="+name)
	for _, a := range b.Actions {
		if a.Kind == diagnose.ActionRestoreService || strings.HasPrefix(a.Step, "restore ") {
			t.Errorf("a step that cannot work: %+v", a)
		}
	}
	if !strings.Contains(b.NextStep, "for good: kubectl delete validatingwebhookconfiguration "+name) {
		t.Errorf("next step %q", b.NextStep)
	}

	// The step, as given, gets the namespace deleted.
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", name, "--bypass-webhook="+name, "--force", "--yes", "--backup-dir", t.TempDir(), "--timeout=60s")
	if r.Code != 0 {
		t.Errorf("purge --bypass-webhook: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}
