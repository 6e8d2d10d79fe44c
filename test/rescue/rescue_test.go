package rescue

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// fixture is a namespace worth rescuing: a workload, its configuration
// and secrets, its identity and permissions, a Service, a claim bound to
// a volume that reclaim Delete would destroy, and a pod on the lost node
// (its kubelet dead), which keeps the namespace controller at its first
// step (pods) until the test lets it go. The workloads' pods run on the
// bed's nodes and go 2 s after their deletion.
func fixture(t *testing.T, ctx context.Context, ns string) (pv string) {
	t.Helper()
	k := cluster.Kube
	must := func(_ any, err error) { t.Helper(); plugintest.Must(t, err) }
	must(k.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{"team": "shop"}, Annotations: map[string]string{"owner": "shop@example.com"}}}, metav1.CreateOptions{}))
	plugintest.Must(t, cluster.WaitSettled(ctx, ns))
	labels := map[string]string{"app": "web"}
	// The workloads use what the namespace holds: what remains after a
	// deletion names what it took.
	uses := corev1.PodSpec{ServiceAccountName: "web", TerminationGracePeriodSeconds: ptr.To[int64](2),
		Containers: []corev1.Container{{Name: "web", Image: "registry.invalid/web",
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "features"}}}}}},
		Volumes: []corev1.Volume{
			{Name: "settings", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}},
			{Name: "db", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db-password"}}},
		}}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: uses},
	}}
	must(k.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}))
	dbLabels := map[string]string{"app": "db"}
	must(k.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Spec: appsv1.StatefulSetSpec{
		ServiceName: "web", Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: dbLabels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: dbLabels},
			Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](2), Containers: []corev1.Container{{Name: "db", Image: "registry.invalid/db", Args: []string{"--data=/var/lib/db"}}}}},
	}}, metav1.CreateOptions{}))
	gizmos, err := cluster.EnsureCRD(ctx, crdGroup, "Gizmo", "gizmos")
	plugintest.Must(t, err)
	must(cluster.Dynamic.Resource(gizmos).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": crdGroup + "/v1", "kind": "Gizmo", "metadata": map[string]any{"name": "main"},
		"spec": map[string]any{"size": int64(3), "tier": "gold"},
	}}, metav1.CreateOptions{}))
	for _, name := range []string{"settings", "features"} {
		must(k.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": name}}, metav1.CreateOptions{}))
	}
	for _, name := range []string{"db-password", "api-token"} {
		must(k.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{"v": "s3cret-" + name}}, metav1.CreateOptions{}))
	}
	must(k.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, metav1.CreateOptions{}))
	must(k.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "web-view"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "web", Namespace: ns}}}, metav1.CreateOptions{}))
	must(k.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{}))
	pv = "pv-" + ns
	must(k.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pv},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + pv}},
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: "data"},
		}}, metav1.CreateOptions{}))
	t.Cleanup(func() { _ = k.CoreV1().PersistentVolumes().Delete(context.Background(), pv, metav1.DeleteOptions{}) })
	must(k.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: pv, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}, metav1.CreateOptions{}))
	// The controller comes back about half the pods' grace period after
	// its first pass: 20 s keeps the test short and the window open long
	// enough for rescue. The pod uses the claim and a ConfigMap, a
	// Secret and a ServiceAccount, as the workloads' pods would.
	stuck := uses.DeepCopy()
	stuck.NodeName, stuck.TerminationGracePeriodSeconds = cluster.LostNode, ptr.To[int64](20)
	stuck.Volumes = append(stuck.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}})
	must(cluster.CreatePod(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stuck", Namespace: ns}, Spec: *stuck}))
	// What a cluster holds a moment later: the ServiceAccount controller's
	// and the root CA publisher's objects, the Deployment's ReplicaSet.
	eventually(t, time.Minute, "the workloads' pods running", func() (bool, string) {
		pods, err := k.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == 2, fmt.Sprintf("%d of the workloads' 2 pods running", running)
	})
	return pv
}

// crdGroup is the custom resources' group: a namespace's own types are
// saved and restored as the built-in ones are.
const crdGroup = "rescue.ns-doctor.test"

var gizmoGVR = schema.GroupVersionResource{Group: crdGroup, Version: "v1", Resource: "gizmos"}

// held are the objects the controllers must not delete, as
// "<resource>/<name>".
func remaining(t *testing.T, ctx context.Context, k kubernetes.Interface, ns string) []string {
	t.Helper()
	var out []string
	add := func(resource string, names ...string) { out = append(out, prefixed(resource, names)...) }
	cms, err := k.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	plugintest.Must(t, err)
	for _, o := range cms.Items {
		add("configmaps", o.Name)
	}
	secrets, err := k.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	plugintest.Must(t, err)
	for _, o := range secrets.Items {
		add("secrets", o.Name)
	}
	deps, err := k.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	plugintest.Must(t, err)
	for _, o := range deps.Items {
		add("deployments", o.Name)
	}
	sts, err := k.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	plugintest.Must(t, err)
	for _, o := range sts.Items {
		add("statefulsets", o.Name)
	}
	gizmos, err := cluster.Dynamic.Resource(gizmoGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	plugintest.Must(t, err)
	for _, o := range gizmos.Items {
		add("gizmos", o.GetName())
	}
	rss, err := k.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	plugintest.Must(t, err)
	for _, o := range rss.Items {
		add("replicasets", o.Name)
	}
	sas, err := k.CoreV1().ServiceAccounts(ns).List(ctx, metav1.ListOptions{})
	plugintest.Must(t, err)
	for _, o := range sas.Items {
		add("serviceaccounts", o.Name)
	}
	rbs, err := k.RbacV1().RoleBindings(ns).List(ctx, metav1.ListOptions{})
	plugintest.Must(t, err)
	for _, o := range rbs.Items {
		add("rolebindings", o.Name)
	}
	svcs, err := k.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	plugintest.Must(t, err)
	for _, o := range svcs.Items {
		add("services", o.Name)
	}
	pvcs, err := k.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	plugintest.Must(t, err)
	for _, o := range pvcs.Items {
		add("persistentvolumeclaims", o.Name)
	}
	slices.Sort(out)
	return out
}

func prefixed(resource string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = resource + "/" + n
	}
	return out
}

// eventually polls cond until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s; last: %s", what, timeout, last)
}

