package diagnose

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/apierror"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
)

// An owner that runs but cannot finish: its cleanup must write something
// the API server refuses for as long as the namespace terminates, so
// waiting never helps. The holders say so in their own status, in the
// words of the refusal they got.

// CannotFinishCause is why an owner's cleanup is refused.
type CannotFinishCause string

// Causes of an owner that cannot finish.
const (
	// CauseNamespaceTerminating: it must create something in the
	// namespace, which a terminating namespace refuses.
	CauseNamespaceTerminating CannotFinishCause = "NamespaceTerminating"
	// CauseForbidden: its service account was refused (its RoleBinding
	// went first, often).
	CauseForbidden CannotFinishCause = "Forbidden"
)

// CannotFinish is one holder's word that its owner's cleanup was refused.
type CannotFinish struct {
	// Object is the holder, resource/name.
	Object string
	// Source is where it says so: "condition Synced=False" or "event
	// CannotDelete".
	Source  string
	Cause   CannotFinishCause
	Message string
	// User, Verb and Resource are the refusal's, for CauseForbidden.
	User, Verb, Resource string
}

// cannotFinishOf gathers what the holders of one type say, in their
// status conditions and in the namespace's Warning events about them.
func cannotFinishOf(obs Observation, gvr schema.GroupVersionResource) []CannotFinish {
	res := resourceName(gvr)
	var out []CannotFinish
	for _, h := range obs.Evidence.Holders {
		if h.Resource != res {
			continue
		}
		for _, c := range h.Conditions {
			if cf, ok := refusal(c.Message); ok {
				cf.Object, cf.Source = res+"/"+h.Name, "condition "+c.Named()
				out = append(out, cf)
			}
		}
	}
	out = append(out, loggedRefusals(obs, gvr)...)
	held := heldNames(obs.Snapshot, gvr)
	for _, e := range obs.Evidence.Events {
		_, name, _ := strings.Cut(e.Object, "/")
		if !held[name] {
			continue
		}
		if cf, ok := refusal(e.Message); ok {
			cf.Object, cf.Source = res+"/"+name, "event "+e.Reason
			out = append(out, cf)
		}
	}
	return out
}

// loggedRefusals are the refusals the running owners of a type's
// finalizers logged about this namespace, one per pod: the owner says it
// in its log when it says nothing in the holders' status.
func loggedRefusals(obs Observation, gvr schema.GroupVersionResource) []CannotFinish {
	held := heldFinalizers(obs.Snapshot, gvr)
	var out []CannotFinish
	for _, l := range obs.Evidence.OwnerLogs {
		if !held[l.Finalizer] {
			continue
		}
		for _, line := range l.Lines {
			if !strings.Contains(line, obs.Namespace.Name) {
				continue
			}
			if cf, ok := refusal(line); ok {
				cf.Object, cf.Source = "pod/"+l.Pod, "log of container "+l.Container
				out = append(out, cf)
				break
			}
		}
	}
	return out
}

// heldFinalizers are the finalizers a type's objects carry.
func heldFinalizers(snap *deletion.Snapshot, gvr schema.GroupVersionResource) map[string]bool {
	out := map[string]bool{}
	if list := snap.Lists[gvr]; list != nil {
		for _, item := range list.Items {
			for _, f := range item.Finalizers {
				out[f] = true
			}
		}
	}
	return out
}

// refusal reads a message for a refusal an owner cannot get past: a
// create in the terminating namespace, or its service account refused.
func refusal(message string) (CannotFinish, bool) {
	e := apierror.ClassifyMessage(message)
	switch {
	case e.Kind == apierror.NamespaceTerminating:
		return CannotFinish{Cause: CauseNamespaceTerminating, Message: message}, true
	case e.Kind == apierror.Forbidden && strings.HasPrefix(e.User, "system:serviceaccount:"):
		return CannotFinish{Cause: CauseForbidden, Message: message, User: e.User, Verb: e.Verb, Resource: e.QualifiedResource()}, true
	}
	return CannotFinish{}, false
}

// heldNames are the names of the objects of a type that finalizers hold.
func heldNames(snap *deletion.Snapshot, gvr schema.GroupVersionResource) map[string]bool {
	out := map[string]bool{}
	if list := snap.Lists[gvr]; list != nil {
		for _, item := range list.Items {
			if len(item.Finalizers) > 0 {
				out[item.Name] = true
			}
		}
	}
	return out
}

// refGVRs are where the objects a holder may refer to are listed.
var refGVRs = map[RefKind]schema.GroupVersionResource{
	RefSecret:         {Version: "v1", Resource: "secrets"},
	RefConfigMap:      {Version: "v1", Resource: "configmaps"},
	RefServiceAccount: {Version: "v1", Resource: "serviceaccounts"},
}

// holdersOf are the holders with the state of each object they refer to,
// from the namespace's content as swept.
func holdersOf(obs Observation) []Holder {
	out := make([]Holder, 0, len(obs.Evidence.Holders))
	for _, h := range obs.Evidence.Holders {
		if len(h.Refs) > 0 {
			refs := make([]HolderRef, len(h.Refs))
			for i, ref := range h.Refs {
				ref.State = refState(obs.Snapshot, ref)
				refs[i] = ref
			}
			h.Refs = refs
		}
		out = append(out, h)
	}
	return out
}

func refState(snap *deletion.Snapshot, ref HolderRef) RefState {
	list := snap.Lists[refGVRs[ref.Kind]]
	if list == nil {
		return RefUnknown
	}
	for _, item := range list.Items {
		if item.Name == ref.Name {
			return RefPresent
		}
	}
	return RefGone
}

// goneRefsOf are the references of a type's holders to objects now gone.
func goneRefsOf(holders []Holder, res string) []GoneRef {
	var out []GoneRef
	for _, h := range holders {
		if h.Resource != res {
			continue
		}
		for _, ref := range h.Refs {
			if ref.State == RefGone {
				out = append(out, GoneRef{Holder: res + "/" + h.Name, HolderRef: ref})
			}
		}
	}
	return out
}

// cannotFinishActions are the steps, in order, for an owner that cannot
// finish: a refused service account can be granted access cluster-wide;
// otherwise what it guards is cleaned up by hand, then its finalizers go.
func cannotFinishActions(namespace, finalizers string, cfs []CannotFinish) []Action {
	var out []Action
	for _, cf := range cfs {
		if cf.Cause == CauseForbidden {
			out = append(out, Action{Kind: ActionGrantAccess, Namespace: namespace, Target: cf.User, Of: cf.Verb + " " + cf.Resource})
			break
		}
	}
	return append(out, Action{Kind: ActionCleanUpByHand, Namespace: namespace, Target: finalizers},
		PurgeAction(namespace, FlagRemoveFinalizers, finalizers))
}

// markCannotFinish says so of the owners of the finalizers an
// OwnerCannotFinish blocker names, where they were seen running.
func markCannotFinish(infos []FinalizerInfo, blockers []Blocker) {
	stuck := map[string]bool{}
	for _, b := range blockers {
		if f, ok := b.Facts.(*FinalizerFacts); ok && b.Kind == BlockerOwnerCannotFinish {
			for name := range f.Content.Finalizers {
				stuck[name] = true
				if s, ok := f.Owners[name]; ok && s.State == OwnerRunningReady {
					s.State = OwnerRunningCannotFinish
					f.Owners[name] = s
				}
			}
		}
	}
	for i := range infos {
		if stuck[infos[i].Name] && infos[i].OwnerState.State == OwnerRunningReady {
			infos[i].OwnerState.State = OwnerRunningCannotFinish
		}
	}
}
