package printer

import (
	"testing"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/rescue"
)

// Each command's confirmation, as the terminal prompts it: the words the
// command layer wrote before they moved here, to the byte.
func TestEachConfirmationSaysItsChanges(t *testing.T) {
	protect := &rescue.Protected{Namespace: "shop", Policy: "ns-doctor-protect-shop", Annotation: rescue.ConfirmAnnotation + "=shop"}
	unprotect := *protect
	unprotect.Removed = true
	for what, tc := range map[string]struct {
		prompt, want string
	}{
		"protect": {ProtectConfirmation{Protect: protect, Context: "prod", Cluster: "eu-1"}.Request().Prompt(),
			"This will change the protection of namespace \"shop\"\n  context \"prod\", cluster \"eu-1\"\n" +
				"  create ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding ns-doctor-protect-shop: DELETE of namespace shop is refused unless it is annotated " + rescue.ConfirmAnnotation + "=shop\n" +
				"Type the namespace name to go on: "},
		"protect --remove": {ProtectConfirmation{Protect: &unprotect, Context: "prod", Cluster: "eu-1"}.Request().Prompt(),
			"This will change the protection of namespace \"shop\"\n  context \"prod\", cluster \"eu-1\"\n" +
				"  delete ValidatingAdmissionPolicyBinding and ValidatingAdmissionPolicy ns-doctor-protect-shop: namespace shop can be deleted as any other\n" +
				"Type the namespace name to go on: "},
		"release": {ReleaseConfirmation{Release: &rescue.Released{Namespace: "shop", Hold: "ns-doctor-rescue-shop"}, Context: "prod", Cluster: "eu-1"}.Request().Prompt(),
			"This will release namespace \"shop\"\n  context \"prod\", cluster \"eu-1\"\n" +
				"  delete ValidatingAdmissionPolicyBinding and ValidatingAdmissionPolicy ns-doctor-rescue-shop: the namespace controller goes on deleting the namespace\n" +
				"  PersistentVolumes a rescue set to Retain stay Retain\nType the namespace name to go on: "},
		"restore": {RestoreConfirmation{Restore: &rescue.Restoring{Namespace: "shop", Dir: "/b", Hold: "ns-doctor-rescue-shop",
			Plan: &backup.Plan{Steps: []backup.Step{{Verdict: backup.Restore}, {Verdict: backup.Restore}, {Verdict: backup.LeaveOut}}}},
			Wait: 5 * time.Minute, Context: "prod", Cluster: "eu-1"}.Request().Prompt(),
			"This will restore namespace \"shop\"\n  context \"prod\", cluster \"eu-1\"\n  from /b\n" +
				"  delete the hold (ValidatingAdmissionPolicy and binding ns-doctor-rescue-shop)\n" +
				"  finish the deletion with purge's own pass (no escalation; what it deletes is saved to the same folder first), waiting up to 5m0s\n" +
				"  create the namespace again with its labels and annotations\n" +
				"  apply 2 saved object(s) (server-side apply, field manager ns-doctor), leaving out 1 (each, and why: kubectl ns-doctor restore /b)\n" +
				"  bind the claims to their retained volumes again, and give each volume its reclaim policy from before the rescue back once its claim is bound\n" +
				"Type the namespace name to go on: "},
		"purge": {PurgeConfirmation{Names: []string{"shop"}, Context: "prod", Cluster: "eu-1", Consent: []string{"strip finalizers x", "  leaks: y"}}.Request().Prompt(),
			"This will run the namespace controller's deletion pass FOR REAL on namespace \"shop\"\n  context \"prod\", cluster \"eu-1\"\n" +
				"  strip finalizers x\n    leaks: y\nEverything it deletes or changes is saved first. Type the namespace name to go on: "},
		"purge of several": {PurgeConfirmation{Names: []string{"a", "b"}, Context: "prod", Cluster: "eu-1"}.Request().Prompt(),
			"This will run the namespace controller's deletion pass FOR REAL on 2 namespaces: a, b\n  context \"prod\", cluster \"eu-1\"\n" +
				"Everything it deletes or changes is saved first. Type the number of namespaces (2) to go on: "},
		"purge of a fleet": {FleetConfirmation{Clusters: []FleetTarget{{Context: "ci-1", Cluster: "c1", Names: []string{"a", "b"}}, {Context: "ci-2", Cluster: "c2"}}}.Request().Prompt(),
			"This will run the namespace controller's deletion pass FOR REAL on 2 namespaces in 2 clusters:\n  context \"ci-1\", cluster \"c1\": 2: a, b\n" +
				"Everything it deletes or changes is saved first. Type the number of namespaces (2) to go on: "},
	} {
		if tc.prompt != tc.want {
			t.Errorf("%s:\n%q\nwant\n%q", what, tc.prompt, tc.want)
		}
	}
}