func contentFailure(ctx context.Context, ns string) (bool, string) {
	got, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	for _, c := range got.Status.Conditions {
		if c.Type == corev1.NamespaceDeletionContentFailure {
			return c.Status == corev1.ConditionTrue && strings.Contains(c.Message, "ns-doctor rescue holds namespace "+ns), c.Message
		}
	}
	return false, "no NamespaceDeletionContentFailure condition"
}

// TestRescueHoldsTheNamespaceTheControllerIsDeleting: the real namespace
// controller and garbage collector, running as their own service
// accounts, delete a namespace; rescue inside the window (a pod still
// terminating) holds everything else once that pod is gone, retains the
// volume, and saves every object; release lets the deletion finish.
func TestRescueHoldsTheNamespaceTheControllerIsDeleting(t *testing.T) {
	requireOrdered(t)
	ctx := context.Background()
	ns := plugintest.UniqueName(t)
	k := cluster.Kube
	pv := fixture(t, ctx, ns)
	before := remaining(t, ctx, k, ns)

	// The controller's first step: the pod is being deleted, nothing else.
	deleteAndWaitForPods(t, ctx, ns)

	dir := filepath.Join(t.TempDir(), "backup")
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "rescue", ns, "--yes", "--backup-dir", dir)
	if r.Code != 0 {
		t.Fatalf("rescue: exit %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
	}
	t.Logf("rescue:\n%s", r.Stdout)
	// Pods first: the controller has taken nothing the rest names.
	for _, want := range []string{"HELD namespace " + ns, "VOLUME " + pv + " (claim data): reclaim policy Retain (was Delete)", "pods/stuck", "2 Secret(s) are saved in clear",
		"in force after ", "LOST nothing that what remains names"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("rescue's report lacks %q", want)
		}
	}

	// What a kubelet would do once the pod's containers stop: the window
	// closes, and the controller moves on to everything else.
	plugintest.Must(t, k.CoreV1().Pods(ns).Delete(ctx, "stuck", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
	eventually(t, 90*time.Second, "the controller's deletes refused by the hold (its condition)", func() (bool, string) { return contentFailure(ctx, ns) })
	if after := remaining(t, ctx, k, ns); !slices.Equal(after, before) {
		t.Errorf("held namespace lost objects:\nbefore %v\nafter  %v", before, after)
	}
	got, err := k.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
	plugintest.Must(t, err)
	if got.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain || got.Annotations["ns-doctor.io/reclaim-policy-before-rescue"] != "Delete" {
		t.Errorf("volume: reclaim %s, annotations %v; want Retain, the old policy Delete kept", got.Spec.PersistentVolumeReclaimPolicy, got.Annotations)
	}
	checkBackup(t, dir, ns, pv)
	explainNamesTheHold(t, ns)

	// A second rescue continues: it re-applies the hold, keeps the first
	// copy and the old policy.
	// Without --backup-dir it adds to the folder the hold names.
	r2 := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "rescue", ns, "--yes", "-o", "json")
	var again printer.RescueDocument
	if err := json.Unmarshal([]byte(r2.Stdout), &again); r2.Code != 0 || err != nil {
		t.Fatalf("second rescue: exit %d, %v\n%s\n%s", r2.Code, err, r2.Stdout, r2.Stderr)
	}
	if again.BackupDir != dir || !again.AlreadyHeld || !again.InForce.Proven || len(again.Volumes) != 1 || again.Volumes[0].Before != "Delete" || len(again.Backup.Lost) != 0 {
		t.Errorf("second rescue: dir %q (want %q), held before %v, in force %+v, volumes %+v, lost %+v", again.BackupDir, dir, again.AlreadyHeld, again.InForce, again.Volumes, again.Backup.Lost)
	}

	rel := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "rescue", ns, "--release", "--yes")
	// Released in force when it returns: the controller may delete again.
	if rel.Code != 0 || !strings.Contains(rel.Stdout, "RELEASED namespace "+ns) || !strings.Contains(rel.Stdout, "released in force after") ||
		!strings.Contains(rel.Stdout, "VOLUME "+pv) || !strings.Contains(rel.Stdout, `"persistentVolumeReclaimPolicy":"Delete"`) {
		t.Fatalf("release: exit %d\nstdout: %s\nstderr: %s", rel.Code, rel.Stdout, rel.Stderr)
	}
	eventually(t, 120*time.Second, "the namespace gone after release", func() (bool, string) {
		_, err := k.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), "still there"
	})
	got, err = k.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
	plugintest.Must(t, err)
	if got.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain {
		t.Errorf("after release the volume is %s, want Retain", got.Spec.PersistentVolumeReclaimPolicy)
	}
}

