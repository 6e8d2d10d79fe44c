package rescue

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/backup/restore"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/internal/rescue"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
	"github.com/ns-doctor/ns-doctor/test/support/scenario"
)

// TestRescueRestorePutsTheNamespaceBack: an application installed as a
// Helm chart installs one, with an operator-shaped database beside it,
// deleted by mistake, rescued inside the window (its pods take 20 s to
// go), and put back by --restore: the hold released (and seen released),
// the deletion finished by purge's own pass rather than the controller's
// next one, the namespace Active again with every object accepted and
// equal to what it was (headless stays headless, the Job is there, Helm's
// release Secret whole), the claims Bound to the same volumes, whose
// reclaim policy is Delete again, the workloads running, the database's
// claim and Secret owned by the restored Database.
func TestRescueRestorePutsTheNamespaceBack(t *testing.T) {
	requireOrdered(t)
	ctx := context.Background()
	ns := plugintest.UniqueName(t)
	k := cluster.Kube
	app, before := installApp(t, ns, scenario.AppOptions{Grace: 20, NodePort: freeNodePort()})

	if r := plugin.Kubectl(t, cp.Kubeconfig, "delete", "namespace", ns, "--wait=false"); r.Code != 0 {
		t.Fatalf("kubectl delete namespace: %d %s", r.Code, r.Stderr)
	}
	podsGoing(t, ctx, ns)
	dir := filepath.Join(t.TempDir(), "backup")
	if r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "rescue", ns, "--yes", "--backup-dir", dir); r.Code != 0 {
		t.Fatalf("rescue: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	eventually(t, 2*time.Minute, "the controller's deletes refused by the hold, once the pods are gone", func() (bool, string) { return contentFailure(ctx, ns) })
	held, err := cluster.AppState(ctx, ns)
	plugintest.Must(t, err)
	if diff := scenario.DiffAppStates(before, held); len(diff) > 0 {
		t.Fatalf("the hold lost something:\n%s", strings.Join(diff, "\n"))
	}

	start := time.Now()
	doc := rescueRestore(t, ns)
	t.Logf("--restore took %s", time.Since(start))
	if !doc.WasHeld || !doc.Released.Proven || doc.Deletion == nil || doc.Restore == nil || doc.Dir != dir {
		t.Fatalf("restore report: held %v, released %+v, deletion %v, dir %q (want the hold's %q)", doc.WasHeld, doc.Released, doc.Deletion != nil, doc.Dir, dir)
	}
	if c := doc.Restore.Counts(); c[restore.Failed] != 0 || !doc.Restore.NamespaceCreated {
		t.Fatalf("restore: %v, namespace created %v", c, doc.Restore.NamespaceCreated)
	}
	got, err := k.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp != nil || got.Status.Phase != corev1.NamespaceActive {
		t.Fatalf("namespace after restore: %v %+v", err, got)
	}
	checkRestoredApp(t, ns, app, before)
	for _, pv := range app.Volumes {
		vol, err := k.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
		plugintest.Must(t, err)
		if vol.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || vol.Annotations[rescue.ReclaimAnnotation] != "" || vol.Annotations[rescue.RescuedAnnotation] != "" {
			t.Errorf("volume %s after restore: %s, annotations %v; want Delete and rescue's marks gone", pv, vol.Spec.PersistentVolumeReclaimPolicy, vol.Annotations)
		}
	}
	if _, err := k.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, rescue.HoldName(ns), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the hold is still there: %v", err)
	}

	// Run again, it changes nothing and says so: idempotent.
	again := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "rescue", ns, "--restore", "--yes", "--backup-dir", dir)
	if again.Code != 0 || !strings.Contains(again.Stdout, "RESTORED namespace "+ns) {
		t.Errorf("a second restore: exit %d\n%s\n%s", again.Code, again.Stdout, again.Stderr)
	}

	t.Run("a clone beside the running original", func(t *testing.T) { cloneBesideTheOriginal(t, dir, app) })
}

