package watch

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// TestWatchJanitorNamesBypassedWebhooks: the planning janitor's Event
// counts what the plan would change from the one summary purge makes, so
// a --bypass-webhook the janitor is given is in its words as in the CLI's
// (it was once left out: the Event counted strips and pods by hand).
func TestWatchJanitorNamesBypassedWebhooks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := plugintest.UniqueName(t)
	cfg := ns + "-guard"
	finalizer := "example.com/janitor-bypass"
	configmaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	must(t, cluster.CreateNamespaceWithLabels(ctx, ns, map[string]string{"ci-run": ns}))
	must(t, cluster.CreateConfigMap(ctx, ns, "held", nil, finalizer))
	must(t, cluster.FailClosedWebhook(ctx, cfg, ns, ns, "gone", configmaps))
	t.Cleanup(func() {
		_ = cluster.DeleteWebhook(context.Background(), cfg)
		_ = cluster.ReleaseConfigMap(context.Background(), ns, "held")
	})
	must(t, cluster.DeleteNamespace(ctx, ns))

	planning := startWatch(t, cp.Kubeconfig, "--after=0s", "--resync=3s", "--grace=0s", "--purge-selector=ci-run="+ns, "--purge-after=2s",
		"--remove-finalizers="+finalizer, "--bypass-webhook="+cfg, "--backup-dir="+t.TempDir())
	poll(t, time.Minute, "a NamespacePurgePlanned Event on "+ns, func() (bool, error) {
		return len(events(t, ns, "NamespacePurgePlanned")) > 0, nil
	})
	planning.Signal(syscall.SIGTERM)
	if code := planning.Exit(t, 30*time.Second); code != 0 {
		t.Errorf("watch exited %d on SIGTERM", code)
	}
	msg := events(t, ns, "NamespacePurgePlanned")[0].Message
	for _, want := range []string{"1 webhook configuration(s) bypassed", "1 finalizer removal(s)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("NamespacePurgePlanned lacks %q: %q", want, msg)
		}
	}
}