// requireOrdered skips a test that needs the pods-first window on a
// controller that deletes everything at once (TestRescueAfterUnorderedDeletion
// covers that one).
func requireOrdered(t *testing.T) {
	t.Helper()
	if !ordered {
		t.Skip("the controller runs with OrderedNamespaceDeletion off: no pods-first window")
	}
}

// checkBackup: every object is there (but those gone before the save,
// named in gone), in the right place, Secrets in private files.
func checkBackup(t *testing.T, dir, ns, pv string, gone ...string) {
	t.Helper()
	saved, err := backup.Saved(dir)
	plugintest.Must(t, err)
	for _, want := range []string{"configmaps.core.json/settings", "configmaps.core.json/features", "secrets.core.json/db-password", "secrets.core.json/api-token",
		"deployments.apps.json/web", "serviceaccounts.core.json/web", "rolebindings.rbac.authorization.k8s.io.json/web-view",
		"services.core.json/web", "persistentvolumeclaims.core.json/data", "pods.core.json/stuck",
		"statefulsets.apps.json/db", "gizmos." + crdGroup + ".json/main"} {
		if !slices.Contains(saved, want) && !slices.Contains(gone, want) {
			t.Errorf("backup lacks %s; it holds %v", want, saved)
		}
	}
	// The Deployment's ReplicaSet, and the pods the controllers made, are
	// theirs: for the record, not re-applied.
	f, err := backup.Open(dir)
	plugintest.Must(t, err)
	for _, o := range f.Objects {
		if (o.Resource == "replicasets" || (o.Resource == "pods" && o.Name != "stuck")) && !o.Record {
			t.Errorf("%s/%s, its controller's, is among the objects to re-apply", o.Resource, o.Name)
		}
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "objects"): 0o700, filepath.Join(dir, "objects", "secrets.core.json"): 0o600} {
		st, err := os.Stat(path)
		plugintest.Must(t, err)
		if st.Mode().Perm() != want {
			t.Errorf("%s is %v, want %v", path, st.Mode().Perm(), want)
		}
	}
	for _, f := range []string{backup.NamespaceFile, filepath.Join(backup.ClusterDir, "persistentvolumes.core_"+pv+".yaml")} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		plugintest.Must(t, err)
		if f == backup.NamespaceFile && (!strings.Contains(string(data), `"team": "shop"`) || !strings.Contains(string(data), `"owner": "shop@example.com"`)) {
			t.Errorf("the saved namespace lacks its labels or annotations:\n%s", data)
		}
	}
	if f.Manifest.Namespace != ns || f.Manifest.MadeBy != "rescue" {
		t.Errorf("manifest %+v", f.Manifest)
	}
	// kubectl reads the folders as they are.
	for _, sub := range []string{"cluster", "objects"} {
		r := plugin.Kubectl(t, cp.Kubeconfig, "apply", "--dry-run=client", "-n", ns, "-f", filepath.Join(dir, sub))
		if r.Code != 0 {
			t.Errorf("kubectl apply --dry-run=client -f %s: %d %s", sub, r.Code, r.Stderr)
		}
	}
}

