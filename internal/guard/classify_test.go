package guard

import (
	"testing"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/owners"
)

// finalizerBlocker holds content for finalizers whose owners, from the
// catalogue, are in the states given ("": not read).
func finalizerBlocker(kind diagnose.BlockerKind, states map[string]diagnose.OwnerRunning) diagnose.Blocker {
	f := &diagnose.FinalizerFacts{Content: diagnose.Content{Resource: "configmaps", Finalizers: map[string]int{}}, Owners: map[string]diagnose.OwnerState{}}
	for name, s := range states {
		f.Content.Finalizers[name] = 1
		if s != "" {
			f.Owners[name] = diagnose.OwnerState{State: s, Owner: "the catalogue's " + name}
		}
	}
	return diagnose.Blocker{Kind: kind, Facts: f}
}

// inferred is a finalizer blocker whose only owner the cluster names,
// with confidence c, not running.
func inferred(c owners.Confidence) diagnose.Blocker {
	b := finalizerBlocker(diagnose.BlockerFinalizers, map[string]diagnose.OwnerRunning{"x.io/y": diagnose.OwnerNotReady})
	f := b.Facts.(*diagnose.FinalizerFacts)
	f.Owners["x.io/y"] = diagnose.OwnerState{State: diagnose.OwnerNotReady, Inferred: &owners.Inference{Confidence: c}}
	return b
}

func apiServiceBlocker(backend *diagnose.ServiceState) diagnose.Blocker {
	return diagnose.Blocker{Kind: diagnose.BlockerAPIServiceUnavailable, Facts: &diagnose.APIServiceFacts{Failure: diagnose.DiscoveryFailure{
		GroupVersion: "example.com/v1", APIService: &diagnose.APIService{Name: "v1.example.com", Service: "default/x", Backend: backend}}}}
}

// goneWith is an owner-deleted blocker whose only owner the cluster
// names, with confidence c, living in the namespace.
func goneWith(c owners.Confidence) diagnose.Blocker {
	b := finalizerBlocker(diagnose.BlockerOwnerDeleted, map[string]diagnose.OwnerRunning{"x.io/y": diagnose.OwnerDeletedWithNamespace})
	f := b.Facts.(*diagnose.FinalizerFacts)
	f.Owners["x.io/y"] = diagnose.OwnerState{State: diagnose.OwnerDeletedWithNamespace, Inferred: &owners.Inference{Confidence: c, InNamespace: true}}
	return b
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		name    string
		blocker diagnose.Blocker
		kept    bool
		sure    bool
	}{
		{"an owner not running", finalizerBlocker(diagnose.BlockerFinalizers, map[string]diagnose.OwnerRunning{"a/b": diagnose.OwnerNotFound}), true, true},
		{"an owner not ready", finalizerBlocker(diagnose.BlockerCRDDeleting, map[string]diagnose.OwnerRunning{"a/b": diagnose.OwnerNotReady}), true, true},
		{"an owner not known", finalizerBlocker(diagnose.BlockerFinalizers, map[string]diagnose.OwnerRunning{"a/b": ""}), true, false},
		{"an owner not checked", finalizerBlocker(diagnose.BlockerFinalizers, map[string]diagnose.OwnerRunning{"a/b": diagnose.OwnerNotChecked}), true, false},
		{"owners at work", finalizerBlocker(diagnose.BlockerFinalizers, map[string]diagnose.OwnerRunning{"a/b": diagnose.OwnerRunningReady, "kubernetes.io/pvc-protection": diagnose.OwnerControlPlane}), false, false},
		{"one at work, one gone", finalizerBlocker(diagnose.BlockerFinalizers, map[string]diagnose.OwnerRunning{"a/b": diagnose.OwnerRunningReady, "c/d": diagnose.OwnerNotFound}), true, true},
		{"an owner the cluster names for sure, not running", inferred(owners.Certain), true, true},
		{"an owner the cluster likely names, not running", inferred(owners.Likely), true, false},
		{"an owner deleted with the namespace", diagnose.Blocker{Kind: diagnose.BlockerOwnerDeleted, Facts: &diagnose.FinalizerFacts{}}, true, true},
		{"a catalogued owner in the namespace", finalizerBlocker(diagnose.BlockerOwnerDeleted, map[string]diagnose.OwnerRunning{"a/b": diagnose.OwnerDeletedWithNamespace}), true, true},
		{"an owner the cluster names for sure in the namespace", goneWith(owners.Certain), true, true},
		{"an owner the cluster likely names in the namespace", goneWith(owners.Likely), true, false},
		{"an owner that cannot finish", finalizerBlocker(diagnose.BlockerOwnerCannotFinish, map[string]diagnose.OwnerRunning{"a/b": diagnose.OwnerRunningReady}), true, false},
		{"an APIService whose Service is missing", apiServiceBlocker(&diagnose.ServiceState{}), true, true},
		{"an APIService whose backend answers", apiServiceBlocker(&diagnose.ServiceState{Exists: true, ReadyEndpoints: 2}), true, false},
		{"an APIService whose Service cannot be read", apiServiceBlocker(&diagnose.ServiceState{Unknown: true}), true, false},
		{"a fail-closed webhook, backend down", diagnose.Blocker{Kind: diagnose.BlockerWebhook, Facts: &diagnose.WebhookFacts{}}, true, true},
		{"a conversion webhook down", diagnose.Blocker{Kind: diagnose.BlockerConversionWebhook, Facts: &diagnose.ListFacts{}}, true, true},
		{"pods past their grace", diagnose.Blocker{Kind: diagnose.BlockerPods, Facts: &diagnose.PodFacts{}}, true, false},
		{"a namespace finalizer", diagnose.Blocker{Kind: diagnose.BlockerNamespaceFinalizer, Facts: &diagnose.NamespaceFinalizerFacts{}}, true, false},
		{"a list that fails", diagnose.Blocker{Kind: diagnose.BlockerListFailed, Facts: &diagnose.ListFacts{}}, true, false},
		{"a list forbidden to the guard", diagnose.Blocker{Kind: diagnose.BlockerForbidden, Facts: &diagnose.ListFacts{}}, false, false},
	} {
		got := Classify([]diagnose.Blocker{c.blocker})
		if kept := len(got) == 1; kept != c.kept || kept && got[0].Sure != c.sure {
			t.Errorf("%s: %+v, want kept=%v sure=%v", c.name, got, c.kept, c.sure)
		}
	}
}

// Every blocker kind has a policy, and the kinds deny may refuse on are
// exactly those the docs name.
func TestEveryKindHasAPolicy(t *testing.T) {
	seen := map[Policy]int{}
	for _, k := range diagnose.BlockerKinds() {
		seen[DenyPolicy(k)]++
	}
	if seen[PolicyAlways] != 4 || seen[PolicyBackendDown] != 1 || seen[PolicyOwnerNotRunning] != 2 || seen[PolicyOwnerKnown] != 1 {
		t.Errorf("policies %v", seen)
	}
}
