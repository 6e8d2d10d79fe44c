package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

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
	if !hasAction(b, diagnose.Action{Kind: diagnose.ActionDeleteWebhookConfiguration, Target: "validatingwebhookconfiguration/" + name}) {
		t.Errorf("next steps %+v", b.Actions)
	}

	// The step, as given, gets the namespace deleted.
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", name, "--bypass-webhook="+name, "--force", "--yes", "--backup-dir", t.TempDir(), "--timeout=60s")
	if r.Code != 0 {
		t.Errorf("purge --bypass-webhook: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// Pods held on lost nodes: one whose kubelet stopped reporting
// (Ready=Unknown since ten minutes), one whose Node object is gone.
// explain names each node and its state, and the force-delete first;
// that step, as given, lets the namespace go.
func TestPodsOnLostNodes(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	lost, gone := name+"-lost", name+"-gone"
	node, err := cluster.Kube.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: lost}}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	t.Cleanup(func() { _ = cluster.Kube.CoreV1().Nodes().Delete(context.Background(), lost, metav1.DeleteOptions{}) })
	since := metav1.NewTime(time.Now().Add(-10 * time.Minute).Truncate(time.Second))
	node.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionUnknown, Reason: "NodeStatusUnknown",
		Message: "Kubelet stopped posting node status.", LastTransitionTime: since, LastHeartbeatTime: since}}
	_, err = cluster.Kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	plugintest.Must(t, err)

	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	for pod, on := range map[string]string{"on-lost": lost, "on-gone": gone} {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: name}, Spec: v1.PodSpec{NodeName: on, TerminationGracePeriodSeconds: ptr.To(int64(1)),
			Containers: []v1.Container{{Name: "main", Image: "registry.invalid/none", Env: []v1.EnvVar{{Name: "TOKEN", Value: "never-printed"}}}}}}
		_, err := cluster.Kube.CoreV1().Pods(name).Create(ctx, p, metav1.CreateOptions{})
		plugintest.Must(t, err)
	}
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceDeletionContentFailure, v1.ConditionTrue)
	pod, err := cluster.Kube.CoreV1().Pods(name).Get(ctx, "on-lost", metav1.GetOptions{})
	plugintest.Must(t, err)
	time.Sleep(time.Until(pod.DeletionTimestamp.Time) + time.Second)

	e := explain(t, cp.Kubeconfig, name)
	b := e.blocker(t, diagnose.BlockerPods, "pod/on-lost: grace period ended", "node "+gone+", "+lost+" will never confirm their end: kubectl ns-doctor purge "+name+" --force-delete-pods")
	evidence := strings.Join(b.Evidence, "\n")
	for _, want := range []string{"its node " + lost + " is NotReady since " + since.UTC().Format(time.RFC3339) + ": its kubelet does not report",
		"its node " + gone + " is gone"} {
		if !strings.Contains(evidence, want) {
			t.Errorf("evidence lacks %q:\n%s", want, evidence)
		}
	}
	if strings.Contains(e.human, "never-printed") {
		t.Error("a pod's env value reached the report")
	}

	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", name, "--force-delete-pods", "--force", "--yes", "--backup-dir", t.TempDir(), "--timeout=60s")
	if r.Code != 0 {
		t.Errorf("purge --force-delete-pods: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}
