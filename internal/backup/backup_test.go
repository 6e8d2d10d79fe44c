package backup

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A backup keeps the first copy of an object, within a run and across runs
// sharing a folder: the state before ns-doctor changed it.
func TestSaveKeepsTheFirstCopy(t *testing.T) {
	dir := t.TempDir()
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	obj := func(uid, v string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "a", "uid": uid, "finalizers": []any{"x"}}, "data": map[string]any{"v": v}}}
	}
	for run, v := range []string{"before", "after"} {
		w, err := New(dir, "purge")
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Save(gvr, obj("u1", v)); err != nil {
			t.Fatal(err)
		}
		if err := w.Save(gvr, obj("u1", v+"-again")); err != nil || w.Count() != 1 {
			t.Fatalf("run %d: %v, count %d", run, err, w.Count())
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "objects", "configmaps.core.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(data); strings.Count(got, "\n") != 1 || !strings.Contains(got, `"v":"before"`) || strings.Contains(got, "uid") || !strings.Contains(got, `"finalizers":["x"]`) {
		t.Fatalf("backup:\n%s", got)
	}
}

// Holds answers for this run's completed saves only, whichever folder the
// restore table put the object in, and by type and name.
func TestHoldsWhatThisRunSaved(t *testing.T) {
	w, err := New(t.TempDir(), "purge")
	if err != nil {
		t.Fatal(err)
	}
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	if w.Holds(cms, "a") {
		t.Fatal("holds a before saving it")
	}
	if err := w.Save(cms, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "a"}}}); err != nil {
		t.Fatal(err)
	}
	if !w.Holds(cms, "a") || w.Holds(cms, "b") || w.Holds(secrets, "a") {
		t.Errorf("Holds(configmaps a, configmaps b, secrets a) = %v %v %v, want true false false",
			w.Holds(cms, "a"), w.Holds(cms, "b"), w.Holds(secrets, "a"))
	}
}

// Objects of one type share a file, one document each, whatever order the
// concurrent saves of a pass append them in; other types have their own.
func TestSaveAppendsOneDocumentPerObject(t *testing.T) {
	dir := t.TempDir()
	w, err := New(dir, "purge")
	if err != nil {
		t.Fatal(err)
	}
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			gvr, kind := cms, "ConfigMap"
			if i%2 == 1 {
				gvr, kind = widgets, "Widget"
			}
			obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvr.GroupVersion().String(), "kind": kind,
				"metadata": map[string]any{"name": fmt.Sprintf("o%02d", i), "uid": fmt.Sprint(i)},
				// A line of its own that reads like a document separator.
				"data": map[string]any{"text": "a\n---\nb"}}}
			if err := w.Save(gvr, obj); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	saved, err := Saved(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(saved) != 50 || w.Count() != 50 || saved[0] != "configmaps.core.json/o00" || saved[49] != "widgets.example.com.json/o49" {
		t.Fatalf("saved %d (count %d): %v", len(saved), w.Count(), saved)
	}
	objs, err := Objects(dir, widgets)
	if err != nil || len(objs) != 25 || objs[0].GetKind() != "Widget" {
		t.Fatalf("widgets: %v, %d", err, len(objs))
	}
	if text, _, _ := unstructured.NestedString(objs[0].Object, "data", "text"); text != "a\n---\nb" {
		t.Errorf("data read back as %q", text)
	}
}

// FromJSON reads what callers need of the metadata (who holds the object,
// whether it is new) and saves the rest as it came, without what the
// server owns.
func TestFromJSONReadsIdentityAndKeepsTheRest(t *testing.T) {
	raw := `{"metadata":{"name":"w","uid":"u1","creationTimestamp":"2026-11-24T01:00:00Z","deletionTimestamp":"2026-11-24T02:00:00Z",` +
		`"finalizers":["a/b"],"labels":{"x":"<y>"},"managedFields":[{"manager":"op","fieldsV1":{"f:spec":{}}}],"resourceVersion":"7"},` +
		`"spec":{"n":12345678901234567890,"s":"a&b"},"status":{"ok":true}}`
	o, err := FromJSON([]byte(raw), "example.com/v1", "Widget")
	if err != nil {
		t.Fatal(err)
	}
	m := o.Meta
	if m.Name != "w" || m.UID != "u1" || m.CreationTimestamp.Hour() != 1 || m.DeletionTimestamp == nil || len(m.Finalizers) != 1 ||
		len(m.ManagedFields) != 1 || m.ManagedFields[0].Manager != "op" {
		t.Errorf("metadata read as %+v", m)
	}
	want := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"finalizers":["a/b"],"labels":{"x":"<y>"},"name":"w"},` +
		`"spec":{"n":12345678901234567890,"s":"a&b"}}` + "\n"
	if string(o.line) != want {
		t.Errorf("saved as\n%s\nwant\n%s", o.line, want)
	}
}

// A page saved together lands as each object saved alone would: the
// restore table's placement (kube-root-ca.crt to record/, made only for
// it), an earlier run's copy kept, a name twice in the page saved once,
// and an index line per object written.
func TestSaveObjectsPlacesAPageAsSavesOneByOne(t *testing.T) {
	dir := t.TempDir()
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	cm := func(name, v string) *Object {
		o, err := FromJSON(fmt.Appendf(nil, `{"metadata":{"name":%q,"uid":"u-%s"},"data":{"v":%q}}`, name, name, v), "v1", "ConfigMap")
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	first, err := New(dir, "purge")
	if err != nil {
		t.Fatal(err)
	}
	if err := first.SaveObjects(cms, []*Object{cm("a", "before")}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, RecordDir)); !os.IsNotExist(err) {
		t.Fatalf("record/ exists before anything goes there: %v", err)
	}
	w, err := New(dir, "purge")
	if err != nil {
		t.Fatal(err)
	}
	page := []*Object{cm("a", "after"), cm("b", "1"), cm("kube-root-ca.crt", "ca"), cm("b", "2")}
	if err := w.SaveObjects(cms, page); err != nil {
		t.Fatal(err)
	}
	if !w.Holds(cms, "b") || !w.Holds(cms, "kube-root-ca.crt") || w.Count() != 3 {
		t.Errorf("holds b %v, holds kube-root-ca.crt %v, count %d (want true true 3)", w.Holds(cms, "b"), w.Holds(cms, "kube-root-ca.crt"), w.Count())
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), NamespaceFile) {
		t.Fatalf("Open without a namespace: %v", err)
	}
	if err := w.SaveNamespace(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": "ns"}}}); err != nil {
		t.Fatal(err)
	}
	f, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range f.Objects {
		v, _, _ := unstructured.NestedString(o.Object.Object, "data", "v")
		got = append(got, fmt.Sprintf("%s=%s uid=%s record=%v", o.Name, v, o.UID, o.Record))
	}
	want := "[a=before uid=u-a record=false b=1 uid=u-b record=false kube-root-ca.crt=ca uid=u-kube-root-ca.crt record=true]"
	if fmt.Sprint(got) != want {
		t.Errorf("folder holds\n%v\nwant\n%s", got, want)
	}
}
