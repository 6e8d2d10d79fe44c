package diagnose

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestOrphansGroupsPerFormerNamespaceAndType(t *testing.T) {
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gadgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
	obj := func(ns, name string, fins ...string) metav1.PartialObjectMetadata {
		return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: fins}}
	}
	r := Orphans(OrphanObservation{Now: time.Now(), Lists: map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{
		cms:     {obj("b", "x"), obj("a", "y", "example.com/hold"), obj("a", "z")},
		gadgets: {obj("a", "g")},
	}})
	if len(r.Namespaces) != 2 || r.Namespaces[0].Name != "a" || r.Namespaces[1].Name != "b" {
		t.Fatalf("%+v", r.Namespaces)
	}
	a := r.Namespaces[0]
	if a.Objects != 3 || len(a.Content) != 2 || a.Content[0].Resource != "configmaps" || a.Content[0].Count != 2 || a.Content[0].Finalizers["example.com/hold"] != 1 {
		t.Errorf("a: %+v", a)
	}
	if empty := Orphans(OrphanObservation{}); empty.Namespaces == nil || len(empty.Namespaces) != 0 {
		t.Errorf("none: %+v", empty.Namespaces)
	}
}
