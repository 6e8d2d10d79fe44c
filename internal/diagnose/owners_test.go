package diagnose_test

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	. "github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/owners"
	"github.com/ns-doctor/ns-doctor/internal/printer"
)

func inferred(state OwnerRunning, w *owners.Workload, inNamespace bool) OwnerState {
	return OwnerState{State: state, Inferred: &owners.Inference{Confidence: owners.Certain, Workload: w, InNamespace: inNamespace, RBACRead: true, WorkloadsRead: true,
		SetBy: []owners.Manager{{Name: "acme-operator", Operation: "Update"}}}}
}

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

var acmeOperator = &owners.Workload{Kind: "Deployment", Namespace: "acme-system", Name: "acme-operator", ServiceAccount: "acme-operator", Ready: 1, Want: 1}

// An owner inferred to have lived in the namespace is deleted with it:
// the blocker is named at once, whatever --grace, and its first step is the
// purge flag for those finalizers, then the clean-up by hand.
func TestOwnerDeletedWithTheNamespace(t *testing.T) {
	obs := with(observation(), widgets, terminatingItem("w", 5*time.Second, "acme.example.com/cleanup"))
	obs.Grace = time.Hour
	obs.Evidence.Owners = map[string]OwnerState{"acme.example.com/cleanup": inferred(OwnerDeletedWithNamespace, nil, true)}
	r := Diagnose(obs)
	b := blockerOf(t, r, BlockerOwnerDeleted)
	if len(b.Actions) != 2 || b.Actions[0] != PurgeAction("demo", FlagRemoveFinalizers, "acme.example.com/cleanup") || b.Actions[1].Kind != ActionCleanUpByHand {
		t.Errorf("actions %+v", b.Actions)
	}
	if r.Verdict.State != StateStuck {
		t.Errorf("verdict %+v", r.Verdict)
	}
	w := printer.WordsOf(b)
	if !strings.Contains(w.Summary, "deleted with it: nothing will remove them") || !strings.Contains(w.NextStep, "nothing will remove them: kubectl ns-doctor purge demo --remove-finalizers=acme.example.com/cleanup") ||
		!strings.Contains(strings.Join(w.Evidence, "\n"), "stripping acme.example.com/cleanup leaks whatever its owner was to clean up") {
		t.Errorf("words %+v", w)
	}
}

// An owner known to run, past --grace with nothing released: the verdict
// says so with how long, the holders' latest words come first, and the
// step is its log, never "check that it still runs".
func TestOwnerRunsAndReleasesNothing(t *testing.T) {
	obs := with(observation(), widgets, terminatingItem("w", 5*time.Minute, "acme.example.com/cleanup"))
	obs.Evidence.Owners = map[string]OwnerState{"acme.example.com/cleanup": inferred(OwnerRunningReady, acmeOperator, false)}
	at := now.Add(-time.Minute)
	obs.Evidence.Holders = []Holder{{Resource: "widgets.example.com", Name: "w", Conditions: []HolderCondition{
		{Type: "Recoverable", Status: "True", Reason: "CleanupFailed", Message: "bucket acme-logs: AccessDenied", LastTransitionTime: &at}}}}
	b := blockerOf(t, Diagnose(obs), BlockerFinalizers)
	if b.Actions[0] != (Action{Kind: ActionOwnerLogs, Namespace: "demo", Target: "deployment/acme-operator", Of: "acme-system"}) {
		t.Errorf("actions %+v", b.Actions)
	}
	w := printer.WordsOf(b)
	if !strings.Contains(w.Summary, "runs, but has released none of these objects in 5m0s since they were marked for deletion") ||
		!strings.HasPrefix(w.Evidence[0], "widgets.example.com/w condition Recoverable=True (CleanupFailed): bucket acme-logs: AccessDenied") ||
		!strings.Contains(w.NextStep, "kubectl logs -n acme-system deployment/acme-operator") || strings.Contains(w.NextStep, "still runs") {
		t.Errorf("words %+v", w)
	}

	// Within --grace it is no blocker yet: it is going.
	obs.Grace = time.Hour
	if r := Diagnose(obs); len(r.Blocking()) != 0 || r.Verdict.State != StateTerminating {
		t.Errorf("within grace: %+v", r.Blockers)
	}
}

// A not-ready owner's step names its workload.
func TestNotReadyOwnerIsNamed(t *testing.T) {
	obs := with(observation(), widgets, terminatingItem("w", 5*time.Minute, "acme.example.com/cleanup"))
	w := *acmeOperator
	w.Ready = 0
	obs.Evidence.Owners = map[string]OwnerState{"acme.example.com/cleanup": inferred(OwnerNotReady, &w, false)}
	b := blockerOf(t, Diagnose(obs), BlockerFinalizers)
	if b.Actions[0].Of != "deployment acme-system/acme-operator" || !strings.Contains(printer.WordsOf(b).NextStep, "check deployment acme-system/acme-operator, which removes them and is not ready") {
		t.Errorf("actions %+v", b.Actions)
	}
}

