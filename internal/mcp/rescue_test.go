package mcp

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ns-doctor/ns-doctor/internal/kube"
	"github.com/ns-doctor/ns-doctor/internal/kube/kubetest"
	"github.com/ns-doctor/ns-doctor/internal/rescue"
)

// deleting is an in-memory cluster serving the policy API, with namespace
// shop being deleted, a Secret in it, and a volume bound to its claim
// whose reclaim policy is Delete.
func deleting(t *testing.T, mode PurgeMode) (*kubetest.Cluster, *kube.Clients, Config) {
	t.Helper()
	c := kubetest.New()
	c.AddNamespace("shop", time.Minute)
	c.AddNamespace("active", 0)
	c.Add(kubetest.Secrets, kubetest.Object("Secret", "shop", "db-password"))
	for r, kind := range map[string]string{"validatingadmissionpolicies": "ValidatingAdmissionPolicy", "validatingadmissionpolicybindings": "ValidatingAdmissionPolicyBinding"} {
		c.Serve(admissionv1.SchemeGroupVersion.WithResource(r), kind, metav1.Verbs{"create", "delete", "get", "list", "patch"})
	}
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-shop"}, Spec: v1.PersistentVolumeSpec{
		PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete,
		ClaimRef:                      &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "shop", Name: "data"},
	}}
	clients := c.Clients(pv)
	cfg := testConfig(c, mode)
	cfg.Clusters[0].Clients = func() (*kube.Clients, error) { return clients, nil }
	cfg.BackupDir = t.TempDir()
	return c, clients, cfg
}

// held tells whether the hold's policy and binding exist, and the volume's
// reclaim policy.
func held(t *testing.T, clients *kube.Clients) (policy, binding bool, reclaim v1.PersistentVolumeReclaimPolicy) {
	t.Helper()
	ctx := context.Background()
	name := rescue.HoldName("shop")
	_, err := clients.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, name, metav1.GetOptions{})
	policy = err == nil
	_, err = clients.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(ctx, name, metav1.GetOptions{})
	binding = err == nil
	pv, err := clients.Kube.CoreV1().PersistentVolumes().Get(ctx, "pv-shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return policy, binding, pv.Spec.PersistentVolumeReclaimPolicy
}

func rescuePlanOf(t *testing.T, cs *sdk.ClientSession) RescuePlanResult {
	t.Helper()
	var p RescuePlanResult
	res := call(t, cs, ToolRescuePlan, map[string]any{"namespace": "shop"}, &p)
	if res.IsError || p.PlanID == "" {
		t.Fatalf("rescue_plan: %s", text(res))
	}
	return p
}

// rescue_plan says what rescue would do and changes nothing.
func TestRescuePlanChangesNothing(t *testing.T) {
	c, clients, cfg := deleting(t, PurgeOff)
	cs := session(t, cfg, nil, "")
	before := len(c.RequestsMatching(""))
	p := rescuePlanOf(t, cs)
	if p.Plan.Hold != "ns-doctor-rescue-shop" || p.Plan.AlreadyHeld || len(p.Plan.Volumes) != 1 || p.Plan.Volumes[0].Before != "Delete" ||
		!strings.HasPrefix(p.Plan.BackupDir, cfg.BackupDir) || p.Target.UID != "uid-shop" || !strings.HasPrefix(p.Fingerprint, "sha256:") {
		t.Fatalf("plan: %+v", p)
	}
	if p.Command != "kubectl ns-doctor rescue shop --context test" || !strings.Contains(p.Rescue, "does not act") {
		t.Errorf("command %q, rescue %q", p.Command, p.Rescue)
	}
	res := call(t, cs, ToolRescuePlan, map[string]any{"namespace": "shop"}, nil)
	if s := text(res); !strings.Contains(s, "nothing was changed") || !strings.Contains(s, "set 1 PersistentVolume(s)") || !strings.Contains(s, "Secrets included") {
		t.Errorf("summary: %s", s)
	}
	for _, r := range c.RequestsMatching("")[before:] {
		if !strings.HasPrefix(r, "get") && !strings.HasPrefix(r, "ask ") && !strings.Contains(r, "list ") {
			t.Errorf("the plan sent %s", r)
		}
	}
	if policy, binding, reclaim := held(t, clients); policy || binding || reclaim != v1.PersistentVolumeReclaimDelete {
		t.Errorf("the plan changed the cluster: policy %v, binding %v, %s", policy, binding, reclaim)
	}
	if _, err := os.Stat(p.Plan.BackupDir); !os.IsNotExist(err) {
		t.Errorf("the plan made the backup folder: %v", err)
	}
	if _, ok := tools(t, cs)[ToolRescue]; ok {
		t.Error("rescue_namespace is served by a read-only server")
	}
}