// cloneBesideTheOriginal restores the same folder into another namespace
// while the original runs: what the original holds is not the clone's.
// Its web Service's node port is taken (given another, and said), its
// claims' volumes are bound to the original's claims (new claims with no
// volume, and said), its RoleBinding binds the clone's account.
func cloneBesideTheOriginal(t *testing.T, dir string, app *scenario.App) {
	ctx := context.Background()
	clone := app.Namespace + "-copy"
	rep, r := restoreJSON(t, dir, "-n", clone, "--yes")
	t.Cleanup(func() { _ = cluster.DeleteNamespace(context.Background(), clone) })
	if r.Code != 0 || rep.Counts()[restore.Failed] != 0 {
		t.Fatalf("clone: exit %d, %v\n%s", r.Code, rep.Counts(), r.Stderr)
	}
	notes := map[string]string{}
	for _, o := range rep.Objects {
		notes[o.Resource+"/"+o.Name] = strings.Join(o.Notes, "; ")
	}
	svc, err := cluster.Kube.CoreV1().Services(clone).Get(ctx, "web", metav1.GetOptions{})
	plugintest.Must(t, err)
	if got := svc.Spec.Ports[0].NodePort; got == app.NodePort || !strings.Contains(notes["services/web"], "was taken by another Service: given") {
		t.Errorf("the clone's node port %d (the original's %d), notes %q", got, app.NodePort, notes["services/web"])
	}
	for _, claim := range []string{"data-db-0", "main-data"} {
		pvc, err := cluster.Kube.CoreV1().PersistentVolumeClaims(clone).Get(ctx, claim, metav1.GetOptions{})
		plugintest.Must(t, err)
		if pvc.Spec.VolumeName != "" || !strings.Contains(notes["persistentvolumeclaims/"+claim], "is bound to "+app.Namespace+"/"+claim) {
			t.Errorf("the clone's claim %s: volume %q, notes %q", claim, pvc.Spec.VolumeName, notes["persistentvolumeclaims/"+claim])
		}
	}
	rb, err := cluster.Kube.RbacV1().RoleBindings(clone).Get(ctx, "web", metav1.GetOptions{})
	plugintest.Must(t, err)
	if rb.Subjects[0].Namespace != clone {
		t.Errorf("the clone's RoleBinding binds %s/%s", rb.Subjects[0].Namespace, rb.Subjects[0].Name)
	}
	// The original is untouched: its claims still hold their volumes.
	for i, claim := range []string{"data-db-0", "main-data"} {
		pvc, err := cluster.Kube.CoreV1().PersistentVolumeClaims(app.Namespace).Get(ctx, claim, metav1.GetOptions{})
		plugintest.Must(t, err)
		if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName != app.Volumes[i] {
			t.Errorf("the original's claim %s after the clone: %s %s", claim, pvc.Status.Phase, pvc.Spec.VolumeName)
		}
	}
}

// podsGoing waits until the namespace controller has deleted the pods
// (its first step) and they are terminating.
func podsGoing(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	eventually(t, time.Minute, "the namespace controller deleting the pods", func() (bool, string) {
		pods, err := cluster.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) == 0 {
			return false, "no pods"
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				return false, "pod " + p.Name + " not being deleted"
			}
		}
		return true, ""
	})
}

// rescueRestore runs --restore and reads its report.
func rescueRestore(t *testing.T, ns string, args ...string) printer.RestoredDocument {
	t.Helper()
	r := plugin.Kubectl(t, cp.Kubeconfig, append([]string{"ns-doctor", "rescue", ns, "--restore", "--yes", "--wait=3m", "-o", "json"}, args...)...)
	if r.Code != 0 {
		t.Fatalf("--restore: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	t.Cleanup(func() {
		_ = cluster.Kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	var doc printer.RestoredDocument
	plugintest.Must(t, json.Unmarshal([]byte(r.Stdout), &doc))
	return doc
}
