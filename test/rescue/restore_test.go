package rescue

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/rescue"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// snapshot is what a restore must bring back, as the API server serves it.
type snapshot struct {
	ConfigMaps map[string]map[string]string
	Secrets    map[string]map[string][]byte
	Template   corev1.PodSpec
	DB         corev1.PodSpec
	Gizmo      map[string]any
	Ports      []int32
	Subjects   []string
	Labels     map[string]string
	Annotation string
}

func take(t *testing.T, ctx context.Context, ns string) snapshot {
	t.Helper()
	k := cluster.Kube
	s := snapshot{ConfigMaps: map[string]map[string]string{}, Secrets: map[string]map[string][]byte{}}
	for _, name := range []string{"settings", "features"} {
		cm, err := k.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		plugintest.Must(t, err)
		s.ConfigMaps[name] = cm.Data
	}
	for _, name := range []string{"db-password", "api-token"} {
		sec, err := k.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		plugintest.Must(t, err)
		s.Secrets[name] = sec.Data
	}
	dep, err := k.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	plugintest.Must(t, err)
	s.Template = dep.Spec.Template.Spec
	sts, err := k.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
	plugintest.Must(t, err)
	s.DB = sts.Spec.Template.Spec
	gizmo, err := cluster.Dynamic.Resource(gizmoGVR).Namespace(ns).Get(ctx, "main", metav1.GetOptions{})
	plugintest.Must(t, err)
	s.Gizmo, _, _ = unstructured.NestedMap(gizmo.Object, "spec")
	svc, err := k.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
	plugintest.Must(t, err)
	for _, p := range svc.Spec.Ports {
		s.Ports = append(s.Ports, p.Port)
	}
	rb, err := k.RbacV1().RoleBindings(ns).Get(ctx, "web-view", metav1.GetOptions{})
	plugintest.Must(t, err)
	for _, sub := range rb.Subjects {
		s.Subjects = append(s.Subjects, sub.Kind+"/"+sub.Namespace+"/"+sub.Name)
	}
	_, err = k.CoreV1().ServiceAccounts(ns).Get(ctx, "web", metav1.GetOptions{})
	plugintest.Must(t, err)
	got, err := k.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	plugintest.Must(t, err)
	s.Labels, s.Annotation = got.Labels, got.Annotations["owner"]
	return s
}

// TestRescueRestorePutsTheNamespaceBack: a namespace deleted by mistake,
// rescued inside the window, is put back by --restore: the hold goes, the
// real namespace controller finishes the deletion, and the namespace comes
// back Active with every saved object equal in spec and data, its claim
// Bound by the real PV binder to the same volume, whose reclaim policy is
// Delete again.
func TestRescueRestorePutsTheNamespaceBack(t *testing.T) {
	requireOrdered(t)
	ctx := context.Background()
	ns := plugintest.UniqueName(t)
	k := cluster.Kube
	pv := fixture(t, ctx, ns)
	eventually(t, 60*time.Second, "the claim bound by the PV binder", func() (bool, string) {
		pvc, err := k.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return pvc.Status.Phase == corev1.ClaimBound, string(pvc.Status.Phase)
	})
	before := take(t, ctx, ns)

	deleteAndWaitForPods(t, ctx, ns)
	dir := filepath.Join(t.TempDir(), "backup")
	if r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "rescue", ns, "--yes", "--backup-dir", dir); r.Code != 0 {
		t.Fatalf("rescue: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	plugintest.Must(t, k.CoreV1().Pods(ns).Delete(ctx, "stuck", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
	eventually(t, 90*time.Second, "the controller's deletes refused by the hold", func() (bool, string) { return contentFailure(ctx, ns) })

	// The claim's protection finalizer would be the pvc-protection
	// controller's to remove, which does not run here: the test does it
	// once the claim is being deleted.
	doc := restoreReleasingClaims(t, ns)
	if !doc.WasHeld || !doc.Recreated || doc.Dir != dir {
		t.Errorf("restore report: held %v, recreated %v, dir %q (want the hold's %q)", doc.WasHeld, doc.Recreated, doc.Dir, dir)
	}
	status := map[string]rescue.RestoreStatus{}
	for _, o := range doc.Objects {
		status[o.Resource+"/"+o.Name] = o.Status
	}
	for obj, want := range map[string]rescue.RestoreStatus{
		"configmaps/settings": rescue.Restored, "secrets/db-password": rescue.Restored, "deployments.apps/web": rescue.Restored,
		"persistentvolumeclaims/data": rescue.Restored, "services/web": rescue.Restored, "serviceaccounts/web": rescue.Restored,
		"rolebindings.rbac.authorization.k8s.io/web-view": rescue.Restored, "replicasets.apps/web-1": rescue.LeftOut,
		"statefulsets.apps/db": rescue.Restored, "gizmos." + crdGroup + "/main": rescue.Restored,
	} {
		if status[obj] != want {
			t.Errorf("%s: %q, want %q (%+v)", obj, status[obj], want, doc.Objects)
		}
	}

	got, err := k.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp != nil || got.Status.Phase != corev1.NamespaceActive {
		t.Fatalf("namespace after restore: %v %+v", err, got)
	}
	if after := take(t, ctx, ns); !reflect.DeepEqual(after, before) {
		t.Errorf("restored objects differ:\nbefore %+v\nafter  %+v", before, after)
	}
	claimBoundTo(t, ctx, ns, pv)
	vol, err := k.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
	plugintest.Must(t, err)
	if vol.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || vol.Annotations[rescue.ReclaimAnnotation] != "" || vol.Annotations[rescue.RescuedAnnotation] != "" {
		t.Errorf("volume after restore: %s, annotations %v; want Delete and rescue's marks gone", vol.Spec.PersistentVolumeReclaimPolicy, vol.Annotations)
	}
	if _, err := k.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, rescue.HoldName(ns), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the hold is still there: %v", err)
	}

	// Run again, it changes nothing and says so: idempotent.
	again := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "rescue", ns, "--restore", "--yes", "--backup-dir", dir)
	if again.Code != 0 || !strings.Contains(again.Stdout, "RESTORED namespace "+ns) {
		t.Errorf("a second restore: exit %d\n%s\n%s", again.Code, again.Stdout, again.Stderr)
	}
}
