package purge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/internal/purge"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

func TestFinalizeDespiteDiscoveryFailure(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	group := fmt.Sprintf("d%d.example.com", time.Now().UnixNano()%100000)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "plain", nil))
	svc, err := cluster.BrokenAPIService(ctx, group, "v1", "kube-system", "gone")
	t.Cleanup(func() { _ = cluster.DeleteAPIService(context.Background(), svc) })
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))

	// Like the controller, purge never finalizes while discovery fails...
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", name, "--force", "--yes", "--backup-dir", t.TempDir(), "--timeout=4s", "-o", "json")
	var rep printer.PurgeDocument
	plugintest.Must(t, json.Unmarshal([]byte(r.Stdout), &rep))
	if r.Code != 5 || rep.Finalize.Done || !strings.Contains(rep.Finalize.Reason, "--finalize-despite-discovery-failure") {
		t.Fatalf("exit %d, finalize %+v", r.Code, rep.Finalize)
	}
	for _, c := range rep.Conditions {
		if c.Type == "NamespaceDeletionDiscoveryFailure" && c.Reason != "DiscoveryFailed" {
			t.Errorf("discovery condition %+v", c)
		}
	}
	// ...unless asked, and the content it could see is gone first.
	r = plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", name, "--force", "--yes", "--finalize-despite-discovery-failure", "--backup-dir", t.TempDir(), "--timeout=1m")
	if r.Code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if _, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace still there: %v", err)
	}
}

func TestRemoveNamespaceFinalizers(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespaceWithFinalizers(ctx, name, "example.com/hold"))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))

	rep, r := purgeJSON(t, name)
	if r.Code != 0 || !rep.Finalize.Would || strings.Join(rep.Finalize.Remove, ",") != "kubernetes" || len(rep.Warnings) == 0 {
		t.Fatalf("plan: finalize %+v, warnings %v", rep.Finalize, rep.Warnings)
	}
	// Without the escalation: kubernetes goes, the other token stays, and
	// purge stops at once (waiting cannot help), naming the flag.
	rep, r = purgeJSON(t, name, "--force", "--yes", "--backup-dir", t.TempDir(), "--timeout=10m")
	if r.Code != 5 || rep.Stop == nil || rep.Stop.Reason != purge.StopBlocked || !strings.Contains(r.Stderr, "--remove-namespace-finalizers") {
		t.Fatalf("without --remove-namespace-finalizers: exit %d, stop %+v\n%s", r.Code, rep.Stop, r.Stderr)
	}
	step := holdStep(t, rep, diagnose.BlockerNamespaceFinalizer, diagnose.FlagRemoveNamespaceFinalizers)
	if done := followStep(t, step); done.Outcome != purge.OutcomeGone {
		t.Fatalf("the printed step %q does not finish the namespace: %+v", step, done.Outcome)
	}
	if _, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace still there: %v", err)
	}
}

func TestForceNeedsConsent(t *testing.T) {
	name, _ := mixedNamespace(t)
	before := resourceVersions(t, name)
	// No terminal on stdin (the test's), no --yes: refuse, change nothing.
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", name, "--force")
	if r.Code != 2 || !strings.Contains(r.Stderr, "add --yes") {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	if fmt.Sprint(resourceVersions(t, name)) != fmt.Sprint(before) {
		t.Fatal("purge acted without consent")
	}
}

// A run stopped part way (here by its timeout while a finalizer holds the
// namespace) leaves a consistent state; running it again finishes the job.
func TestRerunContinues(t *testing.T) {
	ctx := context.Background()
	name, _ := mixedNamespace(t)
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", name, "--force", "--yes", "--backup-dir", t.TempDir(), "--timeout=3s")
	if r.Code != 5 {
		t.Fatalf("first run: exit %d\n%s", r.Code, r.Stderr)
	}
	r = plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", name, "--force", "--yes", "--remove-all-finalizers", "--backup-dir", t.TempDir(), "--timeout=1m")
	if r.Code != 0 {
		t.Fatalf("second run: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if _, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace still there: %v", err)
	}
}
