package purge

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"

	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/finalizers"
)

// --remove-finalizers and --remove-all-finalizers strip finalizers from
// what a pass leaves, each object saved first.
var (
	removeFinalizersEscalation = Escalation{
		Flag: diagnose.FlagRemoveFinalizers, Value: "PATTERNS", Example: "example.com/*",
		Help:      "Escalation: strip these finalizers (globs, e.g. 'example.com/*') from objects the pass leaves",
		Leak:      "whatever each finalizer's owner would have cleaned up (often outside the cluster) is left behind",
		Janitor:   true,
		Conflicts: []string{diagnose.FlagRemoveAllFinalizers},
		check:     checkPatterns,
		consent:   consentStrip,
		answers: func(patterns []string, a diagnose.Action) bool {
			if a.Flag != diagnose.FlagRemoveFinalizers {
				return false
			}
			wanted := strings.Split(a.Value, ",")
			return len(matchFinalizers(patterns, false, wanted)) == len(wanted)
		},
		complete: finalizerValues,
		start:    func(patterns []string) action { return newStripper(patterns, false) },
		snapshot: true,
		changes:  map[ChangeKind]func(Change, string) string{ChangeStrippedFinalizers: strippedWords},
	}
	removeAllFinalizersEscalation = Escalation{
		Flag:      diagnose.FlagRemoveAllFinalizers,
		Help:      "Escalation: strip every finalizer from objects the pass leaves",
		Leak:      "whatever every finalizer's owner would have cleaned up (often outside the cluster) is left behind",
		Conflicts: []string{diagnose.FlagRemoveFinalizers},
		consent:   func([]string) []string { return []string{"and strip every finalizer from what remains"} },
		answers: func(_ []string, a diagnose.Action) bool {
			return a.Flag == diagnose.FlagRemoveFinalizers || a.Flag == diagnose.FlagRemoveAllFinalizers
		},
		start:    func([]string) action { return newStripper(nil, true) },
		snapshot: true,
		changes:  map[ChangeKind]func(Change, string) string{ChangeStrippedFinalizers: strippedWords},
	}
)

// ChangeStrippedFinalizers: --remove-finalizers, --remove-all-finalizers.
const ChangeStrippedFinalizers ChangeKind = "StrippedFinalizers"

// RowStrip: the finalizers removed (or to remove) from one object.
const RowStrip RowKind = "Strip"

// Strip is what a strip's row knows beyond the others: the finalizers.
type Strip struct {
	Finalizers []string `json:"finalizers"`
}

// Of is its row kind.
func (Strip) Of() RowKind { return RowStrip }

func stripOf(r Row) Strip {
	s, _ := r.Extra.(Strip)
	return s
}

// Why a strip was not sent.
const (
	StripNothingLeft = "NothingLeft" // no matching finalizer was left on it
	StripLeftAlone   = "LeftAlone"   // a live controller put the finalizer back: not fought
)

var stripShape = Shape{
	Kind: RowStrip, Section: "strips", Key: "finalizer_strips", Short: "STRIPS",
	Title: "Finalizers to remove (escalation)",
	Columns: []Column{
		{"RESOURCE", func(r Row) []string { return []string{r.Resource} }},
		{"NAME", func(r Row) []string { return []string{r.Name} }},
		{"FINALIZERS", func(r Row) []string { return stripOf(r).Finalizers }},
	},
	Counted: "%d finalizer removal(s)", Done: "Removed",
	Extra: Strip{}, Changes: []ChangeKind{ChangeStrippedFinalizers},
	Units: func(r Row) int { return len(stripOf(r).Finalizers) }, UnitWords: " of %d finalizer(s)",
	Result: func(r Row) string {
		switch {
		case r.Why == StripNothingLeft:
			return "no matching finalizer left"
		case r.Why == StripLeftAlone:
			return "left alone: put back by a live controller"
		case r.Status == RowPlanned:
			return "would remove"
		case r.Status == RowDone:
			return "removed"
		case r.Status == RowGone:
			return "gone before its finalizers were removed"
		}
		return ""
	},
	Fingerprint: func(r Row) string {
		return fmt.Sprintf("finalizers=%q", sortedCopy(stripOf(r).Finalizers))
	},
	Notes: leakNotes,
}

