package inspect

import (
	"context"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/kube/kubetest"
)

// A Service that is there with no ready endpoint is followed to what its
// selector selects: the workload whose pod template it matches (not one
// whose labels differ), how ready it is, and why its pods are not ready.
// A Service that is missing, or one that has ready endpoints, is not
// followed.
func TestServiceFollowedToTheWorkloadBehindIt(t *testing.T) {
	deploy := func(name string, labels map[string]string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "quarry"},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(1)), Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}}}}
	}
	pending := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "quarry-api-1", Namespace: "quarry", Labels: map[string]string{"app": "quarry-api", "pod-template-hash": "x"}},
		Status: v1.PodStatus{Phase: v1.PodPending, Conditions: []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available"}}}}
	crashing := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "quarry-api-2", Namespace: "quarry", Labels: map[string]string{"app": "quarry-api"}},
		Spec:   v1.PodSpec{NodeName: "n1"},
		Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "api", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 5m0s"}}}}}}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "quarry-api", Namespace: "quarry"}, Spec: v1.ServiceSpec{Selector: map[string]string{"app": "quarry-api"}}}
	c := kubetest.New()
	for _, p := range []*v1.Pod{pending, crashing} {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
		if err != nil {
			t.Fatal(err)
		}
		c.Add(kubetest.Pods, &unstructured.Unstructured{Object: u})
	}
	objs := []runtime.Object{svc, deploy("quarry-api", map[string]string{"app": "quarry-api", "tier": "api"}), deploy("quarry-ui", map[string]string{"app": "quarry-ui"})}
	in := New(c.Clients(objs...), Config{})

	got := in.readService(context.Background(), diagnose.ServiceRef{Namespace: "quarry", Name: "quarry-api"})
	want := &diagnose.ServiceBackend{Selector: "app=quarry-api", Pods: 2,
		Workloads: []diagnose.WorkloadState{{WorkloadRef: diagnose.WorkloadRef{Kind: "Deployment", Namespace: "quarry", Name: "quarry-api"}, Ready: 0, Want: 1}},
		NotReady: []diagnose.PodNotReady{{Name: "quarry-api-1", Phase: "Pending", Why: "not scheduled: Unschedulable: 0/3 nodes are available"},
			{Name: "quarry-api-2", Phase: "Running", Why: "container api waiting: CrashLoopBackOff: back-off 5m0s"}}}
	if !got.Exists || got.NotReadyBehind() == nil || !reflect.DeepEqual(got.Behind, want) {
		t.Errorf("behind %+v, want %+v", got.Behind, want)
	}

	// Missing: nothing to follow, and restoring it is the step.
	if gone := in.readService(context.Background(), diagnose.ServiceRef{Namespace: "quarry", Name: "gone"}); gone.Exists || gone.NotReadyBehind() != nil {
		t.Errorf("a missing service followed: %+v", gone)
	}
	// Up: nothing is down behind it.
	if up := (diagnose.ServiceState{Exists: true, ReadyEndpoints: 2, Behind: want}); up.NotReadyBehind() != nil {
		t.Errorf("a service with ready endpoints is said not ready behind")
	}
}
