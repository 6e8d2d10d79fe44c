package inspect

import (
	"sort"
	"strings"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// A holder's spec often names the Secret, ConfigMap or ServiceAccount its
// owner needs to clean up: cloud credentials above all. The namespace
// controller deletes those first (they hold no finalizer), and the owner
// is then left unable to finish. Only the names are read, under the
// field names operators use for such references; never a value.

// maxRefs bounds the references kept per holder, and maxRefDepth how deep
// a spec is walked: a pod template's env is at depth 8.
const (
	maxRefs     = 10
	maxRefDepth = 10
)

// refField is a field naming an object by name: either an object with
// `name` (and maybe `namespace`), or the name itself.
type refField struct {
	suffix string // of the lower-cased field name
	kind   diagnose.RefKind
	object bool
}

var refFields = []refField{
	{"secretref", diagnose.RefSecret, true},
	{"secretkeyref", diagnose.RefSecret, true},
	{"configmapref", diagnose.RefConfigMap, true},
	{"configmapkeyref", diagnose.RefConfigMap, true},
	{"secretname", diagnose.RefSecret, false},
	{"configmapname", diagnose.RefConfigMap, false},
	{"serviceaccountname", diagnose.RefServiceAccount, false},
}

// specRefs lists the objects of namespace a spec names, by field path,
// each once.
func specRefs(spec any, namespace string) []diagnose.HolderRef {
	seen := map[diagnose.HolderRef]bool{}
	walkRefs(spec, "spec", namespace, 0, seen)
	out := make([]diagnose.HolderRef, 0, len(seen))
	for ref := range seen {
		out = append(out, ref)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Field < out[j].Field || out[i].Field == out[j].Field && out[i].Name < out[j].Name
	})
	if len(out) > maxRefs {
		out = out[:maxRefs]
	}
	return out
}

func walkRefs(v any, path, namespace string, depth int, seen map[diagnose.HolderRef]bool) {
	if depth > maxRefDepth || len(seen) >= maxRefs {
		return
	}
	switch v := v.(type) {
	case map[string]any:
		// In key order: which references the bound keeps must not vary.
		keys := make([]string, 0, len(v))
		for key := range v {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		for _, key := range keys {
			child := v[key]
			field := path + "." + key
			if ref, ok := refOf(key, child, field, namespace); ok {
				seen[ref] = true
				continue
			}
			walkRefs(child, field, namespace, depth+1, seen)
		}
	case []any:
		for _, child := range v {
			walkRefs(child, path+"[]", namespace, depth+1, seen)
		}
	}
}

// refOf reads a reference from a field, if it is one to an object of this
// namespace.
func refOf(key string, v any, field, namespace string) (diagnose.HolderRef, bool) {
	lower := strings.ToLower(key)
	for _, f := range refFields {
		if !strings.HasSuffix(lower, f.suffix) {
			continue
		}
		name, ok := v.(string)
		if f.object {
			m, isMap := v.(map[string]any)
			if !isMap {
				return diagnose.HolderRef{}, false
			}
			name, ok = m["name"].(string)
			if ns, _ := m["namespace"].(string); ns != "" && ns != namespace {
				return diagnose.HolderRef{}, false
			}
		}
		if !ok || name == "" {
			return diagnose.HolderRef{}, false
		}
		return diagnose.HolderRef{Field: field, Kind: f.kind, Name: name}, true
	}
	return diagnose.HolderRef{}, false
}
