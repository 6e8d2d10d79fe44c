package owners

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An object's managedFields say which field manager set each of its
// fields: the name a controller's client gives itself (its binary's name
// by default, from the user agent), the operation, and when it last wrote
// them. The manager owning `f:metadata/f:finalizers/v:"<finalizer>"` is
// whoever put the finalizer there: the controller that will remove it, or a
// tool that applied a manifest carrying it.

// Fields of a finalizer list in managedFields: metadata.finalizers (any
// object; a set, owned value by value), spec.finalizers (a Namespace's
// tokens; an atomic list, owned whole, and taken over by the namespace
// controller's finalize once it removes its own token).
const (
	MetadataFinalizers = "f:metadata"
	SpecFinalizers     = "f:spec"
)

// Manager is a field manager that set a finalizer.
type Manager struct {
	Name      string     `json:"name"`
	Operation string     `json:"operation,omitempty"`
	Time      *time.Time `json:"time,omitempty"`
	// Subresource is the subresource it wrote through, if any.
	Subresource string `json:"subresource,omitempty"`
	// Applier: a tool that applies manifests (kubectl, Helm, Argo CD,
	// Flux), not a controller: the finalizer came with a manifest, and
	// whoever removes it is someone else.
	Applier bool `json:"applier,omitempty"`
	// Object is the holder it was read on, resource/name.
	Object string `json:"object,omitempty"`
}

// appliers are the field managers of tools that apply manifests.
// (Argo CD's controller applies as argocd-controller; its own reconciler of
// Applications is another manager. An unnamed Go client, Go-http-client,
// may be a controller: it is no applier, only a name no workload has.)
var appliers = []string{"kubectl", "helm", "argocd-controller", "kustomize-controller",
	"helm-controller", "before-first-apply", "terraform-provider-kubernetes", "pulumi-kubernetes"}

// IsApplier tells a manifest-applying tool's field manager.
func IsApplier(manager string) bool {
	for _, a := range appliers {
		if manager == a || strings.HasPrefix(manager, a+"-") {
			return true
		}
	}
	return false
}

// Fields reads who set finalizers out of managedFields, each distinct
// fieldsV1 decoded once: the thousands of objects one manager created
// alike share a few, and decoding each was most of a diagnosis over ten
// thousand namespaces. Safe for concurrent use; the zero value is ready,
// and a nil one remembers nothing.
type Fields struct {
	mu   sync.Mutex
	read map[fieldsKey][]string
}

type fieldsKey struct{ field, raw string }

// fieldsRemembered bounds what a Fields keeps: past it, each entry is
// decoded as if none were kept.
const fieldsRemembered = 4096

func (x *Fields) finalizersIn(e metav1.ManagedFieldsEntry, field string) []string {
	if x == nil || e.FieldsV1 == nil {
		return finalizersIn(e, field)
	}
	k := fieldsKey{field, e.FieldsV1.GetRawString()}
	x.mu.Lock()
	out, ok := x.read[k]
	x.mu.Unlock()
	if ok {
		return out
	}
	out = finalizersIn(e, field)
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.read == nil {
		x.read = map[fieldsKey][]string{}
	}
	if len(x.read) < fieldsRemembered {
		x.read[k] = out
	}
	return out
}

