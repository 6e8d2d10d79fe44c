package owners

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// A namespace's own metadata.finalizers entry is often put there for one
// object elsewhere in the cluster: a cluster-scoped custom resource that
// selects namespaces (a tenant, a project, a secret distributed to every
// namespace of a label) adds its finalizer to each namespace it selects,
// and the finalizer's name embeds the object's name
// (<domain>/<name>, <domain>/<kind>-<name>) so that each object removes
// only its own. When the writer of such an entry runs and the entry stays,
// the object it points to says why: gone (nothing will remove it), no
// longer selecting the namespace (its controller will not clean up here),
// or still selecting it (its controller should act).

// PointType is a cluster-scoped custom resource type a finalizer may point
// into: its CRD's names.
type PointType struct {
	Group, Version, Resource, Kind, Singular string
	ShortNames                               []string
}

// String is <resource>.<group>, as kubectl names the type.
func (t PointType) String() string { return t.Resource + "." + t.Group }

// Lookup is a type to look in, and the names to look for there.
type Lookup struct {
	Type PointType
	// Names are the object names the finalizer's name may embed, longest
	// first.
	Names []string
	// NamesKind: the finalizer also names the type (its domain starts with
	// the type's plural or singular, or its name carries the kind as a
	// word), so an object of none of Names means it is gone rather than
	// that the name embeds no object.
	NamesKind bool
}

// Selection says whether an object still selects the namespace.
type Selection string

// Selections.
const (
	// Selects: a namespace selector (or list of names) of its spec
	// selects the namespace.
	Selects Selection = "Selects"
	// NoLongerSelects: it has such selectors, and none selects it.
	NoLongerSelects Selection = "NoLongerSelects"
	// NoSelector: its spec has no namespace selector to evaluate.
	NoSelector Selection = "NoSelector"
)

// Pointed is the object a namespace finalizer's name points to, as far as
// it was found.
type Pointed struct {
	// Looked are the types looked in (<resource>.<group>), Names the
	// names looked for, longest first.
	Looked []string `json:"looked"`
	Names  []string `json:"names"`
	// Object is the object found, <resource>.<group>/<name>; empty when
	// none was.
	Object string `json:"object,omitempty"`
	// State is Present, Deleting, Gone (the finalizer names the type and
	// no object of those names is there), NotFound (no object of those
	// names, but nothing says one existed: no conclusion) or Unknown (a
	// read failed).
	State string `json:"state"`
	// Selection, for an object found: whether it still selects the
	// namespace, and Field the selector (spec.namespaceSelector, ...) that
	// says so.
	Selection Selection `json:"selection,omitempty"`
	Field     string    `json:"field,omitempty"`
}

// ObjectNotFound: no object of the names looked for, and nothing says the
// finalizer names one.
const ObjectNotFound = "NotFound"

// Released tells whether the object's controller will not remove the
// finalizer: the object is gone, or no longer selects the namespace.
func (p Pointed) Released() bool {
	return p.State == ObjectGone || (p.State == ObjectPresent && p.Selection == NoLongerSelects)
}

// Bounds of a finalizer's lookups: the names derived from it, and the
// types looked in.
const (
	maxPointedNames = 4
	maxPointedTypes = 3
	minPointedName  = 2
)

// Lookups are where the object a namespace finalizer points to may be:
// the cluster-scoped types of the API groups its domain names, and the
// names its part after "/" may embed (the whole, then each suffix after a
// "-", "." or "_"). None for a finalizer without a domain or a name part.
func Lookups(finalizer string, types []PointType) []Lookup {
	domain, part, found := strings.Cut(finalizer, "/")
	if !found || part == "" {
		return nil
	}
	names := embeddedNames(strings.ToLower(part))
	if len(names) == 0 {
		return nil
	}
	groups := make([]string, 0, len(types))
	for _, t := range types {
		groups = append(groups, t.Group)
	}
	affine := DomainGroups(finalizer, groups)
	var out []Lookup
	for _, t := range types {
		if slices.Contains(affine, t.Group) && len(out) < maxPointedTypes {
			out = append(out, Lookup{Type: t, Names: names, NamesKind: namesKind(domain, part, t)})
		}
	}
	return out
}