// Accepted, with the name typed: held, retained, saved, with the words
// the person read.
func TestRescueWithConsent(t *testing.T) {
	for _, version := range []string{"", "2025-11-25"} {
		t.Run("protocol"+version, func(t *testing.T) {
			_, clients, cfg := deleting(t, PurgeConfirmed)
			var asked string
			cs := session(t, cfg, func(req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				asked = req.Params.Message
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"namespace": "shop"}}, nil
			}, version)
			p := rescuePlanOf(t, cs)
			var done RescueResult
			res := call(t, cs, ToolRescue, map[string]any{"plan_id": p.PlanID}, &done)
			if res.IsError {
				t.Fatalf("rescue_namespace: %s", text(res))
			}
			for _, want := range []string{`This will hold the deletion of namespace "shop"`, `context "test", cluster "test-cluster"`,
				"create ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding ns-doctor-rescue-shop",
				"set PersistentVolume pv-shop (claim data) to reclaim policy Retain (was Delete", "Secrets included (in clear", p.Plan.BackupDir, "Type the namespace name to go on."} {
				if !strings.Contains(asked, want) {
					t.Errorf("the person was not asked %q:\n%s", want, asked)
				}
			}
			if policy, binding, reclaim := held(t, clients); !policy || !binding || reclaim != v1.PersistentVolumeReclaimRetain {
				t.Errorf("after the rescue: policy %v, binding %v, %s", policy, binding, reclaim)
			}
			if done.Rescue.Kind != "Rescue" || done.Rescue.Backup.Dir != p.Plan.BackupDir || done.Rescue.Backup.Secrets != 1 ||
				len(done.Rescue.Volumes) != 1 || done.Rescue.Volumes[0].Now != "Retain" || !strings.Contains(done.Consent, "the person confirmed") ||
				!strings.Contains(done.Rescue.Release, "--release") {
				t.Fatalf("report: %+v", done)
			}
			if _, err := os.Stat(done.Rescue.Backup.Dir); err != nil {
				t.Errorf("backup folder: %v", err)
			}
			if s := text(res); !strings.Contains(s, "Namespace shop is held") || !strings.Contains(s, "1 Secret(s) are saved in clear") {
				t.Errorf("summary: %s", s)
			}
			if res := call(t, cs, ToolRescue, map[string]any{"plan_id": p.PlanID}, nil); !res.IsError || !strings.Contains(text(res), "unknown plan_id") || !strings.Contains(text(res), "rescue_plan") {
				t.Errorf("a plan used twice: %s", text(res))
			}
		})
	}
}

// Declined, cancelled, a wrong name typed, a client that cannot ask:
// nothing changes.
func TestRescueRefusedChangesNothing(t *testing.T) {
	for _, answer := range []*sdk.ElicitResult{{Action: "decline"}, {Action: "cancel"}, {Action: "accept", Content: map[string]any{"namespace": "shop2"}}, nil} {
		c, clients, cfg := deleting(t, PurgeConfirmed)
		var handler func(*sdk.ElicitRequest) (*sdk.ElicitResult, error)
		if answer != nil {
			handler = func(*sdk.ElicitRequest) (*sdk.ElicitResult, error) { return answer, nil }
		}
		cs := session(t, cfg, handler, "")
		p := rescuePlanOf(t, cs)
		before := len(c.RequestsMatching(""))
		res := call(t, cs, ToolRescue, map[string]any{"plan_id": p.PlanID}, nil)
		if !res.IsError || !strings.Contains(text(res), "nothing was changed") {
			t.Fatalf("%+v: %s", answer, text(res))
		}
		if answer == nil && !strings.Contains(text(res), "cannot ask the person") {
			t.Errorf("no elicitation: %s", text(res))
		}
		for _, r := range c.RequestsMatching("")[before:] {
			if !strings.HasPrefix(r, "get") && !strings.Contains(r, "list ") {
				t.Errorf("%+v: sent %s", answer, r)
			}
		}
		if policy, binding, reclaim := held(t, clients); policy || binding || reclaim != v1.PersistentVolumeReclaimDelete {
			t.Errorf("%+v changed the cluster: policy %v, binding %v, %s", answer, policy, binding, reclaim)
		}
	}
}