// finalizersIn are the finalizer values a managedFields entry owns under
// field (MetadataFinalizers or SpecFinalizers).
func finalizersIn(e metav1.ManagedFieldsEntry, field string) []string {
	if e.FieldsV1 == nil || !strings.Contains(e.FieldsV1.GetRawString(), "f:finalizers") {
		return nil
	}
	// Every value of fieldsV1 is an object, down to its leaves ({}).
	var fields map[string]map[string]json.RawMessage
	if json.Unmarshal(e.FieldsV1.GetRawBytes(), &fields) != nil || fields[field]["f:finalizers"] == nil {
		return nil
	}
	var set map[string]json.RawMessage
	if json.Unmarshal(fields[field]["f:finalizers"], &set) != nil {
		return nil
	}
	if field == SpecFinalizers && !hasValues(set) {
		// A Namespace's spec.finalizers is an atomic list: its manager owns
		// every token at once.
		return []string{allFinalizers}
	}
	var out []string
	for key := range set {
		value, ok := strings.CutPrefix(key, "v:")
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal([]byte(value), &s) == nil {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// allFinalizers stands for every value of an atomic list.
const allFinalizers = "*"

func hasValues(set map[string]json.RawMessage) bool {
	for key := range set {
		if strings.HasPrefix(key, "v:") {
			return true
		}
	}
	return false
}

// KeepFinalizerEntries keeps of an object's managedFields only what says
// who set its finalizers: each entry owning one of them, reduced to the
// finalizers it owns (a sweep keeps that much of a held object, not its
// whole managedFields). It names those of finalizers that an entry
// ManagersOf reads owns.
func KeepFinalizerEntries(entries []metav1.ManagedFieldsEntry, finalizers []string) (kept []metav1.ManagedFieldsEntry, named []string) {
	return (*Fields)(nil).KeepFinalizerEntries(entries, finalizers)
}

// KeepFinalizerEntries is the package's, remembering what it decoded.
func (x *Fields) KeepFinalizerEntries(entries []metav1.ManagedFieldsEntry, finalizers []string) (kept []metav1.ManagedFieldsEntry, named []string) {
	if len(finalizers) == 0 {
		return nil, nil
	}
	var out []metav1.ManagedFieldsEntry
	for _, e := range entries {
		owned := x.finalizersIn(e, MetadataFinalizers)
		if len(owned) == 0 {
			continue
		}
		if e.Subresource != "finalize" {
			for _, f := range owned {
				if slices.Contains(finalizers, f) && !slices.Contains(named, f) {
					named = append(named, f)
				}
			}
		}
		set := map[string]struct{}{}
		for _, f := range owned {
			set[`v:`+quote(f)] = struct{}{}
		}
		raw, err := json.Marshal(map[string]map[string]map[string]struct{}{MetadataFinalizers: {"f:finalizers": set}})
		if err != nil {
			continue
		}
		out = append(out, metav1.ManagedFieldsEntry{Manager: e.Manager, Operation: e.Operation, Time: e.Time,
			Subresource: e.Subresource, FieldsType: e.FieldsType, FieldsV1: metav1.NewFieldsV1(string(raw))})
	}
	return out, named
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// ManagersOf are the field managers that own finalizer under field,
// latest write first.
func ManagersOf(entries []metav1.ManagedFieldsEntry, field, finalizer, object string) []Manager {
	return (*Fields)(nil).ManagersOf(entries, field, finalizer, object)
}

// ManagersOf is the package's, remembering what it decoded.
func (x *Fields) ManagersOf(entries []metav1.ManagedFieldsEntry, field, finalizer, object string) []Manager {
	var out []Manager
	for _, e := range entries {
		if e.Subresource == "finalize" {
			// The namespace controller's finalize removes its own token:
			// it takes the list over, but set none of the others.
			continue
		}
		for _, f := range x.finalizersIn(e, field) {
			if f != finalizer && f != allFinalizers {
				continue
			}
			m := Manager{Name: e.Manager, Operation: string(e.Operation), Subresource: e.Subresource, Applier: IsApplier(e.Manager), Object: object}
			if e.Time != nil {
				t := e.Time.UTC()
				m.Time = &t
			}
			out = append(out, m)
		}
	}
	SortManagers(out)
	return out
}

// SortManagers puts the latest write first, then by name.
func SortManagers(ms []Manager) {
	sort.SliceStable(ms, func(a, b int) bool {
		ta, tb := ms[a].Time, ms[b].Time
		switch {
		case ta != nil && tb != nil && !ta.Equal(*tb):
			return ta.After(*tb)
		case (ta == nil) != (tb == nil):
			return ta != nil
		}
		return ms[a].Name < ms[b].Name
	})
}