// Embedded are the names among names that a finalizer's name part
// embeds, however: the whole part, or a run of it between separators or
// its ends (a kind's prefix, ces-<name>; a suffix, <name>-tenant; both),
// longest first. A name of one letter embeds nothing worth saying.
func Embedded(finalizer string, names []string) []string {
	_, part, found := strings.Cut(finalizer, "/")
	if !found {
		return nil
	}
	part = strings.ToLower(part)
	var out []string
	for _, n := range names {
		if len(n) >= minPointedName && embeds(part, strings.ToLower(n)) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// embeds tells whether part holds name between separators or its ends.
func embeds(part, name string) bool {
	for from := 0; ; {
		k := strings.Index(part[from:], name)
		if k < 0 {
			return false
		}
		start, end := from+k, from+k+len(name)
		if (start == 0 || isSeparator(part[start-1])) && (end == len(part) || isSeparator(part[end])) {
			return true
		}
		from = start + 1
	}
}

// embeddedNames are the names a finalizer's name part may embed, longest
// first: "tenant-team-a" gives tenant-team-a, team-a (a one-letter tail
// is no name worth a read).
func embeddedNames(part string) []string {
	var out []string
	for k := 0; k < len(part) && len(out) < maxPointedNames; k++ {
		if k > 0 && !isSeparator(part[k-1]) {
			continue
		}
		if n := part[k:]; len(n) >= minPointedName && !isSeparator(n[0]) {
			out = append(out, n)
		}
	}
	return out
}

func isSeparator(b byte) bool { return b == '-' || b == '.' || b == '_' }

// namesKind: the finalizer names the type it points into: its domain is
// <plural or singular>.<group>, or a word of its name part is the kind,
// its singular, plural or a short name.
func namesKind(domain, part string, t PointType) bool {
	domain = strings.ToLower(domain)
	kinds := []string{strings.ToLower(t.Kind), t.Singular, t.Resource}
	kinds = append(kinds, t.ShortNames...)
	for _, k := range kinds {
		if k != "" && (domain == k+"."+t.Group) {
			return true
		}
	}
	words := strings.FieldsFunc(strings.ToLower(part), splitter)
	for _, k := range kinds {
		if k != "" && slices.Contains(words, strings.ToLower(k)) {
			return true
		}
	}
	return false
}

// SelectionOf says whether an object's spec still selects a namespace:
// any field named namespaceSelector (a label selector), namespaceSelectors
// (a list of them) or namespaces (a list of names), at most three levels
// down; the first that selects it, else the first found. A selector that
// is not a valid label selector is skipped.
func SelectionOf(obj map[string]any, namespace string, nsLabels map[string]string) (Selection, string) {
	spec, _ := obj["spec"].(map[string]any)
	var found []selectorField
	findSelectors(spec, "spec", 0, &found)
	if len(found) == 0 {
		return NoSelector, ""
	}
	set := labels.Set(nsLabels)
	for _, f := range found {
		if f.selects(namespace, set) {
			return Selects, f.path
		}
	}
	return NoLongerSelects, found[0].path
}

// selectorField is a field of a spec that chooses namespaces.
type selectorField struct {
	path      string
	selectors []metav1.LabelSelector
	names     []string
}

func (f selectorField) selects(namespace string, set labels.Set) bool {
	if slices.Contains(f.names, namespace) {
		return true
	}
	for k := range f.selectors {
		if s, err := metav1.LabelSelectorAsSelector(&f.selectors[k]); err == nil && s.Matches(set) {
			return true
		}
	}
	return false
}

// maxSelectorDepth is how deep under spec selectors are looked for.
const maxSelectorDepth = 3

// findSelectors walks a spec's maps (in the order of their keys) for the
// fields that choose namespaces.
func findSelectors(m map[string]any, path string, depth int, out *[]selectorField) {
	if m == nil || depth >= maxSelectorDepth {
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := path + "." + k
		switch v := m[k]; strings.ToLower(k) {
		case "namespaceselector":
			if s, ok := labelSelector(v); ok {
				*out = append(*out, selectorField{path: p, selectors: []metav1.LabelSelector{s}})
			}
		case "namespaceselectors":
			if f := selectorList(v, p); len(f.selectors) > 0 {
				*out = append(*out, f)
			}
		case "namespaces":
			if names := stringList(v); len(names) > 0 {
				*out = append(*out, selectorField{path: p, names: names})
			}
		default:
			if child, ok := v.(map[string]any); ok {
				findSelectors(child, p, depth+1, out)
			}
		}
	}
}

// labelSelector reads an unstructured label selector.
func labelSelector(v any) (metav1.LabelSelector, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return metav1.LabelSelector{}, false
	}
	var s metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &s); err != nil {
		return metav1.LabelSelector{}, false
	}
	return s, true
}

func selectorList(v any, path string) selectorField {
	f := selectorField{path: path}
	list, _ := v.([]any)
	for _, item := range list {
		if s, ok := labelSelector(item); ok {
			f.selectors = append(f.selectors, s)
		}
	}
	return f
}

func stringList(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, item := range list {
		if s, ok := item.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
