package deletion

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

var (
	tBefore = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	tNow    = metav1.NewTime(time.Date(2026, 1, 2, 3, 9, 5, 0, time.UTC))
)

// okCondition is the "ok" variant the controller writes, spelled out
// literally so that a change to okReasons/okMessages fails the tests.
func okCondition(t v1.NamespaceConditionType, at metav1.Time) v1.NamespaceCondition {
	lit := map[v1.NamespaceConditionType][2]string{
		v1.NamespaceDeletionDiscoveryFailure: {"ResourcesDiscovered", "All resources successfully discovered"},
		v1.NamespaceDeletionGVParsingFailure: {"ParsedGroupVersions", "All legacy kube types successfully parsed"},
		v1.NamespaceDeletionContentFailure:   {"ContentDeleted", "All content successfully deleted, may be waiting on finalization"},
		v1.NamespaceContentRemaining:         {"ContentRemoved", "All content successfully removed"},
		v1.NamespaceFinalizersRemaining:      {"ContentHasNoFinalizers", "All content-preserving finalizers finished"},
	}[t]
	return v1.NamespaceCondition{Type: t, Status: v1.ConditionFalse, LastTransitionTime: at, Reason: lit[0], Message: lit[1]}
}

func failCondition(t v1.NamespaceConditionType, at metav1.Time, reason, msg string) v1.NamespaceCondition {
	return v1.NamespaceCondition{Type: t, Status: v1.ConditionTrue, LastTransitionTime: at, Reason: reason, Message: msg}
}

// expectedConditions returns the five conditions in controller order, the
// ok variant stamped at `at` unless overridden.
func expectedConditions(at metav1.Time, overrides ...v1.NamespaceCondition) []v1.NamespaceCondition {
	out := make([]v1.NamespaceCondition, 0, 5)
	for _, ct := range []v1.NamespaceConditionType{
		v1.NamespaceDeletionDiscoveryFailure,
		v1.NamespaceDeletionGVParsingFailure,
		v1.NamespaceDeletionContentFailure,
		v1.NamespaceContentRemaining,
		v1.NamespaceFinalizersRemaining,
	} {
		c := okCondition(ct, at)
		for _, o := range overrides {
			if o.Type == ct {
				c = o
			}
		}
		out = append(out, c)
	}
	return out
}

func diffConditions(t *testing.T, got, want []v1.NamespaceCondition) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d conditions, want %d:\n got: %s\nwant: %s", len(got), len(want), fmtConditions(got), fmtConditions(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("condition %d:\n got: %s\nwant: %s", i, fmtCondition(got[i]), fmtCondition(want[i]))
		}
	}
}

func fmtCondition(c v1.NamespaceCondition) string {
	return fmt.Sprintf("{%s %s %s %q %q}", c.Type, c.Status, c.LastTransitionTime.UTC().Format(time.RFC3339), c.Reason, c.Message)
}

func fmtConditions(cs []v1.NamespaceCondition) string {
	s := ""
	for _, c := range cs {
		s += "\n  " + fmtCondition(c)
	}
	return s
}

func TestConditionTypesOrder(t *testing.T) {
	want := []v1.NamespaceConditionType{
		"NamespaceDeletionDiscoveryFailure",
		"NamespaceDeletionGroupVersionParsingFailure",
		"NamespaceDeletionContentFailure",
		"NamespaceContentRemaining",
		"NamespaceFinalizersRemaining",
	}
	if !reflect.DeepEqual(ConditionTypes, want) {
		t.Errorf("ConditionTypes = %v, want %v", ConditionTypes, want)
	}
}

func TestConditionsAllOK(t *testing.T) {
	got := NewConditionUpdater(tNow).Conditions()
	want := []v1.NamespaceCondition{
		{Type: v1.NamespaceDeletionDiscoveryFailure, Status: v1.ConditionFalse, LastTransitionTime: tNow, Reason: "ResourcesDiscovered", Message: "All resources successfully discovered"},
		{Type: v1.NamespaceDeletionGVParsingFailure, Status: v1.ConditionFalse, LastTransitionTime: tNow, Reason: "ParsedGroupVersions", Message: "All legacy kube types successfully parsed"},
		{Type: v1.NamespaceDeletionContentFailure, Status: v1.ConditionFalse, LastTransitionTime: tNow, Reason: "ContentDeleted", Message: "All content successfully deleted, may be waiting on finalization"},
		{Type: v1.NamespaceContentRemaining, Status: v1.ConditionFalse, LastTransitionTime: tNow, Reason: "ContentRemoved", Message: "All content successfully removed"},
		{Type: v1.NamespaceFinalizersRemaining, Status: v1.ConditionFalse, LastTransitionTime: tNow, Reason: "ContentHasNoFinalizers", Message: "All content-preserving finalizers finished"},
	}
	diffConditions(t, got, want)
}

