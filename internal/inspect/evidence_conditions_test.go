package inspect

import (
	"fmt"
	"strings"
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
		{diagnose.HolderCondition{Type: "Stalled", Status: "False"}, false},
		{diagnose.HolderCondition{Type: "Degraded", Status: "False", Message: "all fine"}, false},
		// kstatus's Reconciling: True is work under way, False work done;
		// neither is trouble unless its words carry an error.
		{diagnose.HolderCondition{Type: "Reconciling", Status: "True", Reason: "Progressing", Message: "deleting the bucket"}, false},
		{diagnose.HolderCondition{Type: "Reconciling", Status: "False"}, false},
		{diagnose.HolderCondition{Type: "Reconciling", Status: "True", Message: "reconcile failed: the bucket is not empty"}, true},
		// A type scoped by its operator, or compounded, is read by its
		// head word: the failure polarity stands whatever the prefix.
		{diagnose.HolderCondition{Type: "vendor.Recoverable", Status: "True", Message: "BucketNotEmpty: the bucket you tried to delete is not empty"}, true},
		{diagnose.HolderCondition{Type: "vendor.example.com/Stalled", Status: "True", Message: "spec is immutable"}, true},
		// A word of one operator's own says nothing by itself: only its
		// words can.
		{diagnose.HolderCondition{Type: "vendor.Terminal", Status: "True", Message: "spec is immutable"}, false},
		{diagnose.HolderCondition{Type: "DeletionBlocked", Status: "True", Reason: "HasDependents", Message: "3 snapshots still reference it"}, true},
		{diagnose.HolderCondition{Type: "widgets.example.com/ReconcileError", Status: "True"}, true},
		{diagnose.HolderCondition{Type: "vendor.Stalled", Status: "False"}, false},
		{diagnose.HolderCondition{Type: "DeletionBlocked", Status: "False", Message: "nothing depends on it"}, false},
		// Good news stays good news, whatever it mentions.
		{diagnose.HolderCondition{Type: "vendor.ResourceSynced", Status: "True", Message: "Resource synced; no error in the last reconcile"}, false},
		// Words as words, and a count of none is none.
		{diagnose.HolderCondition{Type: "Progressing", Status: "True", Message: "0 errors, 2 objects left"}, false},
		{diagnose.HolderCondition{Type: "Progressing", Status: "True", Message: "failover to replica b done"}, false},
		{diagnose.HolderCondition{Type: "Progressing", Status: "True", Message: "moving what is in user namespaces"}, false},
		{diagnose.HolderCondition{Type: "Progressing", Status: "True", Message: "3 errors while deleting"}, true},
		{diagnose.HolderCondition{Type: "Ready", Status: "True", Reason: "BucketNotEmpty"}, false},
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

// A troubled condition blames a failure when it reports one in its own
// words; one that is only not ready yet (Ready=False, Creating) does not,
// so the next step never quotes it as the reason.
func TestBlamingConditions(t *testing.T) {
	for _, tc := range []struct {
		c    diagnose.HolderCondition
		want bool
	}{
		{diagnose.HolderCondition{Type: "vendor.Recoverable", Status: "True", Message: "BucketNotEmpty: the bucket is not empty"}, true},
		{diagnose.HolderCondition{Type: "Ready", Status: "False", Reason: "DeletionBlocked", Message: "waiting"}, true},
		{diagnose.HolderCondition{Type: "Synced", Status: "False", Reason: "ReconcileError", Message: "cannot delete"}, true},
		{diagnose.HolderCondition{Type: "Ready", Status: "False", Reason: "Creating", Message: "waiting for the instance"}, false},
		{diagnose.HolderCondition{Type: "Ready", Status: "Unknown"}, false},
	} {
		if got := blames(tc.c); got != tc.want {
			t.Errorf("%+v: blames %v, want %v", tc.c, got, tc.want)
		}
	}
}

func TestWordsOfANameDropItsScope(t *testing.T) {
	for in, want := range map[string]string{
		"vendor.Recoverable": "recoverable", "DeletionBlocked": "deletion blocked", "example.com/ReconcileError": "reconcile error",
		"lastError": "last error", "failure_message": "failure message", "HTTPError": "http error", "Error7": "error7", "": "",
	} {
		if got := strings.Join(words(in), " "); got != want {
			t.Errorf("words(%q) = %q, want %q", in, got, want)
		}
	}
}

// A holder that says what is wrong in status fields of its own, not in a
// condition: a field named for trouble is kept whenever set; a message or
// reason only when it carries an error or its phase says trouble. Good
// news in the same fields is not kept.
func TestStatusFieldsThatSayWhatIsWrong(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status map[string]any
		want   []string
	}{
		{"a field named for trouble", map[string]any{"error": "BucketNotEmpty: 4 objects left", "phase": "Deleting"}, []string{"status.error: BucketNotEmpty: 4 objects left"}},
		{"an error object", map[string]any{"lastError": map[string]any{"code": 409, "message": "volume in use by instance i-1"}}, []string{"status.lastError: volume in use by instance i-1"}},
		{"a deletion blocker of its own", map[string]any{"deletionBlocked": true, "blockedReason": "snapshots reference it"},
			[]string{"status.blockedReason: snapshots reference it", "status.deletionBlocked: true"}},
		{"a message under a failed phase", map[string]any{"phase": "Failed", "message": "the remote account is suspended"},
			[]string{"status.message: the remote account is suspended", "status.phase: Failed"}},
		{"a reason carrying an error", map[string]any{"state": "Deleting", "reason": "BucketNotEmpty"}, []string{"status.reason: BucketNotEmpty"}},
		{"good news", map[string]any{"phase": "Ready", "message": "Reconciled successfully", "reason": "Synced", "observedGeneration": int64(3)}, nil},
		{"an empty error", map[string]any{"error": "", "lastError": map[string]any{}, "phase": "Deleting"}, nil},
		{"fields of no polarity", map[string]any{"endpoint": "https://error.example.com", "url": "failed.example.com"}, nil},
		{"when, not what", map[string]any{"lastErrorTime": "2026-11-28T10:00:00Z", "errorCount": int64(3), "phase": "Deleting"}, nil},
		{"an object of its own under status", map[string]any{"operationState": map[string]any{"phase": "Error", "message": `cluster "https://10.9.8.7" has not been configured`}},
			[]string{`status.operationState.message: cluster "https://10.9.8.7" has not been configured`, "status.operationState.phase: Error"}},
		{"a status word of trouble beside its message", map[string]any{"health": map[string]any{"status": "Degraded", "message": "2 of 3 replicas down"}, "sync": map[string]any{"status": "Synced"}},
			[]string{"status.health.message: 2 of 3 replicas down", "status.health.status: Degraded"}},
		{"good news under status", map[string]any{"operationState": map[string]any{"phase": "Succeeded", "message": "successfully synced (0 errors)"}}, nil},
		{"not deeper than two levels", map[string]any{"a": map[string]any{"b": map[string]any{"error": "too deep"}}}, nil},
	} {
		obj := &unstructured.Unstructured{Object: map[string]any{"status": tc.status}}
		var got []string
		for _, f := range statusSays(obj) {
			got = append(got, f.Field+": "+f.Value)
		}
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// What one holder says in its fields is bounded: a few fields, each cut.
func TestStatusFieldsAreBounded(t *testing.T) {
	status := map[string]any{}
	for k := range 10 {
		status[fmt.Sprintf("%cError", 'a'+k)] = strings.Repeat("x", 5000)
	}
	got := statusSays(&unstructured.Unstructured{Object: map[string]any{"status": status}})
	if len(got) != maxHolderFields || len([]rune(got[0].Value)) > maxFieldValue+3 {
		t.Errorf("kept %d fields, the first %d runes", len(got), len([]rune(got[0].Value)))
	}
}

// Free text is read word by word: a substring says nothing ("in user" is
// not "in use", "failover" not "fail"), camel case is words
// (BucketNotEmpty), and a zero or a "no" counting a trouble word says
// there is none of it.
func TestWordsAsWordsAndNumbersNegate(t *testing.T) {
	for text, want := range map[string]bool{
		"0 errors": false, "errors: 0": false, "error count: 0": false, "no error since the last restart": false, "without failure": false,
		"3 errors": true, "1 failed": true, "failover completed": false, "in user namespace team-a": false,
		"volume vol-7 is in use": true, "VolumeInUse": true, "BucketNotEmpty": true, "failed to delete": true,
		"the webhook timed out": true, "Back-off restarting": true, "errorless": false, "terrorism": false,
	} {
		if got := carriesError(text); got != want {
			t.Errorf("carriesError(%q) = %v, want %v", text, got, want)
		}
	}
	for text, want := range map[string]bool{
		`secrets "creds" not found`: true, `CredentialsNotFound`: true, `no matches for kind "Bucket" in version "s3.example.net/v1"`: true,
		`cluster "https://10.9.8.7" has not been configured`: true, "the bucket doesn't exist": true, "found 0 issues": false,
		"notfoundation": false, "configured and running": false,
	} {
		if got := saysMissing(text); got != want {
			t.Errorf("saysMissing(%q) = %v, want %v", text, got, want)
		}
	}
}

// A condition written without a status (a type and a message only, as
// several controllers write theirs) holds by being there: one of trouble
// is kept, with its words whole (the printer bounds what it shows); one of
// good news is not.
func TestConditionsWithoutStatus(t *testing.T) {
	long := strings.Repeat("y", 3000)
	obj := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "DeletionError", "message": `cluster "https://10.9.8.7" has not been configured`, "lastTransitionTime": "2026-11-25T10:00:00Z"},
		map[string]any{"type": "Ready", "message": "all is well"},
		map[string]any{"type": "SyncWarning", "message": "failed to prune " + long},
		map[string]any{"message": "no type: not a condition, error or not"},
	}}}}
	got := notReady(obj)
	if len(got) != 2 || got[0].Type != "DeletionError" || got[0].Status != "" || !got[0].Error || !got[0].Missing || got[0].Named() != "DeletionError" {
		t.Fatalf("kept %+v", got)
	}
	if got[1].Type != "SyncWarning" || !got[1].Error || got[1].Message != "failed to prune "+long {
		t.Errorf("the second %s, %d runes", got[1].Type, len([]rune(got[1].Message)))
	}
}
