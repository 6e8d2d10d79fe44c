package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
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
		if a.Kind == diagnose.ActionRestoreService || a.Kind == diagnose.ActionCheckAPIServicePath {
			t.Errorf("a step to restore a service that is there, or to check the path to a backend that is not ready: %+v", a)
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

// An aggregated API of our own whose backend is ready (its Deployment
// 1/1, its Service's EndpointSlice a ready endpoint) while kube-apiserver
// cannot reach it: this control plane runs no proxy, so the Service's
// cluster IP leads nowhere, as a network policy or a firewall between
// kube-apiserver and the backend makes it in a cluster. kube-apiserver's
// own check fails (FailedDiscoveryCheck): the report says the path is
// what fails, quotes kube-apiserver's message, and keeps
// --delete-apiservice as the way out; not "check its pods and logs".
func TestAPIServiceReadyBackendUnreachable(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	home := name + "-path"
	group := fmt.Sprintf("p%d.path.example.org", time.Now().UnixNano()%100000)
	plugintest.Must(t, cluster.CreateNamespace(ctx, home))
	t.Cleanup(func() { _ = cluster.DeleteNamespace(context.Background(), home) })
	labels := map[string]string{"app.kubernetes.io/name": "path-api"}
	d, err := cluster.Kube.AppsV1().Deployments(home).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "path-api"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "api", Image: "registry.invalid/path-api:1"}}}}},
	}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	d.Status.Replicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = 1, 1, 1
	_, err = cluster.Kube.AppsV1().Deployments(home).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	plugintest.Must(t, err)
	_, err = cluster.Kube.CoreV1().Services(home).Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "path-api"},
		Spec: v1.ServiceSpec{Selector: labels, Ports: []v1.ServicePort{{Port: 443, TargetPort: intstr.FromInt32(8443)}}}}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	// What the EndpointSlice controller writes for a ready pod.
	_, err = cluster.Kube.DiscoveryV1().EndpointSlices(home).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "path-api-x1", Labels: map[string]string{discoveryv1.LabelServiceName: "path-api"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.7.9"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(""), Port: ptr.To(int32(8443)), Protocol: ptr.To(v1.ProtocolTCP)}},
	}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	apisvc, err := cluster.BrokenAPIService(ctx, group, "v1", home, "path-api")
	t.Cleanup(func() { _ = cluster.DeleteAPIService(context.Background(), apisvc) })
	plugintest.Must(t, err)

	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceDeletionDiscoveryFailure, v1.ConditionTrue)
	waitAPIService(t, apisvc, "FailedDiscoveryCheck")

	e := explain(t, cp.Kubeconfig, name)
	e.agrees(t)
	b := e.blocker(t, diagnose.BlockerAPIServiceUnavailable, "reason=FailedDiscoveryCheck: failing or missing response from https://",
		"check the path from kube-apiserver to service "+home+"/path-api, whose endpoints are ready")
	if !strings.Contains(b.Summary, "has ready endpoints, yet kube-apiserver's own check of it fails (FailedDiscoveryCheck), so what fails lies between them") ||
		!strings.Contains(strings.Join(b.Evidence, "\n"), "service "+home+"/path-api: 1 ready endpoints") ||
		!hasAction(b, diagnose.Action{Kind: diagnose.ActionCheckAPIServicePath, Target: apisvc, Of: home + "/path-api"}) ||
		!hasAction(b, diagnose.PurgeAction(name, diagnose.FlagDeleteAPIService, apisvc)) ||
		hasAction(b, diagnose.Action{Kind: diagnose.ActionCheckBackend}) || strings.Contains(b.NextStep, "its pods and logs") {
		t.Errorf("blocker %+v", b)
	}
}

// waitAPIService waits until APIService name is unavailable for reason.
func waitAPIService(t *testing.T, name, reason string) {
	t.Helper()
	apiServices := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		s, err := cluster.Dynamic.Resource(apiServices).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(s.Object, "status", "conditions")
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == "Available" && m["reason"] == reason {
				return true, nil
			}
		}
		return false, nil
	})
	plugintest.Must(t, err)
}