// leakNotes say what stripping each finalizer leaks, after the table.
func leakNotes(r *Report) []string {
	var out []string
	for _, l := range r.Leaks {
		if l.Owner == "" {
			out = append(out, fmt.Sprintf("stripping %s: unknown owner; what it guards is not known", l.Finalizer))
			continue
		}
		out = append(out, fmt.Sprintf("stripping %s (owner: %s) leaks: %s", l.Finalizer, l.Owner, l.Leak))
	}
	return out
}

func sortedCopy(list []string) []string {
	out := slices.Clone(list)
	slices.Sort(out)
	return out
}

func strippedWords(c Change, _ string) string {
	return fmt.Sprintf("removed finalizers %v from %s/%s", c.Finalizers, c.Resource, c.Name)
}

func checkPatterns(patterns []string) error {
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("invalid %s pattern %q: %v", diagnose.FlagRemoveFinalizers, p, err)
		}
	}
	return nil
}

// consentStrip names the patterns, and what stripping each catalogued
// finalizer they match leaks.
func consentStrip(patterns []string) []string {
	out := []string{fmt.Sprintf("and strip finalizers %s from what remains", strings.Join(patterns, ", "))}
	all, _ := finalizers.Catalogue()
	for _, e := range all {
		for _, p := range patterns {
			if ok, _ := path.Match(p, e.Finalizer); ok || p == e.Finalizer {
				out = append(out, fmt.Sprintf("  stripping %s (owner: %s) leaks: %s", e.Finalizer, e.Owner, e.Leak))
				break
			}
		}
	}
	return out
}