// The namespace's own finalizers: their owners are in the report; one
// whose owner went with the namespace gets the purge step first, one
// whose owner runs its log.
func TestNamespaceFinalizerOwners(t *testing.T) {
	obs := observation()
	obs.Namespace.Spec.Finalizers = append(obs.Namespace.Spec.Finalizers, v1.FinalizerName("tenancy.example.com/space"))
	obs.Namespace.Finalizers = []string{"acme.example.com/namespace"}
	obs.Evidence.NamespaceOwners = map[string]OwnerState{
		"tenancy.example.com/space":  inferred(OwnerDeletedWithNamespace, nil, true),
		"acme.example.com/namespace": inferred(OwnerRunningReady, acmeOperator, false),
	}
	r := Diagnose(obs)
	var token, meta *Blocker
	for k := range r.Blockers {
		switch f, _ := r.Blockers[k].Facts.(*NamespaceFinalizerFacts); {
		case f == nil:
		case f.Token != "":
			token = &r.Blockers[k]
		default:
			meta = &r.Blockers[k]
		}
	}
	if token == nil || meta == nil {
		t.Fatalf("blockers %+v", r.Blockers)
	}
	if token.Actions[0] != PurgeAction("demo", FlagRemoveNamespaceFinalizers, "") || !strings.Contains(printer.WordsOf(*token).Summary, "deleted with it") {
		t.Errorf("token: %+v %+v", token.Actions, printer.WordsOf(*token))
	}
	if meta.Actions[0].Kind != ActionOwnerLogs || !strings.Contains(strings.Join(printer.WordsOf(*meta).Evidence, "\n"), "acme.example.com/namespace: deployment acme-system/acme-operator (running)") {
		t.Errorf("metadata: %+v %+v", meta.Actions, printer.WordsOf(*meta))
	}
	if len(r.NamespaceFinalizers) != 2 || r.NamespaceFinalizers[0].Name != "tenancy.example.com/space" {
		t.Errorf("namespace finalizers %+v", r.NamespaceFinalizers)
	}
}

// A pod held on a lost node: the force-delete comes first, and the words
// name the node and its state.
func TestPodsOnALostNode(t *testing.T) {
	obs := with(observation(), widgets)
	pod := terminatingItem("web-0", time.Minute)
	obs.Snapshot.Pods = []v1.Pod{{ObjectMeta: pod.ObjectMeta}}
	obs.Snapshot.Lists[podsGVR] = &metav1.PartialObjectMetadataList{Items: []metav1.PartialObjectMetadata{pod}}
	since := now.Add(-time.Hour)
	obs.Evidence.PodNodes = []PodNode{{Pod: "web-0", Node: "node-7", State: NodeNotReady, Since: &since}}
	b := blockerOf(t, Diagnose(obs), BlockerPods)
	if b.Actions[0] != PurgeAction("demo", FlagForceDeletePods, "") {
		t.Errorf("actions %+v", b.Actions)
	}
	w := printer.WordsOf(b)
	if !strings.HasPrefix(w.NextStep, "node node-7 will never confirm their end: kubectl ns-doctor purge demo --force-delete-pods") ||
		!strings.Contains(w.Evidence[0], "its node node-7 is NotReady since 2026-11-22T11:00:00Z") {
		t.Errorf("words %+v", w)
	}
}