// explainNamesTheHold: explain reads the controller's refusals as the
// rescue's hold (never as a policy to delete), with who set it and since
// when, and its step is the release.
func explainNamesTheHold(t *testing.T, ns string) {
	t.Helper()
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", ns, "--grace=0s", "-o", "json")
	var doc printer.DiagnosisDocument
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
		t.Fatalf("explain -o json: exit %d, %v\n%s", r.Code, err, r.Stderr)
	}
	var hold *printer.BlockerDocument
	for i, b := range doc.Blockers {
		switch {
		case b.Kind == diagnose.BlockerRescueHold:
			hold = &doc.Blockers[i]
		case b.Kind == diagnose.BlockerWebhookDenies && b.Subject == diagnose.RescueHoldPolicy(ns):
			t.Errorf("the hold is told as a policy denial: %+v", b)
		}
	}
	if hold == nil {
		t.Fatalf("explain names no RescueHold: %+v", doc.Blockers)
	}
	if len(hold.Actions) == 0 || hold.Actions[0].Kind != diagnose.ActionReleaseRescue || !strings.Contains(hold.NextStep, "kubectl ns-doctor rescue "+ns+" --release") {
		t.Errorf("the hold's step: %+v %q", hold.Actions, hold.NextStep)
	}
	if !slices.ContainsFunc(hold.Evidence, func(e string) bool {
		return strings.HasPrefix(e, "held since ") && !strings.HasSuffix(e, " by someone")
	}) {
		t.Errorf("the hold's evidence does not say since when and by whom: %q", hold.Evidence)
	}
}
