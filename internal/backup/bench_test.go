package backup

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// listItem is a small custom resource as a list answer holds it: most of
// it is metadata (the benchmark's fixtures look like this).
const listItem = `{"apiVersion":"bench.ns-doctor.io/v1","kind":"Thing017","metadata":{"creationTimestamp":"2026-11-23T08:50:00Z",` +
	`"generation":1,"labels":{"bench":"yes"},"managedFields":[{"apiVersion":"bench.ns-doctor.io/v1","fieldsType":"FieldsV1",` +
	`"fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:bench":{}}},"f:spec":{".":{},"f:index":{}}},"manager":"bench",` +
	`"operation":"Update","time":"2026-11-23T08:50:00Z"}],"name":"obj-%d","namespace":"purge-0","resourceVersion":"123456",` +
	`"uid":"0b7e1c2a-5d1b-4b8e-9b1a-1c2d3e4f5a6b"},"spec":{"index":%d}}`

// What saving one object costs, per way of preparing it: from the
// server's JSON as purge does (json), through the dynamic client's
// decoding (unstructured), and as YAML the way backups were written
// before (yaml). Run: go test -bench Prepare -benchmem ./internal/backup
func BenchmarkPrepare(b *testing.B) {
	items := make([][]byte, 1000)
	for i := range items {
		items[i] = fmt.Appendf(nil, listItem, i, i)
	}
	decode := func(raw []byte) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			b.Fatal(err)
		}
		return u
	}
	b.Run("json", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := FromJSON(items[i%len(items)], "", ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unstructured", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := FromUnstructured(decode(items[i%len(items)])); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("yaml", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := Encode(Reappliable(decode(items[i%len(items)]))); err != nil {
				b.Fatal(err)
			}
		}
	})
}
