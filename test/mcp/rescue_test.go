package mcp_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/mcp"
	"github.com/ns-doctor/ns-doctor/internal/rescue"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// beingDeleted is a namespace the namespace controller is deleting and
// cannot finish: a pod on a node that is gone, with a long grace period,
// keeps it at its first step (pods), so everything else is still there (a
// ConfigMap, a Secret, a claim) while the test runs. A volume whose reclaim
// policy is Delete is bound to the claim. The hold, the pod and the volume
// are removed when the test ends.
func beingDeleted(t *testing.T) (name, pv string) {
	t.Helper()
	ctx := context.Background()
	k := cluster.Kube
	name = plugintest.UniqueName(t)
	pv = "pv-" + name
	must := func(_ any, err error) { t.Helper(); plugintest.Must(t, err) }
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "settings", map[string]string{"k": "v"}))
	must(k.CoreV1().Secrets(name).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-password"}, StringData: map[string]string{"v": "s3cret"}}, metav1.CreateOptions{}))
	createVolume(t, name, pv, "data")
	must(k.CoreV1().PersistentVolumeClaims(name).Create(ctx, &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: pv, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}}}, metav1.CreateOptions{}))
	plugintest.Must(t, cluster.CreateBoundPod(ctx, name, "stuck", 3600))
	t.Cleanup(func() {
		ctx := context.Background()
		_ = k.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, rescue.HoldName(name), metav1.DeleteOptions{})
		_ = k.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(ctx, rescue.HoldName(name), metav1.DeleteOptions{})
		_ = k.CoreV1().Pods(name).Delete(ctx, "stuck", metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))})
	})
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	// The controller's first step: the pod is being deleted, nothing else;
	// then the namespace is left alone (its conditions written).
	var last string
	var since time.Time
	plugintest.Poll(t, 2*time.Minute, "the namespace controller deleting the pod, then leaving the namespace alone", func() (bool, error) {
		pod, err := k.CoreV1().Pods(name).Get(ctx, "stuck", metav1.GetOptions{})
		if err != nil || pod.DeletionTimestamp == nil {
			return false, err
		}
		ns, err := k.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if ns.ResourceVersion != last {
			last, since = ns.ResourceVersion, time.Now()
		}
		return time.Since(since) > 2*time.Second, nil
	})
	return name, pv
}

// createVolume creates a PersistentVolume of reclaim policy Delete bound
// to claim in namespace, removed when the test ends.
func createVolume(t *testing.T, namespace, pv, claim string) {
	t.Helper()
	k := cluster.Kube
	_, err := k.CoreV1().PersistentVolumes().Create(context.Background(), &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pv},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete,
			PersistentVolumeSource:        v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/tmp/" + pv}},
			ClaimRef:                      &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: namespace, Name: claim},
		}}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	t.Cleanup(func() { _ = k.CoreV1().PersistentVolumes().Delete(context.Background(), pv, metav1.DeleteOptions{}) })
}

// rescueState is what a rescue changes, as one line: the resourceVersions
// of the namespace, of its ConfigMaps, Secrets and claims and of the
// volume (with its reclaim policy), and whether the hold's policy and
// binding exist.
func rescueState(t *testing.T, name, pv string) string {
	t.Helper()
	ctx := context.Background()
	k := cluster.Kube
	out := []string{resourceVersions(t, name)}
	secrets, err := k.CoreV1().Secrets(name).List(ctx, metav1.ListOptions{})
	plugintest.Must(t, err)
	for _, s := range secrets.Items {
		out = append(out, "secret "+s.Name+"="+s.ResourceVersion)
	}
	claims, err := k.CoreV1().PersistentVolumeClaims(name).List(ctx, metav1.ListOptions{})
	plugintest.Must(t, err)
	for _, c := range claims.Items {
		out = append(out, "claim "+c.Name+"="+c.ResourceVersion)
	}
	vol, err := k.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
	plugintest.Must(t, err)
	out = append(out, fmt.Sprintf("pv %s=%s %s", vol.Name, vol.ResourceVersion, vol.Spec.PersistentVolumeReclaimPolicy))
	_, err = k.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, rescue.HoldName(name), metav1.GetOptions{})
	out = append(out, fmt.Sprintf("policy=%v", !apierrors.IsNotFound(err)))
	_, err = k.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(ctx, rescue.HoldName(name), metav1.GetOptions{})
	out = append(out, fmt.Sprintf("binding=%v", !apierrors.IsNotFound(err)))
	return strings.Join(out, " ")
}

