package diagnose_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	. "github.com/ns-doctor/ns-doctor/internal/diagnose"
)

var (
	secrets         = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	serviceAccounts = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
)

// heldWidget is demo with one widget "w" held by finalizer, marked for
// deletion a second ago (well within any grace period), its owner running.
func heldWidget(finalizer string) Observation {
	obs := with(observation(), widgets, terminatingItem("w", time.Second, finalizer))
	obs.Grace = time.Hour
	obs.Evidence.Owners = map[string]OwnerState{finalizer: {State: OwnerRunningReady, Owner: "the operator"}}
	return obs
}

func blockerOf(t *testing.T, r Report, kind BlockerKind) Blocker {
	t.Helper()
	for _, b := range r.Blockers {
		if b.Kind == kind {
			return b
		}
	}
	t.Fatalf("no %s blocker in %s", kind, dump(r.Blockers))
	return Blocker{}
}

// A holder saying its owner's write was refused because the namespace is
// terminating, in its status or in an event about it, is an owner that
// cannot finish: named at once (waiting will not help), with the steps in
// order, and its running owner said to be unable to finish.
func TestOwnerCannotFinish(t *testing.T) {
	refused := `configmaps "x" is forbidden: unable to create new content in namespace demo because it is being terminated`
	for name, evidence := range map[string]Evidence{
		"status": {Holders: []Holder{{Resource: "widgets.example.com", Name: "w",
			Conditions: []HolderCondition{{Type: "Synced", Status: "False", Message: "cannot compose resources: " + refused}}}}},
		"event": {Events: []Event{{Reason: "ComposeResources", Object: "widget/w", Message: refused}}},
	} {
		t.Run(name, func(t *testing.T) {
			obs := heldWidget("example.com/cleanup")
			evidence.Owners = obs.Evidence.Owners
			obs.Evidence = evidence
			r := Diagnose(obs)
			b := blockerOf(t, r, BlockerOwnerCannotFinish)
			f := b.Facts.(*FinalizerFacts)
			if len(f.CannotFinish) != 1 || f.CannotFinish[0].Cause != CauseNamespaceTerminating || f.CannotFinish[0].Object != "widgets.example.com/w" {
				t.Errorf("facts %+v", f.CannotFinish)
			}
			if len(b.Actions) != 2 || b.Actions[0].Kind != ActionCleanUpByHand || b.Actions[1] != PurgeAction("demo", FlagRemoveFinalizers, "example.com/cleanup") {
				t.Errorf("actions %+v", b.Actions)
			}
			if r.Finalizers[0].OwnerState.State != OwnerRunningCannotFinish || f.Owners["example.com/cleanup"].State != OwnerRunningCannotFinish {
				t.Errorf("owner %+v / %+v", r.Finalizers[0].OwnerState, f.Owners)
			}
			if r.Verdict.State != StateStuck {
				t.Errorf("verdict %s", r.Verdict.State)
			}
		})
	}
}

// A service account refused by the authorizer (its RoleBinding deleted
// first, often) can be granted access cluster-wide: that step comes first.
func TestOwnerForbiddenIsGrantedFirst(t *testing.T) {
	obs := heldWidget("example.com/cleanup")
	obs.Evidence.Holders = []Holder{{Resource: "widgets.example.com", Name: "w", Conditions: []HolderCondition{{Type: "Ready", Status: "False",
		Message: `jobs.batch is forbidden: User "system:serviceaccount:ops:cleaner" cannot create resource "jobs" in API group "batch" in the namespace "demo"`}}}}
	b := blockerOf(t, Diagnose(obs), BlockerOwnerCannotFinish)
	if a := b.Actions[0]; a.Kind != ActionGrantAccess || a.Target != "system:serviceaccount:ops:cleaner" || a.Of != "create jobs" {
		t.Errorf("first action %+v", a)
	}
	// A person refused is not an owner that cannot finish.
	obs.Evidence.Holders[0].Conditions[0].Message = strings.Replace(obs.Evidence.Holders[0].Conditions[0].Message, "system:serviceaccount:ops:cleaner", "alice", 1)
	obs.Grace = 0
	blockerOf(t, Diagnose(obs), BlockerFinalizers)
}

// Nothing refused, within the grace period: not stuck yet; an event about
// another object says nothing of this one.
func TestNoRefusalNoCannotFinish(t *testing.T) {
	obs := heldWidget("example.com/cleanup")
	obs.Evidence.Events = []Event{{Object: "widget/other", Message: "unable to create new content in namespace demo because it is being terminated"}}
	if r := Diagnose(obs); len(r.Blockers) != 0 || r.Finalizers[0].OwnerState.State != OwnerRunningReady {
		t.Errorf("blockers %s, owner %+v", dump(r.Blockers), r.Finalizers[0].OwnerState)
	}
}

// The objects a holder's spec names are present, gone, or unknown when
// their type could not be listed; the gone ones are evidence on the
// blocker, by name.
func TestHolderRefsState(t *testing.T) {
	obs := heldWidget("example.com/cleanup")
	obs.Grace = 0
	obs = with(obs, secrets, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "still-here"}})
	obs.Evidence.Holders = []Holder{{Resource: "widgets.example.com", Name: "w", Refs: []HolderRef{
		{Field: "spec.credentials.secretRef", Kind: RefSecret, Name: "cloud-creds"},
		{Field: "spec.tls.secretName", Kind: RefSecret, Name: "still-here"},
		{Field: "spec.serviceAccountName", Kind: RefServiceAccount, Name: "runner"},
	}}}
	r := Diagnose(obs)
	got := map[string]RefState{}
	for _, ref := range r.Holders[0].Refs {
		got[ref.Name] = ref.State
	}
	if got["cloud-creds"] != RefGone || got["still-here"] != RefPresent || got["runner"] != RefUnknown {
		t.Errorf("states %v", got)
	}
	f := blockerOf(t, r, BlockerFinalizers).Facts.(*FinalizerFacts)
	if len(f.GoneRefs) != 1 || f.GoneRefs[0].Holder != "widgets.example.com/w" || f.GoneRefs[0].Name != "cloud-creds" {
		t.Errorf("gone refs %+v", f.GoneRefs)
	}
	obs = with(obs, serviceAccounts)
	if r := Diagnose(obs); r.Holders[0].Refs[2].State != RefGone {
		t.Errorf("service account listed empty: %+v", r.Holders[0].Refs[2])
	}
}
