package guard

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// TestGuardCRD: the DELETE of a CustomResourceDefinition whose instances
// carry a finalizer whose owner is not running (the CRD would stick on
// customresourcecleanup) is refused in deny mode, with the reasons; it
// goes with the annotation. A CRD whose instances hold nothing goes
// without a word.
func TestGuardCRD(t *testing.T) {
	ctx := context.Background()
	base := plugintest.UniqueName(t)
	group := "crd-" + base[len(base)-5:] + ".example.com"
	held, err := cluster.EnsureCRD(ctx, group, "Gizmo", "gizmos")
	must(t, err)
	free, err := cluster.EnsureCRD(ctx, group, "Gadget", "gadgets")
	must(t, err)
	must(t, cluster.CreateNamespace(ctx, base))
	must(t, cluster.CreateCustomResource(ctx, held, "Gizmo", base, "held", ownerless))
	must(t, cluster.CreateCustomResource(ctx, free, "Gadget", base, "plain"))
	release := func() {
		_, _ = cluster.Dynamic.Resource(held).Namespace(base).Patch(context.Background(), "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	}
	t.Cleanup(release)

	g := startGuard(t, cp.Kubeconfig, "--guard=deny")
	heldCRD, freeCRD := "gizmos."+group, "gadgets."+group

	r := kubectl(t, cp.Kubeconfig, "delete", "crd", heldCRD, "--wait=false")
	t.Logf("kubectl delete crd %s:\n%s%s", heldCRD, r.Stdout, r.Stderr)
	for _, want := range []string{
		"Warning: ns-doctor: customresourcedefinition " + heldCRD + " would stick (FinalizersRemaining): 1 gizmos." + group + " (" + base + "/held) wait for " + ownerless + "; its owner External Secrets Operator is not running",
		`denied the request: ns-doctor guard refuses to delete customresourcedefinition ` + heldCRD,
		"To delete it anyway: kubectl annotate customresourcedefinition " + heldCRD + " ns-doctor.io/allow-stuck-deletion=true",
	} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("kubectl delete crd %s: no %q in\n%s", heldCRD, want, r.Stderr)
		}
	}
	crd, err := cluster.Dynamic.Resource(crdGVR).Get(ctx, heldCRD, metav1.GetOptions{})
	if r.Code != 1 || err != nil || crd.GetDeletionTimestamp() != nil {
		t.Errorf("the CRD was not refused: exit %d, %v", r.Code, err)
	}

	r = kubectl(t, cp.Kubeconfig, "annotate", "crd", heldCRD, "ns-doctor.io/allow-stuck-deletion=true")
	if r.Code != 0 {
		t.Fatalf("kubectl annotate: %s", r.Stderr)
	}
	r = kubectl(t, cp.Kubeconfig, "delete", "crd", heldCRD, "--wait=false")
	if r.Code != 0 || !strings.Contains(r.Stderr, "allowed in deny mode anyway: customresourcedefinition "+heldCRD+" carries ns-doctor.io/allow-stuck-deletion=true") {
		t.Errorf("the annotated CRD: exit %d\n%s", r.Code, r.Stderr)
	}
	r = kubectl(t, cp.Kubeconfig, "delete", "crd", freeCRD, "--wait=false")
	if r.Code != 0 || strings.Contains(r.Stderr, "Warning") {
		t.Errorf("a CRD whose instances hold nothing: exit %d\n%s", r.Code, r.Stderr)
	}
	if got := g.metric(t, "nsdoctor_guard_admissions_total", `resource="customresourcedefinitions"`); got != 3 {
		t.Errorf("%v CRD deletions answered, want 3", got)
	}

	// As predicted: the CRD sticks until the finalizer goes.
	time.Sleep(2 * time.Second)
	if _, err := cluster.Dynamic.Resource(crdGVR).Get(ctx, heldCRD, metav1.GetOptions{}); err != nil {
		t.Errorf("the CRD did not stick as predicted: %v", err)
	}
	release()
	poll(t, time.Minute, heldCRD+" gone", func() (bool, error) {
		_, err := cluster.Dynamic.Resource(crdGVR).Get(ctx, heldCRD, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// In warn mode the DELETE of such a CRD goes, with the same warning: the
// CRD then sticks, as predicted, until the finalizer goes.
func TestGuardCRDWarns(t *testing.T) {
	ctx := context.Background()
	base := plugintest.UniqueName(t)
	group := "crdw-" + base[len(base)-5:] + ".example.com"
	held, err := cluster.EnsureCRD(ctx, group, "Gizmo", "gizmos")
	must(t, err)
	must(t, cluster.CreateNamespace(ctx, base))
	must(t, cluster.CreateCustomResource(ctx, held, "Gizmo", base, "held", ownerless))
	t.Cleanup(func() {
		_, _ = cluster.Dynamic.Resource(held).Namespace(base).Patch(context.Background(), "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	startGuard(t, cp.Kubeconfig, "--guard=warn")
	heldCRD := "gizmos." + group
	r := kubectl(t, cp.Kubeconfig, "delete", "crd", heldCRD, "--wait=false")
	t.Logf("kubectl delete crd %s:\n%s%s", heldCRD, r.Stdout, r.Stderr)
	want := "Warning: ns-doctor: customresourcedefinition " + heldCRD + " would stick (FinalizersRemaining): 1 gizmos." + group + " (" + base + "/held) wait for " + ownerless
	if r.Code != 0 || !strings.Contains(r.Stderr, want) || strings.Contains(r.Stderr, "denied") {
		t.Errorf("kubectl delete crd %s in warn mode: exit %d, want allowed with %q\n%s", heldCRD, r.Code, want, r.Stderr)
	}
	crd, err := cluster.Dynamic.Resource(crdGVR).Get(ctx, heldCRD, metav1.GetOptions{})
	if err != nil || crd.GetDeletionTimestamp() == nil {
		t.Errorf("the CRD is not being deleted: %v", err)
	}
}
