package rescue

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/backup/restore"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
	"github.com/ns-doctor/ns-doctor/test/support/scenario"
)

// freeNodePort picks a node port in the default range no other test here
// asks for.
func freeNodePort() int32 { return 30000 + rand.Int32N(2700) }

// installApp installs the Helm-shaped application with its database and
// says what it is, for comparing after a restore.
func installApp(t *testing.T, ns string, opts scenario.AppOptions) (*scenario.App, map[string]string) {
	t.Helper()
	ctx := context.Background()
	app, err := cluster.InstallApp(ctx, ns, opts)
	plugintest.Must(t, err)
	for _, pv := range app.Volumes {
		t.Cleanup(func() {
			_ = cluster.Kube.CoreV1().PersistentVolumes().Delete(context.Background(), pv, metav1.DeleteOptions{})
		})
	}
	state, err := cluster.AppState(ctx, ns)
	plugintest.Must(t, err)
	return app, state
}

// restoreJSON runs restore with -o json and reads its report.
func restoreJSON(t *testing.T, args ...string) (*restore.Report, plugintest.Result) {
	t.Helper()
	r := plugin.Kubectl(t, cp.Kubeconfig, append(append([]string{"ns-doctor", "restore"}, args...), "-o", "json")...)
	var rep restore.Report
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("restore %v: exit %d, %v\n%s\n%s", args, r.Code, err, r.Stdout, r.Stderr)
	}
	return &rep, r
}

// purge deletes a namespace for good (its volumes are Retain), saving
// everything to a backup folder first; restore puts the application back
// into another namespace: every object accepted and equal to what it was,
// the claims bound to the same volumes, the workloads running, the
// database's claim and Secret owned by the restored Database. The folder
// is also what `kubectl apply --server-side -f objects/` accepts.
func TestRestoreOfAPurgeBackupIntoAnotherNamespace(t *testing.T) {
	ctx := context.Background()
	ns := plugintest.UniqueName(t)
	clone := ns + "-copy"
	app, before := installApp(t, ns, scenario.AppOptions{Grace: 1, NodePort: freeNodePort(), Reclaim: corev1.PersistentVolumeReclaimRetain})
	dir := filepath.Join(t.TempDir(), "backup")
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", ns, "--delete-namespace", "--force", "--yes", "--timeout=3m", "--backup-dir", dir)
	if r.Code != 0 {
		t.Fatalf("purge: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}

	t.Run("kubectl apply --server-side accepts the folder", func(t *testing.T) {
		scratch := ns + "-dry"
		plugintest.Must(t, cluster.CreateNamespace(ctx, scratch))
		t.Cleanup(func() { _ = cluster.DeleteNamespace(context.Background(), scratch) })
		r := plugintest.Kubectl(t, "", cp.Kubeconfig, "apply", "--server-side", "--field-manager=restore-test", "-n", scratch,
			"-f", filepath.Join(dir, "objects"), "--dry-run=server")
		if r.Code != 0 {
			t.Fatalf("kubectl apply --server-side --dry-run=server of objects/: exit %d\n%s", r.Code, r.Stderr)
		}
	})

	plan, r := restoreJSON(t, dir, "-n", clone)
	if r.Code != 0 || !plan.Plan || plan.From != ns || plan.Into != clone || plan.Counts()[restore.Planned] == 0 {
		t.Fatalf("plan: exit %d, %+v\n%s", r.Code, plan, r.Stderr)
	}
	if _, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, clone, metav1.GetOptions{}); err == nil {
		t.Fatal("the plan created the namespace")
	}

	rep, r := restoreJSON(t, dir, "-n", clone, "--yes")
	if r.Code != 0 || rep.Counts()[restore.Failed] != 0 || !rep.NamespaceCreated {
		t.Fatalf("restore: exit %d, counts %v\n%s", r.Code, rep.Counts(), r.Stderr)
	}
	t.Cleanup(func() { _ = cluster.DeleteNamespace(context.Background(), clone) })
	for _, o := range rep.Objects {
		if o.Status == restore.LeftOut && !strings.HasPrefix(o.Resource, "events") && o.Resource != "endpointslices.discovery.k8s.io" &&
			o.Resource != "endpoints" && o.Rule != "root-ca" && o.Rule != "default-serviceaccount" && o.Rule != "remade-by-its-controller" {
			t.Errorf("left out %s/%s by %s: %s", o.Resource, o.Name, o.Rule, o.Why)
		}
	}
	checkRestoredApp(t, clone, app, before)
}

// checkRestoredApp: every object equal to what it was, the claims bound
// to the app's volumes, the workloads running, the database's claim and
// Secret owned by the restored Database.
func checkRestoredApp(t *testing.T, ns string, app *scenario.App, before map[string]string) {
	t.Helper()
	ctx := context.Background()
	after, err := cluster.AppState(ctx, ns)
	plugintest.Must(t, err)
	if diff := scenario.DiffAppStates(before, after); len(diff) > 0 {
		t.Errorf("restored app differs:\n%s", strings.Join(diff, "\n"))
	}
	for i, claim := range []string{"data-db-0", "main-data"} {
		eventually(t, time.Minute, "claim "+claim+" bound to "+app.Volumes[i], func() (bool, string) {
			pvc, err := cluster.Kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return pvc.Status.Phase == corev1.ClaimBound && pvc.Spec.VolumeName == app.Volumes[i], string(pvc.Status.Phase) + " " + pvc.Spec.VolumeName
		})
	}
	eventually(t, 2*time.Minute, "the workloads run again", func() (bool, string) {
		d, err := cluster.Kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		s, err := cluster.Kube.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.ReadyReplicas == 2 && s.Status.ReadyReplicas == 1, fmt.Sprintf("web ready %d, db ready %d", d.Status.ReadyReplicas, s.Status.ReadyReplicas)
	})
	db, err := cluster.Dynamic.Resource(scenario.DatabasesGVR).Namespace(ns).Get(ctx, "main", metav1.GetOptions{})
	plugintest.Must(t, err)
	claim, err := cluster.Kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "main-data", metav1.GetOptions{})
	plugintest.Must(t, err)
	secret, err := cluster.Kube.CoreV1().Secrets(ns).Get(ctx, "main-app", metav1.GetOptions{})
	plugintest.Must(t, err)
	for what, refs := range map[string][]metav1.OwnerReference{"claim main-data": claim.OwnerReferences, "secret main-app": secret.OwnerReferences} {
		if len(refs) != 1 || refs[0].UID != db.GetUID() || refs[0].Controller == nil || !*refs[0].Controller {
			t.Errorf("%s owned by %+v, want the restored Database (uid %s)", what, refs, db.GetUID())
		}
	}
}
