package e2e

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// TestSlowNotStuck: a namespace whose pod is within its grace period, and
// one whose content has waited for a finalizer less than --grace, are
// being deleted, not stuck: the verdict says what is still going and for
// how long yet, and explain exits 0.
func TestSlowNotStuck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := plugintest.UniqueName(t)
	pods, held := base+"-pods", base+"-held"
	plugintest.Must(t, cluster.CreateNamespace(ctx, pods))
	plugintest.Must(t, cluster.CreateBoundPod(ctx, pods, "stopping", 600))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, pods))
	plugintest.Must(t, cluster.CreateNamespace(ctx, held))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, held, "held", nil, "example.com/slow"))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, held))
	t.Cleanup(func() {
		_ = cluster.ReleaseConfigMap(context.Background(), held, "held")
		_ = cluster.Kube.CoreV1().Pods(pods).Delete(context.Background(), "stopping", zeroGrace)
	})
	waitCondition(t, pods, v1.NamespaceDeletionDiscoveryFailure, v1.ConditionFalse)
	waitCondition(t, held, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)

	for _, c := range []struct {
		ns      string
		kind    diagnose.ProgressKind
		maxLeft int64
		words   string
		objects int
		subject string
	}{
		{pods, diagnose.ProgressPodsInGrace, 600, "1 pod(s) within their grace period (the last one ends in", 1, "pods"},
		{held, diagnose.ProgressFinalizersInGrace, 300, "1 configmaps wait for example.com/slow, for", 1, "example.com/slow"},
	} {
		e := explain(t, cp.Kubeconfig, c.ns, "--grace=5m")
		if e.code != 0 || e.report.Verdict.State != diagnose.StateTerminating {
			t.Fatalf("%s: exit %d, verdict %s, want 0 and Terminating\n%s", c.ns, e.code, e.report.Verdict.State, e.human)
		}
		var found *diagnose.Progress
		for i, p := range e.report.Progress {
			if p.Kind == c.kind {
				found = &e.report.Progress[i]
			}
		}
		if found == nil || found.Objects != c.objects || found.Subject != c.subject || found.LeftSeconds <= 0 || found.LeftSeconds > c.maxLeft || found.GoingSeconds < 0 {
			t.Errorf("%s: progress %+v, want %s of %d %s with 0 < leftSeconds <= %d", c.ns, e.report.Progress, c.kind, c.objects, c.subject, c.maxLeft)
		}
		// The human view wraps the verdict: compare words.
		for _, out := range []string{strings.Join(strings.Fields(e.human), " "), e.report.Verdict.Summary} {
			if !strings.Contains(out, "slowly but not stuck") || !strings.Contains(out, c.words) {
				t.Errorf("%s: the verdict does not say what is still going (%q):\n%s", c.ns, c.words, out)
			}
		}
	}
	// The same namespace past --grace=0 is stuck: the progress was only
	// the grace.
	if e := explain(t, cp.Kubeconfig, held, "--grace=0s"); e.code != 3 || len(e.report.Progress) != 0 {
		t.Errorf("%s with --grace=0s: exit %d, progress %+v; want 3 and none", held, e.code, e.report.Progress)
	}
}

var zeroGrace = metav1.DeleteOptions{GracePeriodSeconds: new(int64)}