// A holder that says why it is not released, in a condition of failure
// or a status field, is what the next step acts on, whatever is known of
// its owner: its words come first in the evidence and in the step, then
// the owner's step and the strip. A holder only not ready yet, or one
// that says nothing, leaves the step as it was.
func TestHolderSaysWhyInTheStep(t *testing.T) {
	at := now.Add(-time.Minute)
	for _, tc := range []struct {
		name     string
		owner    OwnerState
		holder   Holder
		evidence string // the first line of evidence; "" when the holder is not quoted
		step     string // what the step starts with; "" when it is not quoted
	}{
		{"a condition of failure, owner not known", OwnerState{State: OwnerUnknown},
			Holder{Resource: "widgets.example.com", Name: "w", Conditions: []HolderCondition{
				{Type: "Vendor.Recoverable", Status: "True", Message: "BucketNotEmpty: 4 objects left", LastTransitionTime: &at, Error: true}}},
			"widgets.example.com/w condition Vendor.Recoverable=True: BucketNotEmpty: 4 objects left",
			"widgets.example.com/w says why it is not released (condition Vendor.Recoverable=True: BucketNotEmpty: 4 objects left): fix that"},
		{"a status field, owner running", inferred(OwnerRunningReady, acmeOperator, false),
			Holder{Resource: "widgets.example.com", Name: "w", Fields: []HolderField{{Field: "status.error", Value: "volume in use by instance i-1"}}},
			"widgets.example.com/w status.error: volume in use by instance i-1",
			"widgets.example.com/w says why it is not released (status.error: volume in use by instance i-1): fix that, and its owner can finish; else: kubectl logs -n acme-system"},
		{"not ready yet", OwnerState{State: OwnerUnknown},
			Holder{Resource: "widgets.example.com", Name: "w", Conditions: []HolderCondition{
				{Type: "Ready", Status: "False", Reason: "Creating", Message: "waiting for the instance", LastTransitionTime: &at}}},
			"widgets.example.com/w condition Ready=False (Creating): waiting for the instance", ""},
		{"nothing said", OwnerState{State: OwnerUnknown}, Holder{Resource: "widgets.example.com", Name: "w"}, "", ""},
	} {
		obs := with(observation(), widgets, terminatingItem("w", 5*time.Minute, "acme.example.com/cleanup"))
		obs.Evidence.Owners = map[string]OwnerState{"acme.example.com/cleanup": tc.owner}
		obs.Evidence.Holders = []Holder{tc.holder}
		b := blockerOf(t, Diagnose(obs), BlockerFinalizers)
		w := printer.WordsOf(b)
		f := b.Facts.(*FinalizerFacts)
		switch {
		case tc.evidence != "" && (len(w.Evidence) == 0 || w.Evidence[0] != tc.evidence):
			t.Errorf("%s: evidence %q", tc.name, w.Evidence)
		case tc.evidence == "" && len(f.Said) != 0:
			t.Errorf("%s: said %+v", tc.name, f.Said)
		case tc.step != "" && !strings.HasPrefix(w.NextStep, tc.step):
			t.Errorf("%s: step %q", tc.name, w.NextStep)
		case tc.step == "" && (strings.Contains(w.NextStep, "says why it is not released") || f.Why() != nil):
			t.Errorf("%s: step quotes the holder: %q", tc.name, w.NextStep)
		case !strings.Contains(w.NextStep, "--remove-finalizers=acme.example.com/cleanup"):
			t.Errorf("%s: the strip is gone from the step: %q", tc.name, w.NextStep)
		}
	}
}

// An inference whose workload does not match the controller that set the
// finalizer decides no Running: the owner is Unknown, the step is not that
// workload's log, and the evidence says why. The same inference, matched,
// is Running and its log is the step.
func TestUnmatchedWorkloadIsNotTheRunner(t *testing.T) {
	dashboard := &owners.Workload{Kind: "Deployment", Namespace: "ops", Name: "dashboard", ServiceAccount: "shared-ops", Ready: 1, Want: 1}
	for _, unmatched := range []bool{true, false} {
		in := owners.Inference{Confidence: owners.Likely, Workload: dashboard, Unmatched: unmatched, RBACRead: true, WorkloadsRead: true,
			Identity: &owners.Subject{Kind: "ServiceAccount", Namespace: "ops", Name: "shared-ops"},
			SetBy:    []owners.Manager{{Name: "lockbox-reaper", Operation: "Update"}}}
		obs := with(observation(), widgets, terminatingItem("w", 5*time.Minute, "acme.example.com/cleanup"))
		obs.Evidence.Owners = map[string]OwnerState{"acme.example.com/cleanup": WithInference(OwnerState{State: OwnerUnknown}, in)}
		b := blockerOf(t, Diagnose(obs), BlockerFinalizers)
		w := printer.WordsOf(b)
		logs := b.Actions[0].Kind == ActionOwnerLogs
		said := strings.Contains(strings.Join(w.Evidence, "\n"), "no evidence that whoever removes it runs")
		if state := obs.Evidence.Owners["acme.example.com/cleanup"].State; unmatched == (state == OwnerRunningReady) || logs == unmatched || said != unmatched {
			t.Errorf("unmatched %v: state %s, step %q, evidence %q", unmatched, state, w.NextStep, w.Evidence)
		}
	}
}

// The setter read nowhere in the cluster: the owner is not running, and
// the evidence says the setter runs nowhere; read somewhere (or not read),
// it stays Unknown.
func TestSetterNowhereIsNotRunning(t *testing.T) {
	dashboard := &owners.Workload{Kind: "Deployment", Namespace: "ops", Name: "dashboard", ServiceAccount: "shared-ops", Ready: 1, Want: 1}
	for _, nowhere := range []bool{true, false} {
		in := owners.Inference{Confidence: owners.Likely, Workload: dashboard, Unmatched: true, SetterNowhere: nowhere, Seen: 12, RBACRead: true, WorkloadsRead: true,
			Identity: &owners.Subject{Kind: "ServiceAccount", Namespace: "ops", Name: "shared-ops"},
			SetBy:    []owners.Manager{{Name: "lockbox-reaper", Operation: "Update"}}}
		state := WithInference(OwnerState{State: OwnerUnknown}, in)
		want := map[bool]OwnerRunning{true: OwnerNotFound, false: OwnerUnknown}[nowhere]
		said := strings.Contains(printer.OwnerEvidence(state), "no workload of the cluster does (12 read: by name, labels or binary): the setter runs nowhere")
		if state.State != want || said != nowhere {
			t.Errorf("nowhere %v: state %s, evidence %q", nowhere, state.State, printer.OwnerEvidence(state))
		}
	}
}
