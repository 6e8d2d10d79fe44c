package backup

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Plan is what restoring a folder into a namespace does, in order: what is
// applied, each with its row's reason and what the row changes, then what
// is left out and why. It reads no cluster: the facts of the cluster it
// needs come in its Context.
type Plan struct {
	Dir string `json:"dir"`
	// From is the namespace saved; Into the one restored into (another
	// one: a clone).
	From string `json:"from"`
	Into string `json:"into"`
	// Steps are every saved object: first those applied, in the order
	// they are, then those left out.
	Steps []Step `json:"steps"`
	// Notes are what holds for every object (status is not restored).
	Notes []string `json:"notes"`
}

// Step is one saved object in a plan.
type Step struct {
	Entry
	Verdict Verdict `json:"verdict"`
	// Rule is the restore table's row that decided it, Why its reason.
	Rule string `json:"rule"`
	Why  string `json:"why"`
	// Notes say what the row changed on this object.
	Notes []string `json:"notes,omitempty"`
	// Object is what is applied (owner references still with the saved
	// owners' uids: the restore maps them to the new owners').
	Object *unstructured.Unstructured `json:"-"`
}

// Clone tells whether the plan restores into another namespace.
func (p *Plan) Clone() bool { return p.From != p.Into }

// Restored counts the steps applied.
func (p *Plan) Restored() int {
	n := 0
	for _, s := range p.Steps {
		if s.Verdict == Restore {
			n++
		}
	}
	return n
}

// StatusNote says for every plan what a restore never brings back.
const StatusNote = "status is not restored: each object's controller writes it anew (a Job runs again; a custom resource's status is its operator's)"

// MakePlan decides every object of the folder with the restore table, and
// orders those applied: by Order, and each right after the owners the
// restore brings back. into is the namespace to restore into; in carries
// the cluster's facts (Clone and Restored are set here).
func MakePlan(f *Folder, into string, in Context) *Plan {
	p := &Plan{Dir: f.Dir, From: f.Manifest.Namespace, Into: into, Steps: []Step{}, Notes: []string{StatusNote}}
	in.Clone, in.From, in.Into = p.Clone(), p.From, p.Into
	steps := decideAll(f.Objects, in)
	var restore, leave []Step
	for _, s := range steps {
		if s.Verdict == Restore {
			restore = append(restore, s)
		} else {
			leave = append(leave, s)
		}
	}
	byType := func(a, b Step) int {
		return cmp.Or(compareTypes(a.GroupResource(), b.GroupResource()), cmp.Compare(a.Name, b.Name))
	}
	slices.SortFunc(restore, byType)
	slices.SortFunc(leave, byType)
	p.Steps = append(ownersFirst(restore), leave...)
	return p
}

// decideAll decides each object, knowing which owners come back: an
// object whose owner is left out may be left out in turn, so the set of
// restored uids is narrowed until it holds still.
func decideAll(objs []SavedObject, in Context) []Step {
	in.Restored = map[string]bool{}
	for _, o := range objs {
		if o.UID != "" {
			in.Restored[o.UID] = true
		}
	}
	for {
		steps := make([]Step, 0, len(objs))
		restored := map[string]bool{}
		for _, o := range objs {
			obj := o.Object.DeepCopy()
			obj.SetOwnerReferences(o.Owners)
			d := Decide(o.GroupResource(), obj, in)
			steps = append(steps, Step{Entry: o.Entry, Verdict: d.Verdict, Rule: d.Rule, Why: d.Why, Notes: d.Notes, Object: d.Object})
			if d.Verdict == Restore && o.UID != "" {
				restored[o.UID] = true
			}
		}
		if len(restored) == len(in.Restored) {
			return steps
		}
		in.Restored = restored
	}
}

// ownersFirst keeps the order given, except that an object comes only
// after every owner of it the plan applies: it is created with their new
// uids.
func ownersFirst(steps []Step) []Step {
	inPlan := map[string]bool{}
	for _, s := range steps {
		if s.UID != "" {
			inPlan[s.UID] = true
		}
	}
	done := map[string]bool{}
	waiting := map[string][]Step{} // by the uid of an owner not applied yet
	out := make([]Step, 0, len(steps))
	var emit func(Step)
	emit = func(s Step) {
		out = append(out, s)
		if s.UID == "" {
			return
		}
		done[s.UID] = true
		next := waiting[s.UID]
		delete(waiting, s.UID)
		for _, w := range next {
			if blocker := pendingOwner(w, inPlan, done); blocker != "" {
				waiting[blocker] = append(waiting[blocker], w)
			} else {
				emit(w)
			}
		}
	}
	for _, s := range steps {
		if blocker := pendingOwner(s, inPlan, done); blocker != "" {
			waiting[blocker] = append(waiting[blocker], s)
			continue
		}
		emit(s)
	}
	// Owners that never came (a cycle no API server admits): the rest
	// follow in their order.
	var rest []Step
	for _, ws := range waiting {
		rest = append(rest, ws...)
	}
	slices.SortFunc(rest, func(a, b Step) int { return cmp.Compare(indexOf(steps, a), indexOf(steps, b)) })
	return append(out, rest...)
}

// pendingOwner is the uid of an owner of s the plan applies and has not
// applied yet, or "".
func pendingOwner(s Step, inPlan, done map[string]bool) string {
	if s.Object == nil {
		return ""
	}
	for _, r := range s.Object.GetOwnerReferences() {
		if inPlan[string(r.UID)] && !done[string(r.UID)] {
			return string(r.UID)
		}
	}
	return ""
}

func indexOf(steps []Step, s Step) int {
	return slices.IndexFunc(steps, func(x Step) bool { return x.File == s.File && x.Name == s.Name })
}
