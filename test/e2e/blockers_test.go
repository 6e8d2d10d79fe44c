package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func TestBlockerFailClosedWebhook(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "held", nil))
	plugintest.Must(t, cluster.FailClosedWebhook(ctx, name, name, "webhook-system", "guard", configMaps))
	t.Cleanup(func() { _ = cluster.DeleteWebhook(context.Background(), name) })
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceDeletionContentFailure, v1.ConditionTrue)

	e := explain(t, cp.Kubeconfig, name)
	if e.code != 3 {
		t.Fatalf("exit code %d, want 3", e.code)
	}
	e.blocker(t, diagnose.BlockerWebhook, "service webhook-system/guard: not found", "--bypass-webhook="+name)
	e.agrees(t)
}

func TestBlockerSelfHostedWebhook(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "held", map[string]string{"app": "x"}, "example.com/hold"))
	plugintest.Must(t, cluster.FailClosedWebhook(ctx, name, name, name, "cert-manager-webhook", configMaps))
	t.Cleanup(func() { _ = cluster.DeleteWebhook(context.Background(), name) })
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceDeletionContentFailure, v1.ConditionTrue)

	e := explain(t, cp.Kubeconfig, name)
	b := e.blocker(t, diagnose.BlockerSelfHostedWebhook, "failurePolicy=Fail", "--bypass-webhook="+name)
	if !strings.Contains(b.Summary, "configmaps (DELETE,UPDATE)") {
		t.Errorf("summary does not name what the webhook catches: %q", b.Summary)
	}
	e.agrees(t)
}

func TestBlockerPodsNotTerminating(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateBoundPod(ctx, name, "stuck", 1))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "waits-for-pods", nil))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	// Past the grace period the controller calls the pod unexpected.
	waitCondition(t, name, v1.NamespaceDeletionContentFailure, v1.ConditionTrue)
	pod, err := cluster.Kube.CoreV1().Pods(name).Get(ctx, "stuck", metav1.GetOptions{})
	plugintest.Must(t, err)
	// Its deletionTimestamp is when its grace period ends.
	time.Sleep(time.Until(pod.DeletionTimestamp.Time) + time.Second)

	e := explain(t, cp.Kubeconfig, name)
	e.blocker(t, diagnose.BlockerPods, "pod/stuck: grace period ended", "purge "+name+" --force-delete-pods")
	if e.report.Pods == nil || !e.report.Pods.HoldingOtherContent || e.report.Pods.EstimateSeconds != 1 {
		t.Errorf("pods summary %+v: want holding other content, estimate 1", e.report.Pods)
	}
	if !strings.Contains(e.human, "the controller deletes nothing else") {
		t.Errorf("human output does not explain ordered deletion:\n%s", e.human)
	}
	e.agrees(t)
}

func TestBlockerNamespaceFinalizer(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespaceWithFinalizers(ctx, name, "example.com/hold"))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	// The controller finalizes its own token and leaves the other one.
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		ns, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return err == nil && len(ns.Spec.Finalizers) == 1, err
	})
	plugintest.Must(t, err)

	e := explain(t, cp.Kubeconfig, name)
	if e.code != 3 {
		t.Fatalf("exit code %d, want 3", e.code)
	}
	e.blocker(t, diagnose.BlockerNamespaceFinalizer, "spec.finalizers: example.com/hold", "--remove-namespace-finalizers")
	e.agrees(t)
}

func TestBlockerControllerNotRunning(t *testing.T) {
	ctx := context.Background()
	plugintest.Quiet(t, cp, "namespace-controller")
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "left", nil))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	time.Sleep(2 * time.Second)

	e := explain(t, cp.Kubeconfig, name, "--grace=1s")
	e.blocker(t, diagnose.BlockerControllerNotRunning, "status.conditions is empty", "kubectl ns-doctor purge "+name)
	for _, c := range e.report.Conditions {
		if c.Controller != nil || c.Computed == nil {
			t.Errorf("condition %s: controller %+v (want none), computed %+v", c.Type, c.Controller, c.Computed)
		}
	}
	// Within the grace period nothing is suspected yet.
	e = explain(t, cp.Kubeconfig, name, "--grace=1h")
	for _, b := range e.report.Blockers {
		if b.Kind == diagnose.BlockerControllerNotRunning {
			t.Errorf("controller suspected within its grace period: %+v", b)
		}
	}
}

func TestBlockerSelfHostedAPIService(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	group := fmt.Sprintf("s%d.example.com", time.Now().UnixNano()%100000)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	svc, err := cluster.BrokenAPIService(ctx, group, "v1beta1", name, "metrics-server")
	t.Cleanup(func() { _ = cluster.DeleteAPIService(context.Background(), svc) })
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceDeletionDiscoveryFailure, v1.ConditionTrue)

	e := explain(t, cp.Kubeconfig, name)
	e.blocker(t, diagnose.BlockerSelfHostedAPIService, "reason=ServiceNotFound", "--delete-apiservice="+svc)
	e.agrees(t)
}

func TestBlockerCRDBeingDeleted(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	group := fmt.Sprintf("g%d.example.com", time.Now().UnixNano()%100000)
	gvr, err := cluster.EnsureCRD(ctx, group, "Gadget", "gadgets")
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateCustomResource(ctx, gvr, "Gadget", name, "g1", "example.com/cleanup"))
	plugintest.Must(t, cluster.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
		Delete(ctx, "gadgets."+group, metav1.DeleteOptions{}))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)

	e := explain(t, cp.Kubeconfig, name)
	e.blocker(t, diagnose.BlockerCRDDeleting, "customresourcedefinition/gadgets."+group+" has a deletionTimestamp", "--remove-finalizers=example.com/cleanup")
	e.agrees(t)
}
