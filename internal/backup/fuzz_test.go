package backup

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Whatever object the API server returns, its backup is valid YAML without
// the fields that would stop a re-apply, and keeps everything else.
func FuzzReappliable(f *testing.F) {
	f.Add(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n","uid":"u","resourceVersion":"1","finalizers":["x"]},"data":{"k":"v"}}`)
	f.Add(`{"apiVersion":"example.com/v1","kind":"W","metadata":{"name":"w","ownerReferences":[{"uid":"o"}],"managedFields":[{}]},"status":{"a":1}}`)
	f.Add(`{"metadata":"not an object"}`)
	f.Fuzz(func(t *testing.T, raw string) {
		var obj map[string]any
		if err := json.Unmarshal([]byte(raw), &obj); err != nil {
			t.Skip()
		}
		u := &unstructured.Unstructured{Object: obj}
		out := Reappliable(u)
		data, err := Encode(out)
		if err != nil {
			t.Fatalf("backup of %s is not YAML: %v", raw, err)
		}
		var back map[string]any
		if err := yaml.Unmarshal(data, &back); err != nil {
			t.Fatalf("backup does not read back: %v", err)
		}
		// Appended to its type's file, it stays one document of its own.
		stream := "---\n" + string(data) + "---\n" + string(data)
		if objs, err := decodeAll(strings.NewReader(stream)); err != nil || len(objs) != 2 {
			t.Fatalf("two copies in one file read back as %d objects: %v\n%s", len(objs), err, stream)
		}
		if meta, ok := back["metadata"].(map[string]any); ok {
			for _, f := range []string{"uid", "resourceVersion", "namespace", "ownerReferences", "managedFields", "deletionTimestamp"} {
				if _, has := meta[f]; has {
					t.Fatalf("backup keeps metadata.%s", f)
				}
			}
			// Any JSON value may stand there (the fuzzer found a list):
			// compare renderings, not interfaces.
			if orig, ok := obj["metadata"].(map[string]any); ok && fmt.Sprint(orig["name"]) != fmt.Sprint(meta["name"]) {
				t.Fatalf("name changed: %v -> %v", orig["name"], meta["name"])
			}
		}
		if _, has := back["status"]; has {
			t.Fatal("backup keeps status")
		}
	})
}
