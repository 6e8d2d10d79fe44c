package backup

import (
	"os"
	"path/filepath"
	"strings"
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
		w, err := New(dir)
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
	data, err := os.ReadFile(filepath.Join(dir, "objects", "configmaps.core_a.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(data); !strings.Contains(got, "v: before") || strings.Contains(got, "uid") || !strings.Contains(got, "- x") {
		t.Fatalf("backup:\n%s", got)
	}
}
