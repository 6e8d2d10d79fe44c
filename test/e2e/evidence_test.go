package e2e

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// For each finalizer holding a namespace, explain names its catalogue
// entry and whether its owner runs: the control plane's (a PVC's
// pvc-protection), an Argo CD one with no Argo CD, a cert-manager one with
// a Deployment of that name ready, and one it does not know. The holders'
// own words (a failing status condition) and the namespace's Warning
// events are shown; Secrets' and ConfigMaps' content is never read.
func TestEvidenceOfWhoHoldsTheNamespace(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	gvr, err := cluster.EnsureCRD(ctx, "evidence.example.com", "Bucket", "buckets")
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	fakeCertManager(t)

	bucket := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": "Bucket",
		"metadata": map[string]any{"name": "logs", "namespace": name, "finalizers": []any{"example.com/bucket-cleanup"}},
		"status": map[string]any{"conditions": []any{
			map[string]any{"type": "Ready", "status": "False", "reason": "DeleteFailed", "message": "cannot delete bucket: access denied", "lastTransitionTime": "2026-11-23T06:00:00Z"},
			map[string]any{"type": "Synced", "status": "True", "reason": "ReconcileSuccess"},
		}},
	}}
	_, err = cluster.Dynamic.Resource(gvr).Namespace(name).Create(ctx, bucket, metav1.CreateOptions{})
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.CreateCustomResource(ctx, gvr, "Bucket", name, "app", "resources-finalizer.argocd.argoproj.io"))
	plugintest.Must(t, cluster.CreateCustomResource(ctx, gvr, "Bucket", name, "challenge", "acme.cert-manager.io/finalizer"))
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: name},
		Spec: v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}}}
	_, err = cluster.Kube.CoreV1().PersistentVolumeClaims(name).Create(ctx, pvc, metav1.CreateOptions{})
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "settings", nil, "example.com/bucket-cleanup"))
	event := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "logs.1", Namespace: name}, Type: v1.EventTypeWarning, Reason: "DeleteFailed",
		Message: "bucket logs: access denied", InvolvedObject: v1.ObjectReference{Kind: "Bucket", Name: "logs", Namespace: name}, Count: 4,
		LastTimestamp: metav1.Now()}
	_, err = cluster.Kube.CoreV1().Events(name).Create(ctx, event, metav1.CreateOptions{})
	plugintest.Must(t, err)

	// Before deletion, --if-deleted sees the Warning events too (the
	// controller deletes events early in a deletion).
	before := explain(t, cp.Kubeconfig, name, "--if-deleted")
	if len(before.report.Events) != 1 || before.report.Events[0].Message != "bucket logs: access denied" || before.report.Events[0].Count != 4 ||
		!strings.Contains(before.human, "bucket/logs DeleteFailed (x4") {
		t.Errorf("events: %+v\n%s", before.report.Events, before.human)
	}

	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)
	e := explain(t, cp.Kubeconfig, name)
	e.agrees(t)
	want := map[string]struct {
		known    bool
		state    diagnose.OwnerRunning
		evidence string
	}{
		"kubernetes.io/pvc-protection":           {true, diagnose.OwnerControlPlane, "part of the control plane"},
		"resources-finalizer.argocd.argoproj.io": {true, diagnose.OwnerNotFound, "statefulset argocd/argocd-application-controller"},
		"acme.cert-manager.io/finalizer":         {true, diagnose.OwnerRunningReady, "deployment cert-manager/cert-manager: 1/1 ready"},
		"example.com/bucket-cleanup":             {false, diagnose.OwnerUnknown, "unknown owner"},
	}
	got := map[string]printer.FinalizerDocument{}
	for _, f := range e.report.Finalizers {
		got[f.Name] = f
	}
	for fin, w := range want {
		f, ok := got[fin]
		switch {
		case !ok:
			t.Errorf("finalizer %s not reported; got %+v", fin, e.report.Finalizers)
		case f.Known != w.known || f.OwnerState.State != w.state || !strings.Contains(f.OwnerState.Evidence, w.evidence):
			t.Errorf("%s: known %v, owner %+v; want %v, %s, %q", fin, f.Known, f.OwnerState, w.known, w.state, w.evidence)
		case w.known && (f.Leak == "" || !strings.HasPrefix(f.Source, "https://") || !strings.Contains(e.human, f.Leak[:20])):
			t.Errorf("%s: leak %q, source %q, or not in the human report", fin, f.Leak, f.Source)
		}
		if !strings.Contains(e.human, fin) || !strings.Contains(e.human, string(w.state)) {
			t.Errorf("human report lacks %s or %s", fin, w.state)
		}
	}
	if f := got["example.com/bucket-cleanup"]; f.Objects != 2 {
		t.Errorf("example.com/bucket-cleanup holds %d objects, want 2 (the bucket and the configmap)", f.Objects)
	}
	if len(e.report.Holders) != 1 || e.report.Holders[0].Name != "logs" || len(e.report.Holders[0].Conditions) != 1 ||
		e.report.Holders[0].Conditions[0].Message != "cannot delete bucket: access denied" {
		t.Errorf("holders %+v; want the bucket's Ready=False only (the configmap is never read)", e.report.Holders)
	}
	flat := strings.Join(strings.Fields(e.human), " ") // the human report wraps long lines
	if !strings.Contains(flat, "buckets.evidence.example.com/logs Ready=False (DeleteFailed") || !strings.Contains(flat, "cannot delete bucket: access denied") {
		t.Errorf("human report lacks the holder's words:\n%s", e.human)
	}
}

// fakeCertManager runs a Deployment named as cert-manager's controller,
// ready.
func fakeCertManager(t *testing.T) {
	t.Helper()
	fakeWorkload(t, "cert-manager", "cert-manager")
}