// planRescue calls rescue_plan on name.
func planRescue(t *testing.T, cs *sdk.ClientSession, name string) mcp.RescuePlanResult {
	t.Helper()
	var p mcp.RescuePlanResult
	res := call(t, cs, mcp.ToolRescuePlan, map[string]any{"namespace": name}, &p)
	if res.IsError || p.PlanID == "" {
		t.Fatalf("rescue_plan: %s", summary(res))
	}
	return p
}

// rescue_plan says what rescue would do, and changes nothing: no
// resourceVersion moves, no policy is created; a read-only server does not
// serve rescue_namespace.
func TestRescuePlanChangesNothing(t *testing.T) {
	name, pv := beingDeleted(t)
	cs, _ := serve(t, cp.Kubeconfig, nil, "--backup-dir", t.TempDir())
	before := rescueState(t, name, pv)
	p := planRescue(t, cs, name)
	if after := rescueState(t, name, pv); after != before {
		t.Fatalf("rescue_plan changed the cluster:\n%s\nthen\n%s", before, after)
	}
	if p.Plan.Hold != rescue.HoldName(name) || p.Plan.AlreadyHeld || len(p.Plan.Volumes) != 1 || p.Plan.Volumes[0].Name != pv ||
		p.Plan.Volumes[0].Claim != "data" || p.Plan.Volumes[0].Before != "Delete" || p.Target.UID == "" {
		t.Fatalf("plan: %+v", p)
	}
	if !strings.HasPrefix(p.Command, "kubectl ns-doctor rescue "+name) || !strings.Contains(p.Rescue, "does not act") {
		t.Errorf("command %q, rescue %q", p.Command, p.Rescue)
	}
	if _, err := os.Stat(p.Plan.BackupDir); !os.IsNotExist(err) {
		t.Errorf("rescue_plan made the backup folder: %v", err)
	}
	for tool, err := range cs.Tools(context.Background(), nil) {
		plugintest.Must(t, err)
		if tool.Name == mcp.ToolRescue {
			t.Error("a read-only server serves rescue_namespace")
		}
		if tool.Name == mcp.ToolRescuePlan && !tool.Annotations.ReadOnlyHint {
			t.Errorf("rescue_plan's hints: %+v", tool.Annotations)
		}
	}
	// An Active namespace is no rescue's: the error points to protect.
	res := call(t, cs, mcp.ToolRescuePlan, map[string]any{"namespace": "default"}, nil)
	if s := summary(res); !res.IsError || !strings.Contains(s, "is Active") || !strings.Contains(s, "protect default") {
		t.Errorf("rescue_plan of an Active namespace: %s", s)
	}
}

