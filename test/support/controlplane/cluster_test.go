package controlplane

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// The full bed behaves as a cluster does around a namespace: what each
// subtest checks is something a test elsewhere relies on, seen happen.
func TestFullBedBehavesLikeACluster(t *testing.T) {
	ctx := context.Background()
	cp, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	admin := client(t, cp.Config)
	mustCreate(t, admin, "bed")

	t.Run("the ServiceAccount controller makes default and the root CA publisher kube-root-ca.crt", func(t *testing.T) {
		if err := WaitForDefaultServiceAccount(ctx, admin, "bed"); err != nil {
			t.Fatal(err)
		}
		poll(t, "kube-root-ca.crt in bed", func() bool {
			_, err := admin.CoreV1().ConfigMaps("bed").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
			return err == nil
		})
	})

	t.Run("a Deployment's pod is scheduled onto a node and runs Ready", func(t *testing.T) {
		labels := map[string]string{"app": "web"}
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "bed"}, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "web", Image: "registry.invalid/web"}}}}}}
		if _, err := admin.AppsV1().Deployments("bed").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		poll(t, "deployment web available", func() bool {
			got, err := admin.AppsV1().Deployments("bed").Get(ctx, "web", metav1.GetOptions{})
			return err == nil && got.Status.AvailableReplicas == 2
		})
		pods, err := admin.CoreV1().Pods("bed").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil || len(pods.Items) != 2 {
			t.Fatalf("pods of web: %v, %d", err, len(pods.Items))
		}
		for _, p := range pods.Items {
			if !strings.HasPrefix(p.Spec.NodeName, "node-") || p.Spec.NodeName == LostNodeName || p.Status.Phase != v1.PodRunning {
				t.Fatalf("pod %s on %q, %s: want Running on a live node", p.Name, p.Spec.NodeName, p.Status.Phase)
			}
		}
	})

	t.Run("a deleted pod goes at the end of its grace period, not before", func(t *testing.T) {
		pod := runningPod(t, admin, "graceful", 4)
		start := time.Now()
		if err := admin.CoreV1().Pods("bed").Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		poll(t, "pod graceful gone", func() bool {
			_, err := admin.CoreV1().Pods("bed").Get(ctx, pod.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		// The deletionTimestamp is the request's time plus the grace period,
		// in whole seconds: the pod may go up to a second early.
		if took := time.Since(start); took < 3*time.Second {
			t.Fatalf("pod with a 4 s grace period gone after %s", took)
		}
	})

	t.Run("a pod on the lost node stays Terminating", func(t *testing.T) {
		node, err := admin.CoreV1().Nodes().Get(ctx, LostNodeName, metav1.GetOptions{})
		if err != nil || ready(node) == v1.ConditionTrue {
			t.Fatalf("lost node: %v, Ready %s", err, ready(node))
		}
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stranded", Namespace: "bed"}, Spec: v1.PodSpec{
			NodeName: LostNodeName, TerminationGracePeriodSeconds: ptr.To(int64(1)),
			Containers: []v1.Container{{Name: "main", Image: "registry.invalid/none"}}}}
		if _, err := admin.CoreV1().Pods("bed").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := admin.CoreV1().Pods("bed").Delete(ctx, "stranded", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// Well past its grace period, and past a live node's removal.
		time.Sleep(4 * time.Second)
		got, err := admin.CoreV1().Pods("bed").Get(ctx, "stranded", metav1.GetOptions{})
		if err != nil || got.DeletionTimestamp == nil {
			t.Fatalf("pod on the lost node: %v, %+v; want it Terminating", err, got)
		}
	})

	t.Run("a node whose kubelet stops goes NotReady and is tainted unreachable", func(t *testing.T) {
		if _, err := cp.StartNode(ctx, "node-doomed"); err != nil {
			t.Fatal(err)
		}
		if err := cp.LoseNode(ctx, "node-doomed"); err != nil {
			t.Fatal(err)
		}
		poll(t, "unreachable taint on node-doomed", func() bool {
			node, err := admin.CoreV1().Nodes().Get(ctx, "node-doomed", metav1.GetOptions{})
			return err == nil && slices.ContainsFunc(node.Spec.Taints, func(t v1.Taint) bool { return t.Key == v1.TaintNodeUnreachable })
		})
	})

	t.Run("a claim's pvc-protection finalizer is removed by its controller", func(t *testing.T) {
		pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "bed"}, Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}}}
		created, err := admin.CoreV1().PersistentVolumeClaims("bed").Create(ctx, pvc, metav1.CreateOptions{})
		if err != nil || !slices.Contains(created.Finalizers, "kubernetes.io/pvc-protection") {
			t.Fatalf("claim: %v, finalizers %v; want pvc-protection set by admission", err, created.Finalizers)
		}
		if err := admin.CoreV1().PersistentVolumeClaims("bed").Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		poll(t, "claim data gone", func() bool {
			_, err := admin.CoreV1().PersistentVolumeClaims("bed").Get(ctx, "data", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
	})

	t.Run("a quiet pod garbage collector leaves a deleted node's pods; back, it removes them", func(t *testing.T) {
		if _, err := cp.StartNode(ctx, "node-removed"); err != nil {
			t.Fatal(err)
		}
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: "bed"}, Spec: v1.PodSpec{
			NodeName: "node-removed", Containers: []v1.Container{{Name: "main", Image: "registry.invalid/none"}}}}
		if _, err := admin.CoreV1().Pods("bed").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		restore, err := cp.QuietControllers("pod-garbage-collector-controller")
		if err != nil {
			t.Fatal(err)
		}
		if err := cp.DeleteNode(ctx, "node-removed"); err != nil {
			t.Fatal(err)
		}
		// The collector's quarantine of a missing node is 40 s, checked
		// every 20 s: 65 s quiet must leave the pod.
		time.Sleep(65 * time.Second)
		if _, err := admin.CoreV1().Pods("bed").Get(ctx, "orphan", metav1.GetOptions{}); err != nil {
			t.Fatalf("orphan pod while the pod GC is quiet: %v", err)
		}
		if err := restore(); err != nil {
			t.Fatal(err)
		}
		poll(t, "orphan pod collected", func() bool {
			_, err := admin.CoreV1().Pods("bed").Get(ctx, "orphan", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
	})

	t.Run("the namespace controller finishes a namespace whose pods run", func(t *testing.T) {
		if err := admin.CoreV1().Namespaces().Delete(ctx, "bed", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// The pod on the lost node was deleted with its namespace's content
		// and is never confirmed: force it, as an operator would.
		if err := admin.CoreV1().Pods("bed").Delete(ctx, "stranded", metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		waitGone(t, admin, "bed")
	})
}

func mustCreate(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	if _, err := c.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// runningPod creates a pod that the scheduler and a node's kubelet run.
func runningPod(t *testing.T, c kubernetes.Interface, name string, grace int64) *v1.Pod {
	t.Helper()
	ctx := context.Background()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "bed"}, Spec: v1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To(grace), Containers: []v1.Container{{Name: "main", Image: "registry.invalid/none"}}}}
	if _, err := c.CoreV1().Pods("bed").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *v1.Pod
	poll(t, "pod "+name+" Running", func() bool {
		var err error
		got, err = c.CoreV1().Pods("bed").Get(ctx, name, metav1.GetOptions{})
		return err == nil && got.Status.Phase == v1.PodRunning
	})
	return got
}

func ready(node *v1.Node) v1.ConditionStatus {
	if node == nil {
		return ""
	}
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status
		}
	}
	return ""
}

func poll(t *testing.T, what string, ok func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
		return ok(), nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
