package diagnose

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// staleGap is how much older than a holder's deletion its setter's last
// write must be for ns-doctor to say the owner is not acting on it: a
// controller that reconciles it writes it (its status, at least) as it
// goes, and one that just set its finalizer has not had its turn.
const staleGap = 10 * time.Minute

// stallOf says why a running owner will not release the holders of gvr,
// however long one waits: a holder says what the owner waits for does not
// exist; or the field manager that set the finalizer last wrote every
// holder read long before its deletion, and none since. Nil when nothing
// says so, or when any holder read was written since its deletion (its
// owner is acting on it).
func stallOf(obs Observation, gvr schema.GroupVersionResource, facts *FinalizerFacts) *Stall {
	for k := range facts.Said {
		if s := facts.Said[k]; s.Missing {
			return &Stall{Cause: StallWaitsOnMissing, Said: &s}
		}
	}
	setters := settersOf(facts.Owners)
	if len(setters) == 0 {
		return nil
	}
	res := resourceName(gvr)
	deleted := deletionsOf(obs, gvr)
	var stall *Stall
	for _, h := range obs.Evidence.Writes {
		at, held := deleted[h.Name]
		if h.Resource != res || !held {
			continue
		}
		manager, last := latestOf(h.Last, setters)
		switch {
		case last.IsZero():
			continue
		case !last.Before(at) || at.Sub(last) < staleGap:
			// Written since its deletion, or just before it: acting, or
			// not yet had its turn.
			return nil
		case stall == nil || last.After(stall.LastWrite):
			stall = &Stall{Cause: StallNoWriteSinceDeletion, Object: res + "/" + h.Name, Manager: manager, LastWrite: last, Deleted: at}
		}
	}
	return stall
}

// settersOf are the field managers that set the finalizers, as the owners'
// inference read them.
func settersOf(states map[string]OwnerState) map[string]bool {
	out := map[string]bool{}
	for _, s := range states {
		if s.Inferred == nil {
			continue
		}
		for _, m := range s.Inferred.SetBy {
			if !m.Applier {
				out[m.Name] = true
			}
		}
	}
	return out
}

// deletionsOf are when each held object of gvr was marked for deletion.
func deletionsOf(obs Observation, gvr schema.GroupVersionResource) map[string]time.Time {
	out := map[string]time.Time{}
	if list := obs.Snapshot.Lists[gvr]; list != nil {
		for _, item := range list.Items {
			if item.DeletionTimestamp != nil && len(item.Finalizers) > 0 {
				out[item.Name] = item.DeletionTimestamp.Time
			}
		}
	}
	return out
}

// latestOf is the latest write of any of the managers.
func latestOf(last map[string]time.Time, managers map[string]bool) (string, time.Time) {
	var (
		who string
		at  time.Time
	)
	for m, t := range last {
		if managers[m] && t.After(at) {
			who, at = m, t
		}
	}
	return who, at
}

// stallActions: waiting will not help, so the step acts: what the holder
// says is missing restored, or the finalizers stripped; the owner's log
// says why it stalled.
func stallActions(namespace, subject string, s *Stall, logs Action) []Action {
	strip := PurgeAction(namespace, FlagRemoveFinalizers, subject)
	if s.Cause == StallWaitsOnMissing {
		return []Action{{Kind: ActionRestoreMissing, Namespace: namespace, Target: s.Said.Object, Of: s.Said.Message}, strip, logs}
	}
	return []Action{strip, logs}
}
