package purge

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// The runs purged together derive the deleter's resources once per
// discovery, each discovery its own; a run alone derives per pass, as
// upstream (nil).
func TestDeletableDerivedOncePerDiscovery(t *testing.T) {
	resources := func(verbs ...string) []*metav1.APIResourceList {
		return []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: verbs}}}}
	}
	a, b := &kube.Discovery{Resources: resources("list", "delete")}, &kube.Discovery{Resources: resources("list")}
	c := &discoveryCache{}
	first := c.deletable(a)
	if first == nil || c.deletable(a) != first {
		t.Fatalf("a second pass over the same discovery derived again: %p, %p", first, c.deletable(a))
	}
	if c.deletable(b) == first || c.deletable(a) != first {
		t.Error("another discovery shares the first's derivation, or displaced it")
	}
	for range derivedMax + 2 {
		c.deletable(&kube.Discovery{Resources: resources("delete")})
	}
	if len(c.derived) > derivedMax {
		t.Errorf("%d derivations kept, at most %d", len(c.derived), derivedMax)
	}
	var alone *discoveryCache
	if alone.deletable(a) != nil {
		t.Error("a run alone shares a derivation")
	}
}
