package printer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ns-doctor/ns-doctor/internal/backup/restore"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/purge"
	"github.com/ns-doctor/ns-doctor/internal/rescue"
)

func rescueReport() *rescue.Report {
	return &rescue.Report{
		Plan: rescue.Plan{Namespace: "shop", Hold: "ns-doctor-rescue-shop", BackupDir: "/b",
			Volumes: []rescue.Volume{{Name: "pv-1", Claim: "data", Before: "Delete", Now: "Retain"}}},
		Backup: rescue.Backup{Dir: "/b", Secrets: 2, Types: []rescue.Saved{
			{Resource: "pods", Count: 1, Going: []string{"web-\x1b[31mred"}},
			{Resource: "replicasets.apps", Record: 1},
			{Resource: "secrets", Count: 2},
		}, Failed: []string{"metrics.k8s.io/v1beta1: unavailable"}},
	}
}

func TestRescueWordsSayWhatIsHeldGoingRetainedAndSaved(t *testing.T) {
	got := RescueWords(rescueReport())
	for _, want := range []string{
		"HELD namespace shop: ValidatingAdmissionPolicy ns-doctor-rescue-shop",
		`going (deletion already under way, saved): pods/web-^[[31mred`,
		"VOLUME pv-1 (claim data): reclaim policy Retain (was Delete)",
		"SAVED to /b",
		"  secrets: 2\n",
		"replicasets.apps: 0, 1 for the record only",
		"2 Secret(s) are saved in clear: the files are 0600 in folders 0700",
		"NOT SAVED metrics.k8s.io/v1beta1: unavailable",
		"kubectl ns-doctor rescue shop --release",
		"kubectl ns-doctor rescue shop --restore --backup-dir /b",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\x1b") {
		t.Errorf("a name from the cluster reached the terminal unescaped:\n%q", got)
	}
}

func TestRescueDocumentIsTyped(t *testing.T) {
	var b bytes.Buffer
	if err := Rescue(&b, "json", rescueReport()); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["apiVersion"] != APIVersion || doc["kind"] != "Rescue" || doc["namespace"] != "shop" || doc["release"] != "kubectl ns-doctor rescue shop --release" {
		t.Errorf("document: %v", doc)
	}
	vols, _ := doc["volumes"].([]any)
	if len(vols) != 1 || vols[0].(map[string]any)["reclaimPolicyBefore"] != "Delete" {
		t.Errorf("volumes: %v", doc["volumes"])
	}
}

func TestRescueConfirmationListsEachChange(t *testing.T) {
	plan := &rescue.Plan{Namespace: "shop", Hold: "ns-doctor-rescue-shop", BackupDir: "/b", AlreadyHeld: true,
		Volumes: []rescue.Volume{{Name: "pv-1", Claim: "data", Before: "Delete"}, {Name: "pv-2", Claim: "logs", Before: "Retain"}}}
	req := RescueConfirmation{Plan: plan, Context: "prod", Cluster: "eu-1"}.Request()
	text, want := req.Prompt(), req.Want
	if want != "shop" {
		t.Errorf("answer %q, want the namespace's name", want)
	}
	for _, line := range []string{
		`This will hold the deletion of namespace "shop"`,
		`context "prod", cluster "eu-1"`,
		"re-apply ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding ns-doctor-rescue-shop",
		"set PersistentVolume pv-1 (claim data) to reclaim policy Retain (was Delete, kept in annotation " + rescue.ReclaimAnnotation + ")",
		"mark PersistentVolume pv-2 (claim logs) as rescued; it is Retain already",
		"Secrets included (in clear, files 0600), to /b",
		"Type the namespace name to go on: ",
	} {
		if !strings.Contains(text, line) {
			t.Errorf("confirmation lacks %q:\n%s", line, text)
		}
	}
}

func TestReleasedNamesEachRetainedVolumeWithItsWayBack(t *testing.T) {
	var b bytes.Buffer
	r := &rescue.Released{Namespace: "shop", Hold: "ns-doctor-rescue-shop", WasHeld: true,
		Volumes: []rescue.Volume{{Name: "pv-1", Claim: "data", Before: "Delete", Now: "Retain"}}}
	if err := Released(&b, "", r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"RELEASED namespace shop", "VOLUME pv-1 (claim data) stays Retain; its policy before the rescue was Delete",
		`kubectl patch pv pv-1 --type=merge -p '{"spec":{"persistentVolumeReclaimPolicy":"Delete"}`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("release report lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	_ = Released(&b, "", &rescue.Released{Namespace: "shop", Hold: "ns-doctor-rescue-shop"})
	if !strings.HasPrefix(b.String(), "NOT HELD namespace shop") {
		t.Errorf("release of a namespace not held: %s", b.String())
	}
}

func TestProtectedSaysHowToDelete(t *testing.T) {
	for _, tc := range []struct {
		p    rescue.Protected
		want string
	}{
		{rescue.Protected{Namespace: "shop", Policy: "ns-doctor-protect-shop", Annotation: "ns-doctor.io/confirm-delete=shop", Enforced: true},
			"PROTECTED namespace shop: policy ns-doctor-protect-shop refuses its deletion unless it is annotated first: kubectl annotate namespace shop ns-doctor.io/confirm-delete=shop\n"},
		{rescue.Protected{Namespace: "shop", Policy: "p", Annotation: "a"}, "the policy may take a few more seconds"},
		{rescue.Protected{Namespace: "shop", Policy: "p", Removed: true, WasThere: true}, "UNPROTECTED namespace shop: policy p removed"},
		{rescue.Protected{Namespace: "shop", Policy: "p", Removed: true}, "NOT PROTECTED namespace shop: no policy p to remove"},
	} {
		var b bytes.Buffer
		if err := Protected(&b, "", &tc.p); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), tc.want) {
			t.Errorf("%+v: %q lacks %q", tc.p, b.String(), tc.want)
		}
	}
	var b bytes.Buffer
	if err := Protected(&b, "yaml", &rescue.Protected{Namespace: "shop", Policy: "p"}); err != nil || !strings.Contains(b.String(), "kind: Protect") {
		t.Errorf("yaml: %v %s", err, b.String())
	}
}

