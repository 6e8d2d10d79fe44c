package inspect

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// A holder says why it cannot finish in conditions of either polarity:
// what counts as trouble is a False or Unknown condition of a positive
// type, a True one of a negative type, and any True one whose reason or
// message carries an error; a positive type that is True never does,
// whatever its message.
func TestTroubledConditionsOfEitherPolarity(t *testing.T) {
	for _, tc := range []struct {
		c    diagnose.HolderCondition
		want bool
	}{
		{diagnose.HolderCondition{Type: "Ready", Status: "False", Reason: "DeletionBlocked"}, true},
		{diagnose.HolderCondition{Type: "Synced", Status: "False", Reason: "ReconcileError", Message: "cannot delete external resource"}, true},
		{diagnose.HolderCondition{Type: "Ready", Status: "Unknown"}, true},
		{diagnose.HolderCondition{Type: "Recoverable", Status: "True", Message: "error deleting bucket: AccessDenied"}, true},
		{diagnose.HolderCondition{Type: "Terminal", Status: "True", Reason: "DeleteRejected"}, true},
		{diagnose.HolderCondition{Type: "Stalled", Status: "True"}, true},
		{diagnose.HolderCondition{Type: "Progressing", Status: "True", Reason: "ReconcileError", Message: "retrying"}, true},
		{diagnose.HolderCondition{Type: "Progressing", Status: "True", Reason: "Deleting", Message: "waiting for the backup to be removed: request timed out"}, true},
		{diagnose.HolderCondition{Type: "Progressing", Status: "True", Reason: "Deleting", Message: "removing the bucket"}, false},
		{diagnose.HolderCondition{Type: "Ready", Status: "True", Message: "no error"}, false},
		{diagnose.HolderCondition{Type: "Synced", Status: "True", Reason: "ReconcileSuccess"}, false},
		{diagnose.HolderCondition{Type: "Recoverable", Status: "False"}, false},
		{diagnose.HolderCondition{Type: "Degraded", Status: "False", Message: "all fine"}, false},
	} {
		if got := troubled(tc.c); got != tc.want {
			t.Errorf("%s=%s reason %q message %q: troubled %v, want %v", tc.c.Type, tc.c.Status, tc.c.Reason, tc.c.Message, got, tc.want)
		}
	}
}

// notReady keeps the latest troubled conditions first, at most
// maxHolderConditions of them.
func TestHolderConditionsLatestFirstAndBounded(t *testing.T) {
	var conds []any
	for k := range 8 {
		conds = append(conds, map[string]any{"type": fmt.Sprintf("Error%d", k), "status": "True", "reason": "Failed",
			"lastTransitionTime": fmt.Sprintf("2026-11-25T10:0%d:00Z", k)})
	}
	conds = append(conds, map[string]any{"type": "Ready", "status": "True", "message": "fine"})
	obj := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": conds}}}
	got := notReady(obj)
	if len(got) != maxHolderConditions || got[0].Type != "Error7" || got[len(got)-1].Type != "Error3" {
		t.Errorf("kept %+v, want Error7 down to Error3", got)
	}
}

// A catalogued owner found running in the namespace being diagnosed goes
// with it; found elsewhere, or not found, its state stands.
func TestCatalogueOwnerInTheNamespaceGoesWithIt(t *testing.T) {
	found := func(ns string, state diagnose.OwnerRunning) diagnose.OwnerState {
		return diagnose.OwnerState{State: state, Owner: "Widget operator", Found: &diagnose.WorkloadState{WorkloadRef: diagnose.WorkloadRef{Kind: "Deployment", Namespace: ns, Name: "widget-operator"}, Ready: 1, Want: 1}}
	}
	for _, tc := range []struct {
		in   diagnose.OwnerState
		want diagnose.OwnerRunning
	}{
		{found("team-a", diagnose.OwnerRunningReady), diagnose.OwnerDeletedWithNamespace},
		{found("team-a", diagnose.OwnerNotReady), diagnose.OwnerDeletedWithNamespace},
		{found("operators", diagnose.OwnerRunningReady), diagnose.OwnerRunningReady},
		{diagnose.OwnerState{State: diagnose.OwnerNotFound, Owner: "Widget operator"}, diagnose.OwnerNotFound},
	} {
		if got := goesWith(tc.in, "team-a").State; got != tc.want {
			t.Errorf("%+v in team-a: %s, want %s", tc.in.Found, got, tc.want)
		}
	}
}
