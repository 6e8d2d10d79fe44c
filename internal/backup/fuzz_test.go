package backup

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// Whatever object the API server returns, its saved copy is one line of
// JSON without the fields that would stop a re-apply, equal to what
// Reappliable keeps of the same object, and copies appended to one file
// read back one by one; the YAML copies (webhook configurations, the
// namespace) read back too.
func FuzzReappliable(f *testing.F) {
	f.Add(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n","uid":"u","resourceVersion":"1","finalizers":["x"]},"data":{"k":"v"}}`)
	f.Add(`{"apiVersion":"example.com/v1","kind":"W","metadata":{"name":"w","ownerReferences":[{"uid":"o"}],"managedFields":[{}]},"status":{"a":1}}`)
	f.Add(`{"metadata":{"name":"x"},"data":{"t":"a\n---\nb <&> \u2028"},"n":12345678901234567890}`)
	f.Add(`{"metadata":"not an object"}`)
	f.Fuzz(func(t *testing.T, raw string) {
		var obj map[string]any
		if err := json.Unmarshal([]byte(raw), &obj); err != nil || obj == nil {
			t.Skip()
		}
		want := Reappliable(&unstructured.Unstructured{Object: obj})
		checkYAML(t, raw, want)

		o, err := FromJSON([]byte(raw), "v1", "Thing")
		if err != nil {
			var meta metav1.ObjectMeta
			if m, ok := obj["metadata"]; ok && utiljson.Unmarshal(mustJSON(t, m), &meta) != nil {
				return // metadata no API server would send
			}
			t.Fatalf("FromJSON(%s): %v", raw, err)
		}
		if bytes.Count(o.line, []byte("\n")) != 1 || !bytes.HasSuffix(o.line, []byte("\n")) {
			t.Fatalf("not one line: %q", o.line)
		}
		var got map[string]any
		if err := json.Unmarshal(o.line, &got); err != nil {
			t.Fatalf("copy is not JSON: %v\n%s", err, o.line)
		}
		for field, value := range map[string]string{"apiVersion": "v1", "kind": "Thing"} {
			if _, ok := want[field]; !ok {
				want[field] = value
			}
		}
		if !reflect.DeepEqual(got, normalized(t, want)) {
			t.Fatalf("copy of %s\n got %v\nwant %v", raw, got, want)
		}
		objs, err := decodeAll(strings.NewReader(string(o.line) + string(o.line)))
		if err != nil || len(objs) != 2 {
			t.Fatalf("two copies in one file read back as %d objects: %v\n%s", len(objs), err, o.line)
		}
		meta, _ := obj["metadata"].(map[string]any)
		if name, _ := meta["name"].(string); name != o.Meta.Name {
			t.Fatalf("metadata read as name %q, want %q", o.Meta.Name, name)
		}
	})
}

// checkYAML: the YAML copy of want reads back as kubectl reads it, without
// the server's fields.
func checkYAML(t *testing.T, raw string, want map[string]any) {
	data, err := Encode(want)
	if err != nil {
		t.Fatalf("backup of %s is not YAML: %v", raw, err)
	}
	objs, err := decodeAll(bytes.NewReader(data)) // as kubectl reads a file
	if err != nil || len(objs) != 1 {
		t.Fatalf("backup does not read back (%d objects): %v\n%s", len(objs), err, data)
	}
	back := objs[0].Object
	if meta, ok := back["metadata"].(map[string]any); ok {
		for _, f := range serverOwned {
			if _, has := meta[f]; has {
				t.Fatalf("backup keeps metadata.%s", f)
			}
		}
		// Any JSON value may stand there (the fuzzer found a list):
		// compare renderings, not interfaces.
		if orig, ok := want["metadata"].(map[string]any); ok && fmt.Sprint(orig["name"]) != fmt.Sprint(meta["name"]) {
			t.Fatalf("name changed: %v -> %v", orig["name"], meta["name"])
		}
	}
	if _, has := back["status"]; has {
		t.Fatal("backup keeps status")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// normalized is v as encoding/json reads it back.
func normalized(t *testing.T, v any) map[string]any {
	var out map[string]any
	if err := json.Unmarshal(mustJSON(t, v), &out); err != nil {
		t.Fatal(err)
	}
	return out
}