// finalizerValues are the finalizers on the namespace's objects, the most
// common first, each with how many objects carry it.
func finalizerValues(obs diagnose.Observation) []Value {
	counts := map[string]int{}
	for _, list := range obs.Snapshot.Lists {
		if list == nil {
			continue
		}
		for _, item := range list.Items {
			for _, f := range item.Finalizers {
				counts[f]++
			}
		}
	}
	out := make([]Value, 0, len(counts))
	for f, n := range counts {
		out = append(out, Value{f, fmt.Sprintf("on %d object%s", n, plural(n))})
	}
	sort.Slice(out, func(i, j int) bool {
		if counts[out[i].Value] != counts[out[j].Value] {
			return counts[out[i].Value] > counts[out[j].Value]
		}
		return out[i].Value < out[j].Value
	})
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// matchFinalizers returns the finalizers to strip: all of them, or those
// matching a pattern (path.Match globs, e.g. "example.com/*").
func matchFinalizers(patterns []string, all bool, fins []string) []string {
	var out []string
	for _, f := range fins {
		if all || slices.ContainsFunc(patterns, func(p string) bool { ok, _ := path.Match(p, f); return ok }) {
			out = append(out, f)
		}
	}
	return out
}

// stripper strips the asked-for finalizers from what each pass leaves. It
// remembers what it removed per object, so a finalizer a live controller
// puts back is reported, not removed again.
type stripper struct {
	patterns []string
	all      bool
	stripped map[string][]string
}

func newStripper(patterns []string, all bool) *stripper {
	return &stripper{patterns: patterns, all: all, stripped: map[string][]string{}}
}

func (s *stripper) match(fins []string) []string { return matchFinalizers(s.patterns, s.all, fins) }

// needs: get and patch of every type that holds finalizers; over a former
// namespace of a server up to 1.36, the namespace re-created to reach them
// (revive).
func (s *stripper) needs(sc scope) []access.Permission {
	var out []access.Permission
	if sc.revive {
		out = append(out, access.Permission{Verb: "create", Resource: "namespaces"}, access.Permission{Verb: "delete", Resource: "namespaces"},
			access.Permission{Verb: "update", Resource: "namespaces", Subresource: "finalize"})
	}
	for gvr := range sc.disc.DeletableResources() {
		if hasFinalizers(sc.snap, gvr) {
			base := access.Permission{Group: gvr.Group, Resource: gvr.Resource, Namespace: sc.ns.Name}
			out = append(out, with(base, "get"), with(base, "patch"))
		}
	}
	return out
}

// strips tells a former namespace's run that stripping needs it re-created.
func (s *stripper) strips(held []string) bool { return len(s.match(held)) > 0 }

// afterPass strips the finalizers from what the pass left, starting from
// the pass's own recount when it has one; it returns how many objects it
// changed (or would).
func (s *stripper) afterPass(ctx context.Context, a actor, content *deletion.ContentResult) int {
	changed := 0
	for _, gvr := range stripCandidates(content) { // none: nothing left to strip
		list := a.listed(gvr)
		var err error
		if list == nil {
			list, err = a.list(ctx, gvr, a.namespace())
		}
		if err != nil && content.Totals.GVRToNumRemaining[gvr] == 0 {
			continue // its deletion failed already, and the pass says why
		}
		if err != nil {
			a.fail(ctx, gvr, Failure{Verb: "list", Resource: deletion.ResourceName(gvr)}, err)
			continue
		}
		for i := range list.Items {
			item := &list.Items[i]
			if len(s.match(item.Finalizers)) == 0 {
				continue
			}
			if back := s.putBack(gvr, item.Name, item.Finalizers); len(back) > 0 {
				s.leftAlone(a, gvr, item.Name, back)
				continue
			}
			st := s.stripOne(ctx, a, gvr, item)
			a.record(func(r *Report) { r.Rows = addRow(r.Rows, st) })
			if st.Counts() {
				changed++
			}
		}
	}
	return changed
}

// stripOne patches the object's finalizers guarded by its resourceVersion.
// When the backup holds the object in full already (the pass saved it
// before deleting), the listed metadata is all the patch needs; otherwise
// it reads the object and saves it first. After a concurrent change it
// reads again and retries.
func (s *stripper) stripOne(ctx context.Context, a actor, gvr schemaGVR, item *metav1.PartialObjectMetadata) Row {
	name := item.Name
	st := Row{Kind: RowStrip, Resource: deletion.ResourceName(gvr), Name: name, Extra: Strip{}}
	var strip []string
	var sent Sent
	listed := metadataOf(a, gvr, item)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, save := listed, (*unstructured.Unstructured)(nil)
		listed = nil // a retry reads afresh
		if obj == nil {
			read, err := a.read(ctx, gvr, a.namespace(), name)
			if apierrors.IsNotFound(err) {
				st.Status = RowGone
				return nil
			}
			if err != nil {
				return err
			}
			obj, save = read, read
		}
		strip = s.match(obj.GetFinalizers())
		if len(strip) == 0 {
			st.Status, st.Why = RowSkipped, StripNothingLeft
			return nil
		}
		st.Extra = Strip{Finalizers: strip}
		after := obj.DeepCopy()
		after.SetFinalizers(without(obj.GetFinalizers(), strip))
		patch, err := guardedPatch(obj, after)
		if err != nil {
			return err
		}
		sent, err = a.send(ctx, Write{Verb: "patch", Resource: gvr, Namespace: a.namespace(), Name: name, Patch: patch, Op: "UPDATE", Save: save,
			Play:   func(p *planState) { p.ops.RemoveFinalizers(gvr, name, strip) },
			Change: &Change{Kind: ChangeStrippedFinalizers, Resource: st.Resource, Name: name, Finalizers: strip}})
		if apierrors.IsConflict(err) {
			a.warn(Warning{Kind: WarnConflict, Resource: st.Resource, Name: name})
		}
		if apierrors.IsNotFound(err) && save == nil {
			// Gone since the recount, or refused in words of NotFound (a
			// webhook selecting the labels of a namespace that no longer
			// exists): a read tells which.
			return errReadAgain
		}
		return err
	})
	switch {
	case err != nil:
		st.Status, st.Error = RowFailed, err.Error()
		st.Refusal = a.fail(ctx, gvr, Failure{Verb: "strip", Resource: st.Resource, Name: name}, err)
	case st.Status == "":
		st.Status = pick(sent, RowDone, RowPlanned)
		key := st.Resource + "/" + name
		s.stripped[key] = append(s.stripped[key], strip...)
	}
	return st
}

