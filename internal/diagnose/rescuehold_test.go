package diagnose_test

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	. "github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// The hold of a rescue is named as such, with who set it and since when,
// and its step is to release it; another namespace's hold, or any other
// policy denying the controller here, stays a WebhookDenies.
func TestRescueHoldIsNotAPolicyToDelete(t *testing.T) {
	since := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	deny := func(policy string) string {
		return fmt.Sprintf(`configmaps "a" is forbidden: ValidatingAdmissionPolicy '%s' with binding '%s' denied request: ns-doctor rescue holds namespace x`, policy, policy)
	}
	for _, tc := range []struct {
		name   string
		policy string
		want   BlockerKind
	}{
		{"its own hold", "", BlockerRescueHold},
		{"another namespace's hold", RescueHoldPolicy("other"), BlockerWebhookDenies},
		{"another policy", "keep-data", BlockerWebhookDenies},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := observation()
			policy := tc.policy
			if policy == "" {
				policy = RescueHoldPolicy(obs.Namespace.Name)
			}
			obs.RescueHold = &RescueHold{Policy: policy, Since: since, By: "alice"}
			obs.Namespace.Status.Conditions = append(obs.Namespace.Status.Conditions, v1.NamespaceCondition{
				Type: v1.NamespaceDeletionContentFailure, Status: v1.ConditionTrue, Reason: "ContentDeletionFailed",
				Message: "Failed to delete all resource types, 1 remaining: " + deny(policy)})
			var found []Blocker
			for _, b := range Diagnose(obs).Blockers {
				if b.Subject == policy {
					found = append(found, b)
				}
			}
			if len(found) != 1 || found[0].Kind != tc.want {
				t.Fatalf("blockers for %s: %+v", policy, found)
			}
			if tc.want != BlockerRescueHold {
				return
			}
			f, ok := found[0].Facts.(*RescueHoldFacts)
			if !ok || f.Hold == nil || f.Hold.By != "alice" || !f.Hold.Since.Equal(since) || f.Message == "" {
				t.Errorf("facts %+v", found[0].Facts)
			}
			if a := found[0].Actions; len(a) != 1 || a[0].Kind != ActionReleaseRescue || a[0].Namespace != obs.Namespace.Name {
				t.Errorf("actions %+v", a)
			}
		})
	}
}
