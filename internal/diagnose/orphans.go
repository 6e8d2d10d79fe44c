package diagnose

import (
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// OrphanReport lists objects whose namespace no longer exists: a
// namespace finalized with content left (PUT .../finalize by hand) leaves
// them in storage, and a namespace of the same name brings them back.
type OrphanReport struct {
	ObservedAt time.Time
	// Namespaces are the former namespaces, by name.
	Namespaces []FormerNamespace
	// Unchecked are the types that could not be listed.
	Unchecked []Unchecked
}

// FormerNamespace is what one namespace that is gone left behind.
type FormerNamespace struct {
	Name    string    `json:"name"`
	Objects int       `json:"objects"`
	Content []Content `json:"content"`
}

// OrphanObservation is what a sweep of every namespace found of
// namespaces that no longer exist: per type, their objects.
type OrphanObservation struct {
	Lists     map[schema.GroupVersionResource][]metav1.PartialObjectMetadata
	Unchecked []Unchecked
	Now       time.Time
}

// Orphans groups the leftovers per former namespace and type.
func Orphans(obs OrphanObservation) OrphanReport {
	r := OrphanReport{ObservedAt: obs.Now.UTC(), Namespaces: []FormerNamespace{}, Unchecked: obs.Unchecked}
	byNS := map[string]map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{}
	for gvr, items := range obs.Lists {
		for _, item := range items {
			if byNS[item.Namespace] == nil {
				byNS[item.Namespace] = map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{}
			}
			byNS[item.Namespace][gvr] = append(byNS[item.Namespace][gvr], item)
		}
	}
	for name, types := range byNS {
		f := FormerNamespace{Name: name, Content: []Content{}}
		for gvr, items := range types {
			c := Content{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource}
			summarise(&c, items)
			f.Objects += c.Count
			f.Content = append(f.Content, c)
		}
		sort.Slice(f.Content, func(i, j int) bool {
			return f.Content[i].Group+"/"+f.Content[i].Resource < f.Content[j].Group+"/"+f.Content[j].Resource
		})
		r.Namespaces = append(r.Namespaces, f)
	}
	sort.Slice(r.Namespaces, func(i, j int) bool { return r.Namespaces[i].Name < r.Namespaces[j].Name })
	return r
}
