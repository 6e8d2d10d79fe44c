package e2e

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// The causes of 2024-2026, with the namespace controller running: an
// owner that runs (its Deployment ready) but whose cleanup the API server
// refuses because the namespace is terminating, worded as Crossplane and
// Knative word it in their holders' status; and a managed resource whose
// credentials Secret the controller deleted in its first pass.
func TestOwnerRunsButCannotFinish(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	xrs, err := cluster.EnsureCRD(ctx, "cannotfinish.example.com", "XBucket", "xbuckets")
	plugintest.Must(t, err)
	triggers, err := cluster.EnsureCRD(ctx, "cannotfinish.example.com", "Trigger", "triggers")
	plugintest.Must(t, err)
	managed, err := cluster.EnsureCRD(ctx, "cannotfinish.example.com", "Bucket", "buckets")
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	fakeWorkload(t, "crossplane-system", "crossplane")

	refused := `configmaps "xbucket-a-1" is forbidden: unable to create new content in namespace ` + name + ` because it is being terminated`
	createHeld(t, xrs, "XBucket", name, "logs", "composite.apiextensions.crossplane.io", nil,
		condition("Synced", "False", "ReconcileError", "cannot compose resources: cannot apply composed resource \"xbucket-a-1\": "+refused))
	createHeld(t, triggers, "Trigger", name, "orders", "kafka.triggers.eventing.knative.dev", nil,
		condition("Ready", "False", "FinalizeKind", `failed to get data plane config map knative-eventing/kafka-broker-brokers-triggers: configmaps "kafka-broker-brokers-triggers" is forbidden: unable to create new content in namespace `+name+` because it is being terminated`))
	secret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cloud-creds", Namespace: name}, StringData: map[string]string{"creds": "never printed"}}
	_, err = cluster.Kube.CoreV1().Secrets(name).Create(ctx, secret, metav1.CreateOptions{})
	plugintest.Must(t, err)
	createHeld(t, managed, "Bucket", name, "archive", "finalizer.managedresource.crossplane.io",
		map[string]any{"forProvider": map[string]any{"region": "eu-west-1"},
			"credentials": map[string]any{"source": "Secret", "secretRef": map[string]any{"namespace": name, "name": "cloud-creds", "key": "creds"}}},
		condition("Synced", "False", "ReconcileError", "connect failed: cannot get credentials: no such Secret"))

	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)
	if _, err := cluster.Kube.CoreV1().Secrets(name).Get(ctx, "cloud-creds", metav1.GetOptions{}); err == nil {
		t.Fatal("the namespace controller left the Secret: the credentials case does not hold")
	}

	// Named at once, whatever --grace: waiting will not help.
	e := explain(t, cp.Kubeconfig, name, "--grace=1h")
	e.agrees(t)
	if e.code != 3 {
		t.Errorf("exit %d, want 3 (stuck)\n%s", e.code, e.human)
	}
	xr := e.blocker(t, diagnose.BlockerOwnerCannotFinish, "xbuckets.cannotfinish.example.com/logs condition Synced=False: cannot compose resources",
		"waiting will not help: clean up by hand what the owner of composite.apiextensions.crossplane.io was to clean up")
	if !hasAction(xr, diagnose.PurgeAction(name, diagnose.FlagRemoveFinalizers, "composite.apiextensions.crossplane.io")) ||
		!strings.Contains(xr.Summary, "their owner cannot finish") {
		t.Errorf("crossplane blocker: %+v", xr)
	}
	e.blocker(t, diagnose.BlockerOwnerCannotFinish, "triggers.cannotfinish.example.com/orders condition Ready=False: failed to get data plane config map",
		"--remove-finalizers=kafka.triggers.eventing.knative.dev")

	// Crossplane's owner runs: the liveness says it cannot finish.
	for _, f := range e.report.Finalizers {
		if f.Name == "composite.apiextensions.crossplane.io" && f.OwnerState.State != diagnose.OwnerRunningCannotFinish {
			t.Errorf("%s: owner %+v, want %s", f.Name, f.OwnerState, diagnose.OwnerRunningCannotFinish)
		}
	}
	if !strings.Contains(e.human, "Running, but cannot finish") {
		t.Errorf("the RUNNING column does not say it:\n%s", e.human)
	}

	// The deleted credentials, by name, never by value; the bucket's
	// owner is not running here, so it is the usual blocker, with that
	// evidence (its grace has not passed: use 0s).
	e = explain(t, cp.Kubeconfig, name)
	e.blocker(t, diagnose.BlockerFinalizers, "buckets.cannotfinish.example.com/archive spec.credentials.secretRef names secret cloud-creds: deleted with the namespace", "")
	var refs []diagnose.HolderRef
	for _, h := range e.report.Holders {
		if h.Name == "archive" {
			refs = h.Refs
		}
	}
	if len(refs) != 1 || refs[0] != (diagnose.HolderRef{Field: "spec.credentials.secretRef", Kind: diagnose.RefSecret, Name: "cloud-creds", State: diagnose.RefGone}) {
		t.Errorf("holder refs %+v", refs)
	}
	if strings.Contains(e.human, "never printed") {
		t.Error("a Secret's value reached the report")
	}
}

func condition(typ, status, reason, message string) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": message, "lastTransitionTime": "2026-11-24T06:00:00Z"}
}

// createHeld creates a custom resource held by finalizer, with its spec
// and its status conditions as its owner would have written them.
func createHeld(t *testing.T, gvr schema.GroupVersionResource, kind, namespace, name, finalizer string, spec map[string]any, conds ...map[string]any) {
	t.Helper()
	var list []any
	for _, c := range conds {
		list = append(list, c)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": namespace, "finalizers": []any{finalizer}},
		"status":   map[string]any{"conditions": list},
	}}
	if spec != nil {
		obj.Object["spec"] = spec
	}
	_, err := cluster.Dynamic.Resource(gvr).Namespace(namespace).Create(context.Background(), obj, metav1.CreateOptions{})
	plugintest.Must(t, err)
}

// fakeWorkload runs a Deployment named as an owner's, with its status
// saying one replica is ready (no deployment controller runs in the test
// bed to say otherwise).
func fakeWorkload(t *testing.T, namespace, name string) {
	t.Helper()
	ctx := context.Background()
	if err := cluster.CreateNamespace(ctx, namespace); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: name, Image: "registry.example/" + name + ":v1"}}}}}}
	created, err := cluster.Kube.AppsV1().Deployments(namespace).Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		if !strings.Contains(err.Error(), "already exists") {
			t.Fatal(err)
		}
		created, err = cluster.Kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		plugintest.Must(t, err)
	}
	created.Status.Replicas, created.Status.ReadyReplicas, created.Status.AvailableReplicas = 1, 1, 1
	_, err = cluster.Kube.AppsV1().Deployments(namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	plugintest.Must(t, err)
}
