package purge

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

func object(name, uid string, created time.Time) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetName(name)
	u.SetUID(types.UID(uid))
	u.SetCreationTimestamp(metav1.NewTime(created))
	return u
}

func TestRecreationsStopAfterThreePasses(t *testing.T) {
	deleted := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	gadgets := schemaGVR{Group: "example.com", Version: "v1", Resource: "gadgets"}
	rc := newRecreations()
	rc.deletedAt = deleted

	// Pass 1: what was there before the deletion, and the same object
	// seen twice (deletecollection, then delete), is not "created anew".
	rc.observe(gadgets, object("old", "u1", deleted.Add(-time.Hour)))
	rc.observe(gadgets, object("old", "u1", deleted.Add(-time.Hour)))
	rc.observe(gadgets, object("same-second", "u2", deleted))
	if chased := rc.endPass(); len(chased) != 0 || len(rc.list()) != 0 {
		t.Fatalf("pass 1: chased %v, recreated %+v", chased, rc.list())
	}
	// Passes 2-4: "old" comes back with a new UID each time, and a new name
	// appears once, created after the deletion.
	for pass, uid := range []string{"u3", "u4", "u5"} {
		rc.observe(gadgets, object("old", uid, deleted.Add(time.Minute)))
		if pass == 0 {
			rc.observe(gadgets, object("old-x7k2p", "u6", deleted.Add(time.Second)))
		}
		chased := rc.endPass()
		if want := pass == 2; (len(chased) == 1) != want {
			t.Fatalf("pass %d: chased %v", pass+2, chased)
		}
	}
	got := rc.list()
	if len(got) != 2 || got[0].Name != "old" || got[0].Times != 3 || got[1].Name != "old-x7k2p" || got[1].Times != 1 {
		t.Errorf("recreated %+v", got)
	}
}

func TestPutBackOnlyWhatPurgeRemoved(t *testing.T) {
	p := newStripper(nil, true)
	gadgets := schemaGVR{Group: "example.com", Version: "v1", Resource: "gadgets"}
	if back := p.putBack(gadgets, "g1", []string{"a"}); len(back) != 0 {
		t.Fatalf("nothing stripped yet, put back %v", back)
	}
	p.stripped["gadgets.example.com/g1"] = []string{"a"}
	if back := p.putBack(gadgets, "g1", []string{"keep", "a"}); len(back) != 1 || back[0] != "a" {
		t.Errorf("put back %v, want [a]", back)
	}
	if back := p.putBack(gadgets, "g2", []string{"a"}); len(back) != 0 {
		t.Errorf("another object: put back %v", back)
	}
}
