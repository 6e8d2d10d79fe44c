package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// An aggregated API of our own whose Service is there, but whose
// Deployment behind it has no ready pod (this control plane runs no
// scheduler and no kubelet): "restore the service" would send the reader to what exists.
// explain follows the Service's selector to the Deployment, says how ready
// it is and what its pod says, and the step is to make it ready, or to
// delete the APIService if that API is gone for good.
func TestAPIServiceBackendThereButNotReady(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	home := name + "-quarry"
	group := fmt.Sprintf("q%d.quarry.example.org", time.Now().UnixNano()%100000)
	plugintest.Must(t, cluster.CreateNamespace(ctx, home))
	t.Cleanup(func() { _ = cluster.DeleteNamespace(context.Background(), home) })
	labels := map[string]string{"app.kubernetes.io/name": "quarry-api"}
	_, err := cluster.Kube.AppsV1().Deployments(home).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "quarry-api"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "api", Image: "registry.invalid/quarry-api:1"}}}}},
	}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	_, err = cluster.Kube.CoreV1().Services(home).Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "quarry-api"},
		Spec: v1.ServiceSpec{Selector: labels, Ports: []v1.ServicePort{{Port: 443, TargetPort: intstr.FromInt32(8443)}}}}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	// This control plane runs no deployment controller: its pod is made
	// as that controller would, and no kubelet or scheduler ever takes it.
	_, err = cluster.Kube.CoreV1().Pods(home).Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "quarry-api-5d8f-x7k2q", Labels: labels},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "api", Image: "registry.invalid/quarry-api:1"}}}}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	apisvc, err := cluster.BrokenAPIService(ctx, group, "v1", home, "quarry-api")
	t.Cleanup(func() { _ = cluster.DeleteAPIService(context.Background(), apisvc) })
	plugintest.Must(t, err)

	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceDeletionDiscoveryFailure, v1.ConditionTrue)

	e := explain(t, cp.Kubeconfig, name)
	e.agrees(t)
	b := e.blocker(t, diagnose.BlockerAPIServiceUnavailable,
		"service "+home+"/quarry-api: 0 ready endpoints; its selector app.kubernetes.io/name=quarry-api selects deployment "+home+"/quarry-api (0/1 ready) and 1 pod(s); pod quarry-api-5d8f-x7k2q Pending: not scheduled yet",
		"its service is there, but deployment/quarry-api in "+home+" behind it is not ready: make it ready (kubectl describe -n "+home+" deployment/quarry-api")
	if !hasAction(b, diagnose.Action{Kind: diagnose.ActionMakeBackendReady, Of: "apiservice/" + apisvc}) ||
		!hasAction(b, diagnose.PurgeAction(name, diagnose.FlagDeleteAPIService, apisvc)) {
		t.Errorf("next steps %+v", b.Actions)
	}
	for _, a := range b.Actions {
		if a.Kind == diagnose.ActionRestoreService {
			t.Errorf("a step to restore a service that is there: %+v", a)
		}
	}
}

// The counter-example: the same APIService's Service is missing
// altogether. Restoring it is the step, as before; nothing is followed.
func TestAPIServiceBackendMissingIsRestored(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	group := fmt.Sprintf("q%d.quarry.example.org", time.Now().UnixNano()%100000)
	apisvc, err := cluster.BrokenAPIService(ctx, group, "v1", "kube-system", "quarry-gone")
	t.Cleanup(func() { _ = cluster.DeleteAPIService(context.Background(), apisvc) })
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceDeletionDiscoveryFailure, v1.ConditionTrue)

	e := explain(t, cp.Kubeconfig, name)
	b := e.blocker(t, diagnose.BlockerAPIServiceUnavailable, "service kube-system/quarry-gone: not found",
		"restore the service kube-system/quarry-gone behind apiservice/"+apisvc+", or if that API is gone for good: kubectl ns-doctor purge "+name+" --delete-apiservice="+apisvc)
	if strings.Contains(strings.Join(b.Evidence, "\n"), "selects") || hasAction(b, diagnose.Action{Kind: diagnose.ActionMakeBackendReady}) {
		t.Errorf("a missing service followed to a backend: %+v", b)
	}
}
