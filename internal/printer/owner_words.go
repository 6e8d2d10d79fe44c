package printer

import (
	"fmt"
	"strings"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/owners"
)

// The words of an owner inferred from the cluster: who set the finalizer,
// who may remove it, what runs as that, and how sure that is.

// InferredWords says an inference: its confidence, then what it rests on;
// or, when it names nobody, what was looked at.
func InferredWords(in *owners.Inference) string {
	if in.Confidence == owners.None {
		return "the cluster names no owner: " + strings.Join(lookedWords(in), "; ")
	}
	parts := []string{}
	if m := controllerManager(in.SetBy); m != nil {
		parts = append(parts, fieldManagerWords(*m))
	}
	if in.Identity != nil && in.Grant != nil {
		parts = append(parts, fmt.Sprintf("%s may %s it through %s (%s)", in.Identity, in.Grant.Verb, in.Grant.Role, in.Grant.Binding))
		if r := rankWords(in); r != "" {
			parts = append(parts, r)
		}
	}
	switch w := in.Workload; {
	case in.InNamespace && w == nil:
		parts = append(parts, "it lived in this namespace and was deleted with it")
	case in.InNamespace:
		parts = append(parts, fmt.Sprintf("%s runs as it, in this namespace, being deleted with it", w))
	case w != nil && in.Unmatched && in.SetterNowhere:
		parts = append(parts, fmt.Sprintf("%s runs as it (%d/%d ready), but neither its name nor its containers' names or binaries match the field manager that set it, and no workload of the cluster does (%d read: by name, labels or binary): the setter runs nowhere, so nothing removes it", w, w.Ready, w.Want, in.Seen))
	case w != nil && in.Unmatched:
		parts = append(parts, fmt.Sprintf("%s runs as it (%d/%d ready), but neither its name nor its containers' names or binaries match the field manager that set it: that is no evidence that whoever removes it runs", w, w.Ready, w.Want))
	case w != nil && in.Identity != nil:
		parts = append(parts, fmt.Sprintf("%s runs as it: %d/%d ready", w, w.Ready, w.Want))
	case w != nil:
		parts = append(parts, fmt.Sprintf("%s is named as that field manager: %d/%d ready", w, w.Ready, w.Want))
	case in.WorkloadsRead:
		parts = append(parts, "no Deployment, StatefulSet or DaemonSet runs as it")
	}
	if in.OwnerNamespace != "" {
		parts = append(parts, "its namespace is "+strings.ToLower(in.OwnerNamespace))
	}
	if !in.RBACRead {
		parts = append(parts, "RBAC could not be read: who may remove it is unchecked")
	}
	if o := in.Object; o != nil {
		parts = append(parts, objectWords(*o))
	}
	if p := in.Pointed; p != nil {
		parts = append(parts, pointedWords(*p))
	}
	if len(parts) == 0 {
		return strings.ToLower(string(in.Confidence)) + " owner"
	}
	return strings.ToLower(string(in.Confidence)) + " owner: " + strings.Join(parts, "; ")
}

// lookedWords say what an inference that names nobody looked at.
func lookedWords(in *owners.Inference) []string {
	var out []string
	switch {
	case len(in.SetBy) == 0:
		out = append(out, "no field manager recorded setting it")
	default:
		for _, m := range in.SetBy {
			out = append(out, fieldManagerWords(m))
		}
	}
	if len(in.OneOf) > 0 {
		out = append(out, oneOfWords(in.OneOf))
	}
	switch {
	case !in.RBACRead:
		out = append(out, "RBAC could not be read")
	case in.CandidateCount == 0:
		out = append(out, "no ServiceAccount may remove it but through wildcard or built-in roles")
	default:
		var names []string
		for _, c := range in.Candidates {
			names = append(names, c.String())
		}
		line := fmt.Sprintf("%d identities may remove it, none set it", in.CandidateCount)
		if len(names) > 0 && len(in.OneOf) == 0 {
			line += ": " + strings.Join(names, ", ")
			if n := in.CandidateCount - len(in.Candidates); n > 0 {
				line += fmt.Sprintf(" and %d more", n)
			}
		}
		out = append(out, line)
	}
	if o := in.Object; o != nil {
		out = append(out, objectWords(*o))
	}
	return out
}

// maxAffinityWords bounds the names said to carry a finalizer's domain.
const maxAffinityWords = 3

// rankWords say why RBAC's identity was ranked first when no field manager
// names it: how narrowly its grant names the resource, and what else marks
// it as the owner. Empty when a field manager names it (that says more),
// or when it was the only one and nothing marks it.
func rankWords(in *owners.Inference) string {
	if in.Confidence != owners.Likely || in.Grant == nil {
		return ""
	}
	var why []string
	switch in.Grant.Scope {
	case owners.ScopeResource:
		why = append(why, "its grant names the held resource itself")
	case owners.ScopeGroup:
		why = append(why, "its grant names the held resource's API group")
	}
	if in.FinalizersGrant {
		why = append(why, "it may update their finalizers subresource")
	}
	if in.WritesAPI {
		why = append(why, "it writes the finalizer's own API")
	}
	if len(in.Affinity) > 0 {
		names, more := firstN(in.Affinity, maxAffinityWords)
		line := "its names carry the finalizer's domain: " + strings.Join(names, ", ")
		if more > 0 {
			line += fmt.Sprintf(" and %d more", more)
		}
		why = append(why, line)
	}
	if len(why) == 0 {
		return ""
	}
	head := "the only identity that may remove it"
	if in.CandidateCount > 1 {
		head = fmt.Sprintf("ranked first of %d identities that may remove it", in.CandidateCount)
	}
	return head + ": " + strings.Join(why, ", ")
}