func TestRescueWordsSayWhatWasLostAndWhetherTheHoldIsInForce(t *testing.T) {
	r := rescueReport()
	r.InForce = rescue.InForce{Why: "a dry run as x was refused before the hold could answer"}
	for i := range 25 {
		r.Backup.Lost = append(r.Backup.Lost, rescue.Lost{Kind: "ConfigMap", Name: fmt.Sprintf("cm-%02d", i), By: []string{"Pod/web-\x1b[31m"}})
	}
	got := RescueWords(r)
	for _, want := range []string{
		"NOT PROVEN in force",
		"LOST 25 object(s) deleted before the hold, named by what remains:",
		"  ConfigMap/cm-00 (named by Pod/web-^[[31m)",
		"  and 5 more (-o json lists them all)",
		"What nothing left names cannot be known from the cluster",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "cm-20") || strings.Contains(got, "\x1b") {
		t.Errorf("the list is not bounded, or not escaped:\n%q", got)
	}
	r.Backup.Lost, r.InForce = nil, rescue.InForce{Proven: true, Object: "configmaps/a"}
	if got := RescueWords(r); !strings.Contains(got, "LOST nothing that what remains names") || !strings.Contains(got, "in force after 0s: a dry-run DELETE of configmaps/a as "+rescue.ProofUser+" was refused") {
		t.Errorf("nothing lost, in force:\n%s", got)
	}
}

func TestIfDeletedSaysWhetherProtectRefusesFirst(t *testing.T) {
	r := diagnose.Report{Namespace: diagnose.Namespace{Name: "shop"}, Verdict: diagnose.Verdict{State: diagnose.StateActive, IfDeleted: true}}
	for _, tc := range []struct {
		p    *diagnose.Protection
		want string
	}{
		{nil, "blocker(s)"},
		{&diagnose.Protection{}, "; not protected against a mistaken deletion: 'kubectl ns-doctor protect shop'"},
		{&diagnose.Protection{Policy: "ns-doctor-protect-shop"}, "; but protected: a deletion is refused until it is annotated ns-doctor.io/confirm-delete=shop (ns-doctor-protect-shop)"},
		{&diagnose.Protection{Policy: "ns-doctor-protect-shop", Confirmed: true}, "; protected, and its deletion confirmed (ns-doctor.io/confirm-delete=shop)"},
	} {
		r.Protection = tc.p
		if got := VerdictSummary(r); !strings.HasSuffix(got, tc.want) {
			t.Errorf("%+v: %q, want it to end with %q", tc.p, got, tc.want)
		}
	}
}

func TestRestoreStepsSayHowFarItGot(t *testing.T) {
	r := &rescue.RestoreReport{Namespace: "shop\x1b", Released: rescue.InForce{Proven: true, Object: "configmaps/a", AfterMs: 300},
		Deletion: &purge.Report{Passes: 2},
		Restore: &restore.Report{Into: "shop\x1b", NamespaceCreated: true,
			Objects: []restore.Object{{Status: restore.Restored}, {Status: restore.LeftOut}, {Status: restore.Failed}},
			Volumes: []restore.Volume{{Name: "pv-1", Bound: true}, {Name: "pv-2"}}}}
	for s, want := range map[rescue.RestoreStep]string{
		rescue.StepReleased: "restore: hold removed (released in force after 300ms: a dry-run DELETE of configmaps/a as " + rescue.ProofUser +
			" was allowed); finishing the deletion of namespace shop^[",
		rescue.StepDeleted:   "restore: namespace shop^[ deleted by purge's pass in 2 pass(es)",
		rescue.StepRecreated: "restore: namespace shop^[ created again",
		rescue.StepReapplied: "restore: 1 object(s) restored, 1 left out, 1 failed",
		rescue.StepGivenBack: "restore: 1 of 2 volume(s) bound again and given their reclaim policy back",
	} {
		if got := RestoreStep(s, r); got != want {
			t.Errorf("%s: %q, want %q", s, got, want)
		}
	}
}