// The person declines: nothing changes. Then, planned again, the person
// accepts (a client of 2025-06-18, asked by an elicitation/create
// request): the hold's policy and binding exist, the volume is Retain
// (its old policy kept), and the backup folder holds the objects.
func TestRescueDeclinedThenAccepted(t *testing.T) {
	name, pv := beingDeleted(t)
	backups := t.TempDir()
	answer := &sdk.ElicitResult{Action: "decline"}
	var asked []string
	cs, _ := serveAs(t, "2025-06-18", cp.Kubeconfig, func(req *sdk.ElicitRequest) *sdk.ElicitResult {
		asked = append(asked, req.Params.Message)
		return answer
	}, "--allow-purge", "--backup-dir", backups)

	p := planRescue(t, cs, name)
	before := rescueState(t, name, pv)
	res := call(t, cs, mcp.ToolRescue, map[string]any{"plan_id": p.PlanID}, nil)
	if s := summary(res); !res.IsError || !strings.Contains(s, "declined") || !strings.Contains(s, "nothing was changed") {
		t.Fatalf("declined: %s", s)
	}
	if after := rescueState(t, name, pv); after != before {
		t.Fatalf("a declined rescue changed the cluster:\n%s\nthen\n%s", before, after)
	}
	if len(asked) != 1 || !strings.Contains(asked[0], fmt.Sprintf("This will hold the deletion of namespace %q", name)) ||
		!strings.Contains(asked[0], fmt.Sprintf("set PersistentVolume %s (claim data) to reclaim policy Retain (was Delete", pv)) ||
		!strings.Contains(asked[0], "Type the namespace name to go on") {
		t.Errorf("the person was asked: %q", asked)
	}

	answer = &sdk.ElicitResult{Action: "accept", Content: map[string]any{"namespace": name}}
	p = planRescue(t, cs, name)
	var done mcp.RescueResult
	res = call(t, cs, mcp.ToolRescue, map[string]any{"plan_id": p.PlanID}, &done)
	if res.IsError {
		t.Fatalf("rescue_namespace: %s", summary(res))
	}
	ctx := context.Background()
	k := cluster.Kube
	policy, err := k.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, rescue.HoldName(name), metav1.GetOptions{})
	plugintest.Must(t, err)
	_, err = k.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(ctx, rescue.HoldName(name), metav1.GetOptions{})
	plugintest.Must(t, err)
	vol, err := k.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
	plugintest.Must(t, err)
	if vol.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain || vol.Annotations[rescue.ReclaimAnnotation] != "Delete" {
		t.Errorf("volume: %s, annotations %v", vol.Spec.PersistentVolumeReclaimPolicy, vol.Annotations)
	}
	dir := done.Rescue.Backup.Dir
	if !strings.HasPrefix(dir, backups) || dir != p.Plan.BackupDir || policy.Annotations[rescue.BackupAnnotation] != dir {
		t.Errorf("backup folder %q (planned %q, under %q; the hold names %q)", dir, p.Plan.BackupDir, backups, policy.Annotations[rescue.BackupAnnotation])
	}
	saved, err := backup.Saved(dir)
	plugintest.Must(t, err)
	for _, want := range []string{"configmaps.core.json/settings", "secrets.core.json/db-password", "persistentvolumeclaims.core.json/data"} {
		if !slices.Contains(saved, want) {
			t.Errorf("the backup lacks %s: %v", want, saved)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "cluster", "persistentvolumes.core_"+pv+".yaml")); err != nil {
		t.Errorf("the volume is not saved: %v", err)
	}
	if done.Rescue.Backup.Secrets < 1 || len(done.Rescue.Volumes) != 1 || done.Rescue.Volumes[0].Now != "Retain" ||
		!strings.Contains(done.Consent, "the person confirmed") || !strings.Contains(done.Rescue.Release, "--release") || !strings.Contains(done.Rescue.Restore, "--restore") {
		t.Errorf("report: %+v", done)
	}
	if s := summary(res); !strings.Contains(s, "Namespace "+name+" is held") || !strings.Contains(s, "saved in clear") {
		t.Errorf("summary: %s", s)
	}
	if ns, err := k.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); err != nil || ns.DeletionTimestamp == nil {
		t.Errorf("the namespace after the rescue: %v", err)
	}
}

// A plan that moved between plan and act (a second volume bound to a
// claim of the namespace) is refused: nothing changed, plan again. The
// plan again goes, with both volumes.
func TestRescuePlanThatMovedIsRefused(t *testing.T) {
	name, pv := beingDeleted(t)
	cs, _ := serve(t, cp.Kubeconfig, func(*sdk.ElicitRequest) *sdk.ElicitResult {
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"namespace": name}}
	}, "--allow-purge", "--backup-dir", t.TempDir())
	p := planRescue(t, cs, name)
	createVolume(t, name, pv+"-more", "more")
	before := rescueState(t, name, pv)
	res := call(t, cs, mcp.ToolRescue, map[string]any{"plan_id": p.PlanID}, nil)
	if s := summary(res); !res.IsError || !strings.Contains(s, "has moved since") || !strings.Contains(s, "2 volume(s)") || !strings.Contains(s, "nothing was changed") {
		t.Fatalf("a plan that moved: %s", s)
	}
	if after := rescueState(t, name, pv); after != before {
		t.Fatalf("a plan that moved changed the cluster:\n%s\nthen\n%s", before, after)
	}
	if res := call(t, cs, mcp.ToolRescue, map[string]any{"plan_id": p.PlanID}, nil); !res.IsError || !strings.Contains(summary(res), "unknown plan_id") {
		t.Errorf("a plan that moved is spent: %s", summary(res))
	}
	p = planRescue(t, cs, name)
	var done mcp.RescueResult
	if res := call(t, cs, mcp.ToolRescue, map[string]any{"plan_id": p.PlanID}, &done); res.IsError || len(done.Rescue.Volumes) != 2 {
		t.Fatalf("planned again: %s %+v", summary(res), done.Rescue.Volumes)
	}
}