func TestProcessDiscoverResourcesErr(t *testing.T) {
	metrics := schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}
	custom := schema.GroupVersion{Group: "custom.metrics.k8s.io", Version: "v1beta2"}
	oneGroup := &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{
		metrics: errors.New("stale GroupVersion discovery: metrics.k8s.io/v1beta1"),
	}}
	tests := []struct {
		name    string
		err     error
		wantMsg string
	}{
		{
			name:    "one group failing",
			err:     oneGroup,
			wantMsg: "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1",
		},
		{
			name: "two groups failing, sorted",
			err: &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{
				metrics: errors.New("stale GroupVersion discovery: metrics.k8s.io/v1beta1"),
				custom:  errors.New("the server is currently unable to handle the request"),
			}},
			wantMsg: "Discovery failed for some groups, 2 failing: unable to retrieve the complete list of server APIs: custom.metrics.k8s.io/v1beta2: the server is currently unable to handle the request, metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1",
		},
		{
			name:    "plain error",
			err:     errors.New("the server could not find the requested resource"),
			wantMsg: "the server could not find the requested resource",
		},
		{
			// upstream uses a type assertion, not errors.As
			name:    "wrapped group error gets the plain message",
			err:     fmt.Errorf("discovery: %w", oneGroup),
			wantMsg: "discovery: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := NewConditionUpdater(tNow)
			u.ProcessDiscoverResourcesErr(tc.err)
			diffConditions(t, u.Conditions(), expectedConditions(tNow,
				failCondition(v1.NamespaceDeletionDiscoveryFailure, tNow, "DiscoveryFailed", tc.wantMsg)))
		})
	}
}

func TestProcessGroupVersionErr(t *testing.T) {
	u := NewConditionUpdater(tNow)
	u.ProcessGroupVersionErr(errors.New("unexpected GroupVersion string: a/b/c"))
	diffConditions(t, u.Conditions(), expectedConditions(tNow,
		failCondition(v1.NamespaceDeletionGVParsingFailure, tNow, "GroupVersionParsingFailed", "unexpected GroupVersion string: a/b/c")))
}