// oneOfWords say the identities ranked first together: the owner is
// likely one of them, and nothing tells which.
func oneOfWords(s []owners.Subject) string {
	names := make([]string, 0, len(s))
	for _, x := range s {
		names = append(names, x.String())
	}
	return "likely one of " + strings.Join(names, ", ") + ": their grants rank alike, and nothing tells them apart"
}

func firstN(s []string, n int) ([]string, int) {
	if len(s) > n {
		return s[:n], len(s) - n
	}
	return s, 0
}

func fieldManagerWords(m owners.Manager) string {
	s := fmt.Sprintf("set by field manager %q", m.Name)
	if m.Object != "" {
		s += " on " + m.Object
	}
	if m.Time != nil {
		s += " (its last write " + m.Time.UTC().Format(time.RFC3339) + ")"
	}
	if m.Applier {
		s += ", a tool that applies manifests: the finalizer came with one, and someone else removes it"
	}
	return s
}

// controllerManager is the first field manager that is not an applier.
func controllerManager(ms []owners.Manager) *owners.Manager {
	for k := range ms {
		if !ms[k].Applier {
			return &ms[k]
		}
	}
	return nil
}

func objectWords(o owners.Object) string {
	what := fmt.Sprintf("the namespace's owner %s %s (%s)", o.Kind, o.Name, o.APIVersion)
	switch o.State {
	case owners.ObjectGone:
		return what + " is gone: whatever removed the finalizer for it is done with it"
	case owners.ObjectDeleting:
		return what + " is being deleted"
	case owners.ObjectUnknown:
		return what + " could not be read"
	}
	return what + " is there"
}

// pointedWords say what was found of the object a namespace finalizer's
// name points to, and what follows for its writer, which runs.
func pointedWords(p owners.Pointed) string {
	switch p.State {
	case owners.ObjectGone:
		return fmt.Sprintf("its name points to an object of %s (%s), and none is there: the object it was put there for is gone, so its writer will not remove it",
			strings.Join(p.Looked, ", "), strings.Join(p.Names, ", "))
	case owners.ObjectNotFound:
		return fmt.Sprintf("no object of %s is named as in its name (%s)", strings.Join(p.Looked, ", "), strings.Join(p.Names, ", "))
	case owners.ObjectUnknown:
		return "the object its name points to (" + strings.Join(p.Looked, ", ") + ") could not be read"
	}
	what := "its name points to " + p.Object + ", "
	if p.State == owners.ObjectDeleting {
		what += "being deleted, "
	}
	switch p.Selection {
	case owners.NoLongerSelects:
		return what + "which no longer selects this namespace (" + p.Field + "): its controller will not clean up here, and nothing will remove it"
	case owners.Selects:
		return what + "which still selects this namespace (" + p.Field + "): its controller should remove it; its log and the object's status conditions say why it does not"
	}
	return what + "which is there (its spec names no namespace selector): its controller should remove it; its log and the object's status conditions say why it does not"
}

// inferredDiffers tells whether the inferred owner's workload is another
// than the catalogue's usual ones: an install that renamed or moved it.
func inferredDiffers(s diagnose.OwnerState) bool {
	in := s.Inferred
	if in == nil || in.Workload == nil || in.Confidence == owners.None || s.Owner == "" {
		return false
	}
	w := in.Workload
	refs := s.Looked
	if s.Found != nil {
		refs = append(refs, s.Found.WorkloadRef)
	}
	for _, r := range refs {
		if r.Kind == w.Kind && r.Namespace == w.Namespace && r.Name == w.Name {
			return false
		}
	}
	return len(refs) > 0
}

// ownerName names an owner for a summary: the catalogue's, else the
// inferred workload or identity (as the OWNER column does).
func ownerName(name string, s diagnose.OwnerState) string {
	if e := s.Owner; e != "" {
		return e
	}
	if o := s.InferredOwner(); o != "" {
		return o
	}
	return "unknown owner of " + name
}

// inferredMark says where an owner or its state comes from when the
// inference found it: "inferred, certain".
func inferredMark(in *owners.Inference) string {
	return "inferred, " + strings.ToLower(string(in.Confidence))
}

// waitedWords says how long content has waited, for the verdict on an
// owner that runs and releases none of it.
func waitedWords(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return " in " + d.String() + " since they were marked for deletion"
}

// likelyWord is "likely " when what says the owners of these finalizers
// went with the namespace is only a likely inference: the words then do
// not state as certain what the cluster only suggests.
func likelyWord(states map[string]diagnose.OwnerState, finalizers []string) string {
	for _, f := range finalizers {
		if in := states[f].Inferred; in != nil && in.InNamespace && in.Confidence == owners.Likely {
			return "likely "
		}
	}
	return ""
}
