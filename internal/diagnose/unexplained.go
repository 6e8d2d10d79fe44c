package diagnose

import (
	"maps"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/apierror"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
)

// The controller's word against ns-doctor's: when the namespace
// controller's last pass says it failed (its discovery, its parsing of
// group-versions, its deletion of content) and ns-doctor's own pass over
// what it sees does not, the namespace is not said to be on its way. The
// controller's message is evidence: a type whose deletion fails here and
// whose list fails across namespaces (a custom resource whose conversion
// webhook is down fails in every namespace, even one that holds none of
// it) is the cause found, told as that type's blocker; else what could
// not be explained is a blocker of its own. Conditions that count what
// remains are the controller's last count, which the content's going
// since explains: they are no failure.

// failureConditions are the conditions whose True says a pass failed.
var failureConditions = map[string]bool{
	string(v1.NamespaceDeletionDiscoveryFailure): true,
	string(v1.NamespaceDeletionGVParsingFailure): true,
	string(v1.NamespaceDeletionContentFailure):   true,
}

// unexplainedBlockers are the blockers of the controller's failures that
// ns-doctor's own pass does not reproduce: the cause found across
// namespaces, or the failure as unexplained.
func unexplainedBlockers(obs Observation, r Report) []Blocker {
	if r.Ordering.OtherMatches {
		// The other deletion order explains the difference.
		return nil
	}
	var out []Blocker
	for _, c := range r.Conditions {
		if !failureConditions[c.Type] || c.Controller == nil || c.Controller.Status != string(v1.ConditionTrue) {
			continue
		}
		if c.Computed != nil && c.Computed.Status == string(v1.ConditionTrue) {
			// ns-doctor sees a failure too: its blockers say which.
			continue
		}
		if c.Type == string(v1.NamespaceDeletionContentFailure) {
			if quotesController(r.Blockers) {
				continue
			}
			if found := probedCauses(obs, r.Namespace.Name, c.Controller.Message); len(found) > 0 {
				out = append(out, found...)
				continue
			}
		}
		out = append(out, unexplainedBlocker(obs, r.Namespace.Name, c))
	}
	return out
}

// quotesController tells whether blockers were read from the
// controller's own message (a webhook's or a policy's denial, which no
// pass can predict): they explain its failure.
func quotesController(blockers []Blocker) bool {
	for _, b := range blockers {
		switch f := b.Facts.(type) {
		case *DenialFacts:
			if f.Source == DeniedController {
				return true
			}
		case *RescueHoldFacts:
			return true
		}
	}
	return false
}

// probedCauses are the blockers of the probed types whose list fails
// across namespaces, each told as the type's own blocker would be, with
// the controller's words beside it.
func probedCauses(obs Observation, namespace, message string) []Blocker {
	var out []Blocker
	for _, p := range obs.Probes {
		if p.Err == nil || isForbidden(p.Err) || notSupported(p.Err) {
			continue
		}
		elsewhere := obs
		snap := *obs.Snapshot
		snap.ListErrs = maps.Clone(obs.Snapshot.ListErrs)
		if snap.ListErrs == nil {
			snap.ListErrs = map[schema.GroupVersionResource]error{}
		}
		snap.ListErrs[p.Resource] = p.Err
		elsewhere.Snapshot = &snap
		c := Content{Group: p.Resource.Group, Version: p.Resource.Version, Resource: p.Resource.Resource, Error: p.Err.Error()}
		b, ok := listErrorBlocker(elsewhere, c, p.Resource, namespace)
		if !ok {
			continue
		}
		if f, ok := b.Facts.(*ListFacts); ok {
			f.Elsewhere, f.Controller = true, message
			f.Unreadable = keyedObjects(apierror.StorageKeys(p.Err.Error()))
		}
		if b.Kind == BlockerListFailed && len(b.Actions) > 0 && b.Actions[0].Kind == ActionGetResource {
			b.Actions[0].Kind = ActionGetResourceEverywhere
		}
		out = append(out, b)
	}
	return out
}

// keyedObjects are the namespace/name of the storage keys of namespaced
// objects (/registry/<group>/<resource>/<namespace>/<name>), the first
// few.
func keyedObjects(keys []string) []string {
	var out []string
	for _, k := range keys {
		parts := strings.Split(strings.TrimSuffix(k, "/"), "/")
		if len(parts) >= 5 && len(out) < MaxExamples {
			out = append(out, parts[len(parts)-2]+"/"+parts[len(parts)-1])
		}
	}
	return out
}

// unexplainedBlocker is a failure of the controller's that ns-doctor
// could not explain: the server's own answers to the controller's
// requests (a server dry run sends them) and the controller's log say
// what fails.
func unexplainedBlocker(obs Observation, namespace string, c Condition) Blocker {
	f := &UnexplainedFacts{Condition: c.Type, Controller: *c.Controller, Computed: c.Computed}
	for _, p := range obs.Probes {
		if p.Err == nil {
			f.Probed = append(f.Probed, deletion.ResourceName(p.Resource))
		}
	}
	return Blocker{Kind: BlockerUnexplainedFailure, Subject: c.Type, Facts: f, Actions: []Action{
		{Kind: ActionServerDryRun, Namespace: namespace},
		{Kind: ActionControllerLogs, Namespace: namespace},
	}}
}
