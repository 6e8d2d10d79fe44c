package guard

import (
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/owners"
)

// Finding is one predicted blocker of a deletion.
type Finding struct {
	Blocker diagnose.Blocker
	// Sure: deny mode refuses on it (DenyPolicy).
	Sure bool
}

// Policy says when deny mode refuses on a blocker kind: which
// predictions ns-doctor is sure of. This is the one list; docs/guard.md's
// table says the same, and a test keeps them together.
type Policy string

// Policies.
const (
	// PolicyAlways: the kind is only predicted when the deletion cannot
	// finish without someone's action (a backend that is down now).
	PolicyAlways Policy = "always"
	// PolicyBackendDown: only when the API's Service is missing or has
	// no ready endpoint (not for a backend that answers, perhaps for a
	// moment, with errors).
	PolicyBackendDown Policy = "backend down"
	// PolicyOwnerNotRunning: only when a finalizer's owner, known from
	// the catalogue, is not running (none of its workloads, or none
	// ready); an owner ns-doctor cannot tell about is warned about.
	PolicyOwnerNotRunning Policy = "owner not running"
	// PolicyOwnerKnown: when the owner that would go with the namespace is
	// known for sure (the catalogue's found there, or one the cluster
	// names with certainty); a likely one is warned about.
	PolicyOwnerKnown Policy = "owner known for sure"
	// PolicyNever: warned about only; it may clear by itself, or the
	// prediction rests on what ns-doctor cannot be sure of.
	PolicyNever Policy = "never"
)

// DenyPolicy is when deny mode refuses on kind.
func DenyPolicy(kind diagnose.BlockerKind) Policy {
	switch kind {
	case diagnose.BlockerSelfHostedAPIService, diagnose.BlockerWebhook, diagnose.BlockerSelfHostedWebhook, diagnose.BlockerConversionWebhook:
		return PolicyAlways
	case diagnose.BlockerOwnerDeleted:
		return PolicyOwnerKnown
	case diagnose.BlockerAPIServiceUnavailable:
		return PolicyBackendDown
	case diagnose.BlockerFinalizers, diagnose.BlockerCRDDeleting:
		return PolicyOwnerNotRunning
	}
	return PolicyNever
}

// Classify keeps the blockers a deletion would meet, each marked sure or
// not. Content whose finalizers' owners all run (or are the control
// plane) is not a prediction: it goes as the owners do their work.
func Classify(blockers []diagnose.Blocker) []Finding {
	var out []Finding
	for _, b := range blockers {
		if b.Kind == diagnose.BlockerForbidden {
			continue // it hides content; it holds nothing
		}
		states := OwnerStates(b)
		if states != nil && b.Kind != diagnose.BlockerOwnerCannotFinish && allRunning(states) {
			continue
		}
		out = append(out, Finding{Blocker: b, Sure: sure(b, states)})
	}
	return out
}

func sure(b diagnose.Blocker, states map[string]diagnose.OwnerState) bool {
	switch DenyPolicy(b.Kind) {
	case PolicyAlways:
		return true
	case PolicyOwnerKnown:
		for _, s := range states {
			if s.State == diagnose.OwnerDeletedWithNamespace && !known(s) {
				return false
			}
		}
		return true
	case PolicyBackendDown:
		f, ok := b.Facts.(*diagnose.APIServiceFacts)
		return ok && f.Failure.APIService != nil && f.Failure.APIService.Backend != nil && f.Failure.APIService.Backend.Down()
	case PolicyOwnerNotRunning:
		for _, s := range states {
			if (s.State == diagnose.OwnerNotFound || s.State == diagnose.OwnerNotReady) && known(s) {
				return true
			}
		}
	}
	return false
}

// known tells whether an owner is known for sure: the catalogue's, or
// one the cluster itself names with certainty (two sources agreeing). A
// likely owner is warned about, never refused on.
func known(s diagnose.OwnerState) bool {
	return s.Owner != "" || s.Inferred != nil && s.Inferred.Confidence == owners.Certain
}

// OwnerStates are the owner states of a finalizer blocker's finalizers,
// by finalizer (Unknown for one not read); nil for other blockers.
func OwnerStates(b diagnose.Blocker) map[string]diagnose.OwnerState {
	f, ok := b.Facts.(*diagnose.FinalizerFacts)
	if !ok {
		return nil
	}
	out := map[string]diagnose.OwnerState{}
	for name := range f.Content.Finalizers {
		s, read := f.Owners[name]
		if !read {
			s = diagnose.OwnerState{State: diagnose.OwnerUnknown}
		}
		out[name] = s
	}
	return out
}

// allRunning: every owner runs, or is the control plane.
func allRunning(states map[string]diagnose.OwnerState) bool {
	for _, s := range states {
		if s.State != diagnose.OwnerRunningReady && s.State != diagnose.OwnerControlPlane {
			return false
		}
	}
	return len(states) > 0
}