// A volume whose policy changed after the plan: the plan moved, refused.
// A plan_id of the other kind is refused by each tool.
func TestRescuePlanThatMovedIsRefused(t *testing.T) {
	_, clients, cfg := deleting(t, PurgeConfirmed)
	cs := session(t, cfg, func(*sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"namespace": "shop"}}, nil
	}, "")
	p := rescuePlanOf(t, cs)
	if _, err := clients.Kube.CoreV1().PersistentVolumes().Patch(context.Background(), "pv-shop", types.MergePatchType,
		[]byte(`{"spec":{"persistentVolumeReclaimPolicy":"Recycle"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	res := call(t, cs, ToolRescue, map[string]any{"plan_id": p.PlanID}, nil)
	if s := text(res); !res.IsError || !strings.Contains(s, "has moved since") || !strings.Contains(s, "nothing was changed") {
		t.Fatalf("a moved plan: %s", s)
	}
	if policy, _, _ := held(t, clients); policy {
		t.Error("a moved plan was acted on")
	}
	p = rescuePlanOf(t, cs)
	if res := call(t, cs, ToolPurge, map[string]any{"plan_id": p.PlanID}, nil); !res.IsError || !strings.Contains(text(res), "rescue_plan's") {
		t.Errorf("purge_namespace on a rescue plan: %s", text(res))
	}
	var pp PlanResult
	if res := call(t, cs, ToolPlan, map[string]any{"namespace": "shop"}, &pp); res.IsError {
		t.Fatalf("plan_purge: %s", text(res))
	}
	if res := call(t, cs, ToolRescue, map[string]any{"plan_id": pp.PlanID}, nil); !res.IsError || !strings.Contains(text(res), "plan_purge's") {
		t.Errorf("rescue_namespace on a purge plan: %s", text(res))
	}
}

// Bad input is a one-line error, found before anything is sent.
func TestRescueBadInputIsOneLine(t *testing.T) {
	c, _, cfg := deleting(t, PurgeConfirmed)
	cs := session(t, cfg, nil, "")
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"namespace": "active"}, "kubectl ns-doctor protect active"},
		{map[string]any{"namespace": "gone"}, `namespace "gone" not found`},
		{map[string]any{"namespace": "Shop_X"}, "not a valid namespace name"},
		{map[string]any{"namespace": "shop", "detail": "all"}, "detail"},
	} {
		res := call(t, cs, ToolRescuePlan, tc.args, nil)
		if got := text(res); !res.IsError || !strings.Contains(got, tc.want) || strings.Contains(got, "\n") {
			t.Errorf("%v: %q, want %q on one line", tc.args, got, tc.want)
		}
	}
	c.Allowed = func(a kubetest.ResourceAttributes) bool { return a.Resource != "persistentvolumes" }
	res := call(t, cs, ToolRescuePlan, map[string]any{"namespace": "shop"}, nil)
	if got := text(res); !res.IsError || !strings.Contains(got, "missing 2 permission(s): list persistentvolumes, patch persistentvolumes; nothing was changed") {
		t.Errorf("missing permissions: %q", got)
	}
	bare := kubetest.New()
	bare.AddNamespace("shop", time.Minute)
	cs = session(t, testConfig(bare, PurgeConfirmed), nil, "")
	if res := call(t, cs, ToolRescuePlan, map[string]any{"namespace": "shop"}, nil); !res.IsError || !strings.Contains(text(res), "no admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy") {
		t.Errorf("no policy API: %s", text(res))
	}
}

// Without confirmation, as the operator chose: acts at once, says nobody
// was asked; a second rescue of a held namespace re-applies the hold.
func TestRescueWithoutConfirmation(t *testing.T) {
	_, clients, cfg := deleting(t, PurgeWithoutConfirmation)
	cs := session(t, cfg, nil, "")
	for i := range 2 {
		p := rescuePlanOf(t, cs)
		if p.Plan.AlreadyHeld != (i == 1) {
			t.Errorf("run %d: alreadyHeld %v", i, p.Plan.AlreadyHeld)
		}
		var done RescueResult
		res := call(t, cs, ToolRescue, map[string]any{"plan_id": p.PlanID}, &done)
		if res.IsError || !strings.Contains(done.Consent, "nobody was asked") {
			t.Fatalf("run %d: %s %+v", i, text(res), done.Consent)
		}
		if len(done.Rescue.Volumes) != 1 || done.Rescue.Volumes[0].Before != "Delete" {
			t.Errorf("run %d: the policy before the rescue: %+v", i, done.Rescue.Volumes)
		}
	}
	if policy, binding, reclaim := held(t, clients); !policy || !binding || reclaim != v1.PersistentVolumeReclaimRetain {
		t.Errorf("policy %v, binding %v, %s", policy, binding, reclaim)
	}
}
