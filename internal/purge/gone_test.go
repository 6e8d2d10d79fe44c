package purge

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A finalize answer proves the namespace gone only as the registry decides
// it: terminating, no finalizer in either list, no grace left, and from
// the API server (a former namespace's answer, played in memory, has no
// UID).
func TestDeletedByFinalize(t *testing.T) {
	now := metav1.NewTime(time.Now())
	gone := func() *v1.Namespace {
		return &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "u", DeletionTimestamp: &now, DeletionGracePeriodSeconds: ptr.To[int64](0)}}
	}
	for _, tc := range []struct {
		name   string
		change func(*v1.Namespace)
		want   bool
	}{
		{"terminating, nothing holds it", func(*v1.Namespace) {}, true},
		{"no grace period recorded", func(ns *v1.Namespace) { ns.DeletionGracePeriodSeconds = nil }, true},
		{"a token kept", func(ns *v1.Namespace) { ns.Spec.Finalizers = []v1.FinalizerName{"example.com/x"} }, false},
		{"its own metadata.finalizers", func(ns *v1.Namespace) { ns.Finalizers = []string{"example.com/y"} }, false},
		{"grace left", func(ns *v1.Namespace) { ns.DeletionGracePeriodSeconds = ptr.To[int64](30) }, false},
		{"not terminating", func(ns *v1.Namespace) { ns.DeletionTimestamp = nil }, false},
		{"played in memory", func(ns *v1.Namespace) { ns.UID = "" }, false},
	} {
		ns := gone()
		tc.change(ns)
		if got := deletedByFinalize(ns); got != tc.want {
			t.Errorf("%s: deletedByFinalize = %v, want %v", tc.name, got, tc.want)
		}
	}
}
