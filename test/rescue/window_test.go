package rescue

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/backup/restore"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// deleteAndWaitForPods deletes the namespace as a user would and waits
// until the controller has begun with the pod.
func deleteAndWaitForPods(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	if r := plugin.Kubectl(t, cp.Kubeconfig, "delete", "namespace", ns, "--wait=false"); r.Code != 0 {
		t.Fatalf("kubectl delete namespace: %d %s", r.Code, r.Stderr)
	}
	eventually(t, 60*time.Second, "the namespace controller deleting the pod", func() (bool, string) {
		pod, err := cluster.Kube.CoreV1().Pods(ns).Get(ctx, "stuck", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return pod.DeletionTimestamp != nil, "no deletionTimestamp"
	})
}

// TestRescueKilledBetweenHoldAndSave: a rescue SIGKILLed as soon as its
// hold is applied, before it saved anything, has already done what cannot
// wait: once the window closes the controller deletes nothing; run again,
// the rescue saves everything.
func TestRescueKilledBetweenHoldAndSave(t *testing.T) {
	requireOrdered(t)
	ctx := context.Background()
	ns := plugintest.UniqueName(t)
	k := cluster.Kube
	pv := fixture(t, ctx, ns)
	before := remaining(t, ctx, k, ns)
	deleteAndWaitForPods(t, ctx, ns)

	dir := filepath.Join(t.TempDir(), "backup")
	killAfter(t, "rescue: hold applied", "ns-doctor", "rescue", ns, "--yes", "--backup-dir", dir)
	if saved, _ := backup.Saved(dir); slices.Contains(saved, "configmaps.core.json/settings") {
		t.Fatalf("the kill came after the save (%v): the test did not kill it in time", saved)
	}

	// The window closes: only the killed run's hold stands in the way.
	plugintest.Must(t, k.CoreV1().Pods(ns).Delete(ctx, "stuck", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
	eventually(t, 90*time.Second, "the controller's deletes refused by the killed run's hold", func() (bool, string) { return contentFailure(ctx, ns) })
	if after := remaining(t, ctx, k, ns); !slices.Equal(after, before) {
		t.Errorf("held namespace lost objects after the kill:\nbefore %v\nafter  %v", before, after)
	}

	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "rescue", ns, "--yes", "--backup-dir", dir, "-o", "json")
	if r.Code != 0 {
		t.Fatalf("rescue again: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	var doc printer.RescueDocument
	plugintest.Must(t, json.Unmarshal([]byte(r.Stdout), &doc))
	if !doc.AlreadyHeld || !doc.InForce.Proven || doc.InForce.AfterMs <= 0 || len(doc.Volumes) != 1 || doc.Volumes[0].Before != "Delete" {
		t.Errorf("the second run: held before %v, in force %+v, volumes %+v", doc.AlreadyHeld, doc.InForce, doc.Volumes)
	}
	checkBackup(t, dir, ns, pv, "pods.core.json/stuck") // gone with the window

	rel := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "rescue", ns, "--release", "--yes")
	if rel.Code != 0 {
		t.Fatalf("release: exit %d\n%s", rel.Code, rel.Stderr)
	}
	eventually(t, 120*time.Second, "the namespace gone after release", func() (bool, string) {
		_, err := k.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), "still there"
	})
}

// killAfter runs the plugin and SIGKILLs it as soon as it writes a line
// starting with marker on stderr.
func killAfter(t *testing.T, marker string, args ...string) {
	t.Helper()
	cmd := exec.Command("kubectl", args...)
	cmd.Env = append(os.Environ(), "PATH="+plugin.Dir+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+cp.Kubeconfig)
	stderr, err := cmd.StderrPipe()
	plugintest.Must(t, err)
	plugintest.Must(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	sc := bufio.NewScanner(stderr)
	var seen []string
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if strings.HasPrefix(sc.Text(), marker) {
			plugintest.Must(t, cmd.Process.Signal(syscall.SIGKILL))
			_, _ = io.Copy(io.Discard, stderr)
			_ = cmd.Wait()
			return
		}
	}
	_ = cmd.Wait()
	t.Fatalf("%v ended (%v) without writing %q:\n%s", args, cmd.ProcessState, marker, strings.Join(seen, "\n"))
}

// firstPassDone waits until the controller has made one pass over the
// namespace and said what remains (its conditions).
func firstPassDone(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	eventually(t, 60*time.Second, "the controller's first pass", func() (bool, string) {
		got, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.NamespaceContentRemaining && c.Status == corev1.ConditionTrue {
				return true, c.Message
			}
		}
		return false, "no NamespaceContentRemaining"
	})
}

// TestRescueAfterUnorderedDeletion: a controller without ordered deletion
// (1.30-1.32, or the gate off) deletes everything in its first pass; what
// is still there (the pod, the claim its protection keeps) is saved and
// restored, the volume is kept, and the report names what was lost as far
// as what remains names it.
func TestRescueAfterUnorderedDeletion(t *testing.T) {
	if ordered {
		t.Skip("the controller deletes pods first here: TestRescueHoldsTheNamespaceTheControllerIsDeleting covers it")
	}
	ctx := context.Background()
	ns := plugintest.UniqueName(t)
	k := cluster.Kube
	pv := fixture(t, ctx, ns)
	deleteAndWaitForPods(t, ctx, ns)
	firstPassDone(t, ctx, ns)

	dir := filepath.Join(t.TempDir(), "backup")
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "rescue", ns, "--yes", "--backup-dir", dir, "-o", "json")
	if r.Code != 0 {
		t.Fatalf("rescue: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	var doc printer.RescueDocument
	plugintest.Must(t, json.Unmarshal([]byte(r.Stdout), &doc))
	lost := map[string][]string{}
	for _, l := range doc.Backup.Lost {
		lost[l.Kind+"/"+l.Name] = l.By
	}
	for _, want := range []string{"ConfigMap/settings", "ConfigMap/features", "Secret/db-password", "ServiceAccount/web"} {
		if !slices.Contains(lost[want], "Pod/stuck") {
			t.Errorf("the report does not name %s as lost (named by Pod/stuck): %+v", want, doc.Backup.Lost)
		}
	}
	if _, ok := lost["PersistentVolumeClaim/data"]; ok {
		t.Errorf("the claim, still there, is called lost: %+v", doc.Backup.Lost)
	}
	if len(doc.Volumes) != 1 || doc.Volumes[0].Name != pv || doc.Volumes[0].Now != "Retain" {
		t.Errorf("volumes: %+v", doc.Volumes)
	}
	saved, err := backup.Saved(dir)
	plugintest.Must(t, err)
	for _, want := range []string{"pods.core.json/stuck", "persistentvolumeclaims.core.json/data"} {
		if !slices.Contains(saved, want) {
			t.Errorf("backup lacks %s: %v", want, saved)
		}
	}

	plugintest.Must(t, k.CoreV1().Pods(ns).Delete(ctx, "stuck", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
	// The pod's ServiceAccount went before the hold: the API server's
	// ServiceAccount admission refuses the pod, and restore says so with
	// its answer (exit 1); the rest is restored.
	r = plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "rescue", ns, "--restore", "--yes", "--wait=3m", "-o", "json")
	t.Cleanup(func() { _ = k.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	var res printer.RestoredDocument
	if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil || r.Code != 1 || res.Restore == nil {
		t.Fatalf("--restore: exit %d, %v\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
	}
	restored := map[string]restore.Object{}
	for _, o := range res.Restore.Objects {
		restored[o.Resource+"/"+o.Name] = o
	}
	if restored["persistentvolumeclaims/data"].Status != restore.Restored || restored["pods/stuck"].Status != restore.Failed ||
		!strings.Contains(restored["pods/stuck"].Why, `serviceaccount "web" not found`) {
		t.Errorf("restore: %+v", res.Restore.Objects)
	}
	claimBoundTo(t, ctx, ns, pv)
	vol, err := k.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
	plugintest.Must(t, err)
	if vol.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		t.Errorf("volume after restore: %s, want Delete", vol.Spec.PersistentVolumeReclaimPolicy)
	}
}

// claimBoundTo waits until the restored claim is Bound to its volume
// again, by the real PV binder.
func claimBoundTo(t *testing.T, ctx context.Context, ns, pv string) {
	t.Helper()
	eventually(t, 60*time.Second, "the restored claim bound to its volume again", func() (bool, string) {
		pvc, err := cluster.Kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return pvc.Status.Phase == corev1.ClaimBound && pvc.Spec.VolumeName == pv, string(pvc.Status.Phase) + " " + pvc.Spec.VolumeName
	})
}

// TestRestoreKilledHalfWayIsFinishedByTheNext: a --restore SIGKILLed once
// the namespace is created again, before the objects are applied, loses
// nothing: the next --restore (the hold gone, so given the folder)
// applies them all and gives the volume its policy back.
func TestRestoreKilledHalfWayIsFinishedByTheNext(t *testing.T) {
	requireOrdered(t)
	ctx := context.Background()
	ns := plugintest.UniqueName(t)
	k := cluster.Kube
	pv := fixture(t, ctx, ns)
	claimBoundTo(t, ctx, ns, pv)
	// The ReplicaSet is its Deployment's to make again: restore leaves it
	// out.
	applied := func() []string {
		return slices.DeleteFunc(remaining(t, ctx, k, ns), func(s string) bool { return strings.HasPrefix(s, "replicasets/") })
	}
	before := applied()
	deleteAndWaitForPods(t, ctx, ns)
	dir := filepath.Join(t.TempDir(), "backup")
	if r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "rescue", ns, "--yes", "--backup-dir", dir); r.Code != 0 {
		t.Fatalf("rescue: exit %d\n%s", r.Code, r.Stderr)
	}
	plugintest.Must(t, k.CoreV1().Pods(ns).Delete(ctx, "stuck", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))

	killAfter(t, "restore: namespace "+ns+" created again", "ns-doctor", "rescue", ns, "--restore", "--yes", "--wait=3m")
	t.Cleanup(func() { _ = k.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	if after := applied(); slices.Equal(after, before) {
		t.Fatalf("the kill came after every object was applied (%v): the test did not kill it in time", after)
	}

	doc := rescueRestore(t, ns, "--backup-dir", dir)
	if doc.WasHeld || doc.Restore.Counts()[restore.Failed] != 0 || doc.Restore.NamespaceCreated {
		t.Errorf("the second restore: held %v (the first removed the hold), created %v (the first did), objects %+v",
			doc.WasHeld, doc.Restore.NamespaceCreated, doc.Restore.Objects)
	}
	if after := applied(); !slices.Equal(after, before) {
		t.Errorf("after the second restore:\nbefore %v\nafter  %v", before, after)
	}
	claimBoundTo(t, ctx, ns, pv)
	vol, err := k.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
	plugintest.Must(t, err)
	if vol.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		t.Errorf("volume after the second restore: %s, want Delete", vol.Spec.PersistentVolumeReclaimPolicy)
	}
}
