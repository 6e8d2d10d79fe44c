package diagnose

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// Older controllers wrote SomeFinalizerRemain and "Some finalizers are
// remaining: ..."; they mean what today's wording means.
func TestCompareConditionsAcceptsOlderWording(t *testing.T) {
	computed := []v1.NamespaceCondition{{Type: v1.NamespaceFinalizersRemaining, Status: v1.ConditionTrue, Reason: "SomeFinalizersRemain",
		Message: "Some content in the namespace has finalizers remaining: a in 1 resource instances"}}
	for _, tc := range []struct {
		reason, message string
		agree           bool
	}{
		{"SomeFinalizerRemain", "Some finalizers are remaining: a in 1 resource instances", true},
		{"SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: a in 1 resource instances", true},
		{"SomeFinalizersRemain", "Some finalizers are remaining: a in 2 resource instances", false},
		{"SomethingElse", "Some finalizers are remaining: a in 1 resource instances", false},
	} {
		observed := []v1.NamespaceCondition{{Type: v1.NamespaceFinalizersRemaining, Status: v1.ConditionTrue, Reason: tc.reason, Message: tc.message}}
		got := compareConditions(observed, computed)[4]
		if got.Type != string(v1.NamespaceFinalizersRemaining) || got.Agree != tc.agree {
			t.Errorf("%s / %q: agree=%v, want %v", tc.reason, tc.message, got.Agree, tc.agree)
		}
	}
}
