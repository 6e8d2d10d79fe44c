package kube

import (
	"errors"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The stream hands a namespace out once every ordered type has gone past
// it (in key order: "a-b/" sorts before "a/"), holds everything while an
// unordered type runs, leaves out a type whose list failed before
// reaching a namespace, and hands out again, as unread, a namespace an
// object of which came after it was handed out.
func TestStreamHandsOutWhatIsComplete(t *testing.T) {
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	widgets := schema.GroupVersionResource{Group: "agg.example.com", Version: "v1", Resource: "widgets"}
	item := func(ns, name string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	type handed struct {
		ns    string
		lists *Lists
	}
	var got []handed
	s := newStream([]schema.GroupVersionResource{cms, secrets, widgets}, []string{"a", "a-b", "c"}, func(string) SweepOptions { return SweepOptions{} },
		func(ns string, l *Lists) { got = append(got, handed{ns, l}) })
	names := func() (out []string) {
		for _, h := range got {
			out = append(out, h.ns)
		}
		return out
	}
	// configmaps: a-b, then a, then c; secrets: only a-b's, then fails.
	s.moved(cms, keyOf("a-b"))
	s.keep(cms, item("a-b", "x"))
	s.moved(secrets, keyOf("a-b"))
	s.keep(secrets, item("a-b", "s"))
	s.moved(cms, keyOf("a"))
	s.keep(cms, item("a", "y"))
	s.moved(secrets, keyOf("zz"))
	s.ended(widgets, nil)
	if want := []string{"a-b"}; !slices.Equal(names(), want) {
		t.Fatalf("handed out %v once configmaps reached a, want %v", names(), want)
	}
	if l := got[0].lists; len(l.Items[cms].Items) != 1 || len(l.Items[secrets].Items) != 1 || l.Items[widgets] == nil || len(l.Items[widgets].Items) != 0 {
		t.Errorf("a-b's lists: %+v", l.Items)
	}
	s.ended(secrets, errors.New("the server is currently unable to handle the request"))
	s.moved(cms, keyOf("c"))
	if want := []string{"a-b", "a"}; !slices.Equal(names(), want) {
		t.Fatalf("handed out %v once configmaps reached c, want %v", names(), want)
	}
	if _, listed := got[1].lists.Items[secrets]; !listed {
		t.Error("a: secrets left out, yet their list had gone past it before failing")
	}
	// An object of a, out of order: a is stale.
	s.keep(cms, item("a", "late"))
	s.ended(cms, nil)
	s.finish()
	if want := []string{"a-b", "a", "c", "a"}; !slices.Equal(names(), want) {
		t.Fatalf("handed out %v, want %v", names(), want)
	}
	if got[3].lists != nil {
		t.Error("a handed out again with lists, want none: read it afresh")
	}
}

// An unordered type (an aggregated API) holds every namespace until its
// list ends.
func TestStreamWaitsForUnorderedTypes(t *testing.T) {
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	widgets := schema.GroupVersionResource{Group: "agg.example.com", Version: "v1", Resource: "widgets"}
	var got []string
	s := newStream([]schema.GroupVersionResource{cms, widgets}, []string{"a", "b"}, func(string) SweepOptions { return SweepOptions{} },
		func(ns string, _ *Lists) { got = append(got, ns) })
	s.moved(cms, keyOf("b"))
	s.ended(cms, nil)
	if len(got) != 0 {
		t.Fatalf("handed out %v while widgets were still listing", got)
	}
	s.ended(widgets, errors.New("forbidden"))
	if want := []string{"a", "b"}; !slices.Equal(got, want) {
		t.Errorf("handed out %v, want %v", got, want)
	}
}