// errReadAgain makes stripOne's retry read the object first.
var errReadAgain = apierrors.NewConflict(schema.GroupResource{}, "", errors.New("read the object again"))

// metadataOf is the listed object's metadata as a patch's starting point,
// when the backup holds the whole object already; nil otherwise.
func metadataOf(a actor, gvr schemaGVR, item *metav1.PartialObjectMetadata) *unstructured.Unstructured {
	if item.ResourceVersion == "" || !a.saved(gvr, item.Name) {
		return nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&item.ObjectMeta)
	if err != nil {
		return nil
	}
	return &unstructured.Unstructured{Object: map[string]any{"metadata": m}}
}

// putBack returns the finalizers purge already removed from the object
// that are there again: a live controller re-added them.
func (s *stripper) putBack(gvr schemaGVR, name string, fins []string) []string {
	var out []string
	for _, gone := range s.stripped[deletion.ResourceName(gvr)+"/"+name] {
		if slices.Contains(fins, gone) {
			out = append(out, gone)
		}
	}
	return out
}

// leftAlone reports an object whose finalizer came back: removing it again
// would fight the controller that owns it.
func (s *stripper) leftAlone(a actor, gvr schemaGVR, name string, back []string) {
	res := deletion.ResourceName(gvr)
	a.warn(Warning{Kind: WarnPutBack, Resource: res, Name: name, Finalizers: back})
	a.record(func(r *Report) {
		r.Rows = addRow(r.Rows, Row{Kind: RowStrip, Resource: res, Name: name, Status: RowSkipped, Why: StripLeftAlone, Extra: Strip{Finalizers: back}})
	})
}

func hasFinalizers(snap *deletion.Snapshot, gvr schemaGVR) bool {
	if snap == nil {
		return false
	}
	if l := snap.Lists[gvr]; l != nil {
		for _, item := range l.Items {
			if len(item.Finalizers) > 0 {
				return true
			}
		}
	}
	return false
}

// leaksOf says, for each finalizer stripped (or to strip), what it costs.
func leaksOf(rows []Row) []Leak {
	seen := map[string]bool{}
	var out []Leak
	for _, s := range rows {
		if s.Kind != RowStrip || !s.Counts() {
			continue
		}
		for _, f := range stripOf(s).Finalizers {
			if seen[f] {
				continue
			}
			seen[f] = true
			l := Leak{Finalizer: f}
			if e := finalizers.Lookup(f); e != nil {
				l.Owner, l.Leak, l.Source = e.Owner, e.Leak, e.Source
			}
			out = append(out, l)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Finalizer < out[j].Finalizer })
	return out
}

// stripCandidates are the resources whose objects an escalation may strip:
// what the pass left, and what it failed to delete (a webhook refusing the
// DELETE may refuse the finalizer removal too, which the report then says).
func stripCandidates(c *deletion.ContentResult) []schemaGVR {
	set := map[schemaGVR]bool{}
	for gvr := range c.Totals.GVRToNumRemaining {
		set[gvr] = true
	}
	for _, gvr := range c.Failed {
		set[gvr] = true
	}
	out := make([]schemaGVR, 0, len(set))
	for gvr := range set {
		out = append(out, gvr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