func TestProcessContentTotals(t *testing.T) {
	daemonsets := schema.GroupVersionResource{Group: "apps.k8s.io", Resource: "daemonsets"}
	deployments := schema.GroupVersionResource{Group: "apps.k8s.io", Resource: "deployments"}
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

	tests := []struct {
		name   string
		totals ContentTotals
		want   []v1.NamespaceCondition
	}{
		{
			name:   "nothing",
			totals: NewContentTotals(),
			want:   expectedConditions(tNow),
		},
		{
			name:   "zero value totals (nil maps)",
			totals: ContentTotals{},
			want:   expectedConditions(tNow),
		},
		{
			name: "just remaining",
			totals: ContentTotals{
				GVRToNumRemaining:        map[schema.GroupVersionResource]int{daemonsets: 5, deployments: 5},
				FinalizersToNumRemaining: map[string]int{},
			},
			want: expectedConditions(tNow,
				failCondition(v1.NamespaceContentRemaining, tNow, "SomeResourcesRemain", "Some resources are remaining: daemonsets.apps.k8s.io has 5 resource instances, deployments.apps.k8s.io has 5 resource instances")),
		},
		{
			name: "just finalizers",
			totals: ContentTotals{
				GVRToNumRemaining:        map[schema.GroupVersionResource]int{},
				FinalizersToNumRemaining: map[string]int{"service-catalog": 6, "kubedb": 5},
			},
			want: expectedConditions(tNow,
				failCondition(v1.NamespaceFinalizersRemaining, tNow, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: kubedb in 5 resource instances, service-catalog in 6 resource instances")),
		},
		{
			name: "both",
			totals: ContentTotals{
				GVRToNumRemaining:        map[schema.GroupVersionResource]int{daemonsets: 5, deployments: 5},
				FinalizersToNumRemaining: map[string]int{"service-catalog": 6, "kubedb": 5},
			},
			want: expectedConditions(tNow,
				failCondition(v1.NamespaceContentRemaining, tNow, "SomeResourcesRemain", "Some resources are remaining: daemonsets.apps.k8s.io has 5 resource instances, deployments.apps.k8s.io has 5 resource instances"),
				failCondition(v1.NamespaceFinalizersRemaining, tNow, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: kubedb in 5 resource instances, service-catalog in 6 resource instances")),
		},
		{
			name: "core group renders with a trailing dot, zero counts skipped",
			totals: ContentTotals{
				GVRToNumRemaining:        map[schema.GroupVersionResource]int{widgets: 1, pods: 2, secrets: 0},
				FinalizersToNumRemaining: map[string]int{"b": 2, "a": 1, "c": 0},
			},
			want: expectedConditions(tNow,
				failCondition(v1.NamespaceContentRemaining, tNow, "SomeResourcesRemain", "Some resources are remaining: pods. has 2 resource instances, widgets.example.com has 1 resource instances"),
				failCondition(v1.NamespaceFinalizersRemaining, tNow, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: a in 1 resource instances, b in 2 resource instances")),
		},
		{
			// upstream keys on the map length, so only-zero entries still
			// give a True condition with an empty list
			name: "only zero counts",
			totals: ContentTotals{
				GVRToNumRemaining:        map[schema.GroupVersionResource]int{secrets: 0},
				FinalizersToNumRemaining: map[string]int{"a": 0},
			},
			want: expectedConditions(tNow,
				failCondition(v1.NamespaceContentRemaining, tNow, "SomeResourcesRemain", "Some resources are remaining: "),
				failCondition(v1.NamespaceFinalizersRemaining, tNow, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: ")),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := NewConditionUpdater(tNow)
			u.ProcessContentTotals(tc.totals)
			diffConditions(t, u.Conditions(), tc.want)
		})
	}
}

func TestProcessDeleteContentErr(t *testing.T) {
	tests := []struct {
		name string
		errs []error
		want []v1.NamespaceCondition
	}{
		{
			name: "none",
			want: expectedConditions(tNow),
		},
		{
			name: "one",
			errs: []error{errors.New("x")},
			want: expectedConditions(tNow,
				failCondition(v1.NamespaceDeletionContentFailure, tNow, "ContentDeletionFailed", "Failed to delete all resource types, 1 remaining: x")),
		},
		{
			name: "two, sorted",
			errs: []error{errors.New("y"), errors.New("x")},
			want: expectedConditions(tNow,
				failCondition(v1.NamespaceDeletionContentFailure, tNow, "ContentDeletionFailed", "Failed to delete all resource types, 2 remaining: x, y")),
		},
		{
			name: "duplicates are kept and counted",
			errs: []error{errors.New("z"), errors.New("x"), errors.New("z")},
			want: expectedConditions(tNow,
				failCondition(v1.NamespaceDeletionContentFailure, tNow, "ContentDeletionFailed", "Failed to delete all resource types, 3 remaining: x, z, z")),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := NewConditionUpdater(tNow)
			for _, err := range tc.errs {
				u.ProcessDeleteContentErr(err)
			}
			diffConditions(t, u.Conditions(), tc.want)
		})
	}
}

func TestConditionsAllFailing(t *testing.T) {
	u := NewConditionUpdater(tNow)
	u.ProcessDiscoverResourcesErr(errors.New("d"))
	u.ProcessGroupVersionErr(errors.New("g"))
	u.ProcessDeleteContentErr(errors.New("c"))
	u.ProcessContentTotals(ContentTotals{
		GVRToNumRemaining:        map[schema.GroupVersionResource]int{{Version: "v1", Resource: "pods"}: 1},
		FinalizersToNumRemaining: map[string]int{"f": 1},
	})
	diffConditions(t, u.Conditions(), []v1.NamespaceCondition{
		failCondition(v1.NamespaceDeletionDiscoveryFailure, tNow, "DiscoveryFailed", "d"),
		failCondition(v1.NamespaceDeletionGVParsingFailure, tNow, "GroupVersionParsingFailed", "g"),
		failCondition(v1.NamespaceDeletionContentFailure, tNow, "ContentDeletionFailed", "Failed to delete all resource types, 1 remaining: c"),
		failCondition(v1.NamespaceContentRemaining, tNow, "SomeResourcesRemain", "Some resources are remaining: pods. has 1 resource instances"),
		failCondition(v1.NamespaceFinalizersRemaining, tNow, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: f in 1 resource instances"),
	})
}

// TestUpdateConditions ports upstream's TestUpdateConditions and adds the
// lastTransitionTime and changed semantics.
func TestUpdateConditions(t *testing.T) {
	gvFail := func(at metav1.Time) v1.NamespaceCondition {
		return failCondition(v1.NamespaceDeletionGVParsingFailure, at, "GroupVersionParsingFailed", "bar")
	}
	tests := []struct {
		name        string
		process     func(u *ConditionUpdater)
		starting    []v1.NamespaceCondition
		want        []v1.NamespaceCondition
		wantChanged bool
	}{
		{
			name:        "empty status gets all five",
			want:        expectedConditions(tNow),
			wantChanged: true,
		},
		{
			name:     "leave unknown",
			starting: []v1.NamespaceCondition{{Type: "unknown", Status: v1.ConditionTrue, LastTransitionTime: tBefore}},
			want: append([]v1.NamespaceCondition{{Type: "unknown", Status: v1.ConditionTrue, LastTransitionTime: tBefore}},
				expectedConditions(tNow)...),
			wantChanged: true,
		},
		{
			name: "replace with success",
			starting: []v1.NamespaceCondition{
				failCondition(v1.NamespaceDeletionDiscoveryFailure, tBefore, "DiscoveryFailed", "boom"),
			},
			want:        expectedConditions(tNow),
			wantChanged: true,
		},
		{
			name: "leave different order",
			starting: []v1.NamespaceCondition{
				{Type: v1.NamespaceDeletionGVParsingFailure, Status: v1.ConditionTrue, LastTransitionTime: tBefore},
				{Type: v1.NamespaceDeletionDiscoveryFailure, Status: v1.ConditionTrue, LastTransitionTime: tBefore},
			},
			want: []v1.NamespaceCondition{
				okCondition(v1.NamespaceDeletionGVParsingFailure, tNow),
				okCondition(v1.NamespaceDeletionDiscoveryFailure, tNow),
				okCondition(v1.NamespaceDeletionContentFailure, tNow),
				okCondition(v1.NamespaceContentRemaining, tNow),
				okCondition(v1.NamespaceFinalizersRemaining, tNow),
			},
			wantChanged: true,
		},
		{
			name:    "overwrite with failure",
			process: func(u *ConditionUpdater) { u.ProcessGroupVersionErr(errors.New("bar")) },
			starting: []v1.NamespaceCondition{
				{Type: v1.NamespaceDeletionGVParsingFailure, Status: v1.ConditionFalse, LastTransitionTime: tBefore},
				{Type: v1.NamespaceDeletionDiscoveryFailure, Status: v1.ConditionTrue, LastTransitionTime: tBefore},
			},
			want: []v1.NamespaceCondition{
				gvFail(tNow),
				okCondition(v1.NamespaceDeletionDiscoveryFailure, tNow),
				okCondition(v1.NamespaceDeletionContentFailure, tNow),
				okCondition(v1.NamespaceContentRemaining, tNow),
				okCondition(v1.NamespaceFinalizersRemaining, tNow),
			},
			wantChanged: true,
		},
		{
			name:    "write new failure",
			process: func(u *ConditionUpdater) { u.ProcessGroupVersionErr(errors.New("bar")) },
			starting: []v1.NamespaceCondition{
				{Type: v1.NamespaceDeletionDiscoveryFailure, Status: v1.ConditionTrue, LastTransitionTime: tBefore},
			},
			want: []v1.NamespaceCondition{
				okCondition(v1.NamespaceDeletionDiscoveryFailure, tNow),
				gvFail(tNow),
				okCondition(v1.NamespaceDeletionContentFailure, tNow),
				okCondition(v1.NamespaceContentRemaining, tNow),
				okCondition(v1.NamespaceFinalizersRemaining, tNow),
			},
			wantChanged: true,
		},
		{
			name:        "identical ok conditions: unchanged, times kept",
			starting:    expectedConditions(tBefore),
			want:        expectedConditions(tBefore),
			wantChanged: false,
		},
		{
			name:        "identical failure: unchanged, time kept",
			process:     func(u *ConditionUpdater) { u.ProcessGroupVersionErr(errors.New("bar")) },
			starting:    expectedConditions(tBefore, gvFail(tBefore)),
			want:        expectedConditions(tBefore, gvFail(tBefore)),
			wantChanged: false,
		},
		{
			name:    "message changes without a flip: time kept",
			process: func(u *ConditionUpdater) { u.ProcessGroupVersionErr(errors.New("bar")) },
			starting: expectedConditions(tBefore,
				failCondition(v1.NamespaceDeletionGVParsingFailure, tBefore, "GroupVersionParsingFailed", "old message")),
			want:        expectedConditions(tBefore, gvFail(tBefore)),
			wantChanged: true,
		},
		{
			name:    "reason changes without a flip: time kept",
			process: func(u *ConditionUpdater) { u.ProcessGroupVersionErr(errors.New("bar")) },
			starting: expectedConditions(tBefore,
				failCondition(v1.NamespaceDeletionGVParsingFailure, tBefore, "OldReason", "bar")),
			want:        expectedConditions(tBefore, gvFail(tBefore)),
			wantChanged: true,
		},
		{
			name: "ok variant with a stale message, no flip: time kept",
			starting: expectedConditions(tBefore, v1.NamespaceCondition{
				Type: v1.NamespaceContentRemaining, Status: v1.ConditionFalse, LastTransitionTime: tBefore,
				Reason: "Old", Message: "old",
			}),
			want:        expectedConditions(tBefore),
			wantChanged: true,
		},
		{
			name:     "flip to true: only that time moves",
			process:  func(u *ConditionUpdater) { u.ProcessGroupVersionErr(errors.New("bar")) },
			starting: expectedConditions(tBefore),
			want: []v1.NamespaceCondition{
				okCondition(v1.NamespaceDeletionDiscoveryFailure, tBefore),
				gvFail(tNow),
				okCondition(v1.NamespaceDeletionContentFailure, tBefore),
				okCondition(v1.NamespaceContentRemaining, tBefore),
				okCondition(v1.NamespaceFinalizersRemaining, tBefore),
			},
			wantChanged: true,
		},
		{
			name:     "flip to false: only that time moves",
			starting: expectedConditions(tBefore, gvFail(tBefore)),
			want: []v1.NamespaceCondition{
				okCondition(v1.NamespaceDeletionDiscoveryFailure, tBefore),
				okCondition(v1.NamespaceDeletionGVParsingFailure, tNow),
				okCondition(v1.NamespaceDeletionContentFailure, tBefore),
				okCondition(v1.NamespaceContentRemaining, tBefore),
				okCondition(v1.NamespaceFinalizersRemaining, tBefore),
			},
			wantChanged: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := NewConditionUpdater(tNow)
			if tc.process != nil {
				tc.process(u)
			}
			status := &v1.NamespaceStatus{Conditions: append([]v1.NamespaceCondition(nil), tc.starting...)}
			changed := u.Update(status)
			if changed != tc.wantChanged {
				t.Errorf("Update() = %v, want %v", changed, tc.wantChanged)
			}
			diffConditions(t, status.Conditions, tc.want)
		})
	}
}

// TestUpdateTwice checks that a second Update with the same updater is a
// no-op and does not add a second content-failure condition.
func TestUpdateTwice(t *testing.T) {
	u := NewConditionUpdater(tNow)
	u.ProcessDeleteContentErr(errors.New("x"))
	var status v1.NamespaceStatus
	if !u.Update(&status) {
		t.Fatal("first Update() = false, want true")
	}
	if u.Update(&status) {
		t.Error("second Update() = true, want false")
	}
	diffConditions(t, status.Conditions, expectedConditions(tNow,
		failCondition(v1.NamespaceDeletionContentFailure, tNow, "ContentDeletionFailed", "Failed to delete all resource types, 1 remaining: x")))
}

func TestGetCondition(t *testing.T) {
	conds := expectedConditions(tNow)
	c := GetCondition(conds, v1.NamespaceContentRemaining)
	if c == nil || c.Reason != "ContentRemoved" {
		t.Fatalf("GetCondition(ContentRemaining) = %v", c)
	}
	if c != &conds[3] {
		t.Error("GetCondition does not point into the slice")
	}
	if c := GetCondition(conds, "unknown"); c != nil {
		t.Errorf("GetCondition(unknown) = %v, want nil", c)
	}
	if c := GetCondition(nil, v1.NamespaceContentRemaining); c != nil {
		t.Errorf("GetCondition(nil) = %v, want nil", c)
	}
}
