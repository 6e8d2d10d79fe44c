package deletion

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func names(list *metav1.PartialObjectMetadataList) []string {
	out := []string{}
	for _, it := range list.Items {
		out = append(out, it.Name)
	}
	return out
}

func podWith(name, node string, phase v1.PodPhase) v1.Pod {
	grace := int64(30)
	return v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS},
		Spec:       v1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: &grace},
		Status:     v1.PodStatus{Phase: phase},
	}
}

func terminating(name string) metav1.PartialObjectMetadata {
	ts := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	it := item(name)
	it.DeletionTimestamp = &ts
	return it
}

func TestPlanOpsListBeforeDeletion(t *testing.T) {
	widgets := &metav1.PartialObjectMetadataList{Items: []metav1.PartialObjectMetadata{item("w1"), item("w2", "f")}}
	snap := &Snapshot{Lists: map[schema.GroupVersionResource]*metav1.PartialObjectMetadataList{gvrWidgets: widgets}}
	p := NewPlanOps(snap)

	got, err := p.List(context.Background(), gvrWidgets, testNS)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if !reflect.DeepEqual(got.Items, widgets.Items) {
		t.Errorf("List before deletion = %v, want the snapshot's list", names(got))
	}
	got, err = p.List(context.Background(), gvrConfigMaps, testNS)
	if err != nil {
		t.Fatalf("List(absent): %v", err)
	}
	if got == nil || len(got.Items) != 0 {
		t.Errorf("List(absent) = %v, want an empty list", got)
	}
	if len(p.Requests()) != 0 {
		t.Errorf("List recorded requests: %v", p.Requests())
	}
}

func TestPlanOpsDeleteCollection(t *testing.T) {
	tests := []struct {
		name  string
		gvr   schema.GroupVersionResource
		items []metav1.PartialObjectMetadata
		pods  []v1.Pod
		want  []string
	}{
		{
			name:  "plain items go",
			gvr:   gvrWidgets,
			items: []metav1.PartialObjectMetadata{item("w1"), item("w2")},
			want:  []string{},
		},
		{
			name:  "items with finalizers or a deletionTimestamp stay",
			gvr:   gvrWidgets,
			items: []metav1.PartialObjectMetadata{item("w1"), item("w2", "example.com/cleanup"), terminating("w3"), item("w4")},
			want:  []string{"w2", "w3"},
		},
		{
			name: "pods: bound and not finished stay, unbound and finished go",
			gvr:  gvrPods,
			items: []metav1.PartialObjectMetadata{
				item("running"), item("pending-bound"), item("unbound"), item("succeeded"), item("failed"), item("unknown-to-snapshot"),
			},
			pods: []v1.Pod{
				podWith("running", "node-1", v1.PodRunning),
				podWith("pending-bound", "node-1", v1.PodPending),
				podWith("unbound", "", v1.PodPending),
				podWith("succeeded", "node-1", v1.PodSucceeded),
				podWith("failed", "node-1", v1.PodFailed),
			},
			want: []string{"running", "pending-bound"},
		},
		{
			name:  "pods: finalizers keep even an unbound pod",
			gvr:   gvrPods,
			items: []metav1.PartialObjectMetadata{item("unbound", "f"), item("finished", "f")},
			pods:  []v1.Pod{podWith("unbound", "", v1.PodPending), podWith("finished", "node-1", v1.PodSucceeded)},
			want:  []string{"unbound", "finished"},
		},
		{
			name:  "node binding only matters for pods",
			gvr:   gvrConfigMaps,
			items: []metav1.PartialObjectMetadata{item("running")},
			pods:  []v1.Pod{podWith("running", "node-1", v1.PodRunning)},
			want:  []string{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			list := &metav1.PartialObjectMetadataList{Items: tc.items}
			snap := &Snapshot{Lists: map[schema.GroupVersionResource]*metav1.PartialObjectMetadataList{tc.gvr: list}, Pods: tc.pods}
			p := NewPlanOps(snap)
			if err := p.DeleteCollection(context.Background(), tc.gvr, testNS); err != nil {
				t.Fatalf("DeleteCollection: %v", err)
			}
			got, err := p.List(context.Background(), tc.gvr, testNS)
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			if !reflect.DeepEqual(names(got), tc.want) {
				t.Errorf("List after DeleteCollection = %q, want %q", names(got), tc.want)
			}
			// the snapshot itself is not modified
			if len(snap.Lists[tc.gvr].Items) != len(tc.items) {
				t.Errorf("snapshot list changed: %d items, want %d", len(snap.Lists[tc.gvr].Items), len(tc.items))
			}
			wantReq := []PlannedRequest{{Verb: "deletecollection", Resource: tc.gvr}}
			if !reflect.DeepEqual(p.Requests(), wantReq) {
				t.Errorf("Requests = %+v, want %+v", p.Requests(), wantReq)
			}
		})
	}
}

func TestPlanOpsListErrors(t *testing.T) {
	forbidden := apierrors.NewForbidden(gvrConfigMaps.GroupResource(), "", errors.New("no"))
	snap := &Snapshot{
		Lists:    map[schema.GroupVersionResource]*metav1.PartialObjectMetadataList{gvrWidgets: {Items: []metav1.PartialObjectMetadata{item("w1")}}},
		ListErrs: map[schema.GroupVersionResource]error{gvrConfigMaps: forbidden},
	}
	p := NewPlanOps(snap)
	if err := p.DeleteCollection(context.Background(), gvrConfigMaps, testNS); err != forbidden {
		t.Errorf("DeleteCollection err = %v, want the list error %v", err, forbidden)
	}
	if list, err := p.List(context.Background(), gvrConfigMaps, testNS); err != forbidden || list != nil {
		t.Errorf("List = %v, %v; want nil, %v", list, err, forbidden)
	}
	if len(p.Requests()) != 0 {
		t.Errorf("a failing DeleteCollection recorded %+v", p.Requests())
	}
	// other GVRs are unaffected
	if err := p.DeleteCollection(context.Background(), gvrWidgets, testNS); err != nil {
		t.Errorf("DeleteCollection(widgets) = %v", err)
	}
	if list, err := p.List(context.Background(), gvrWidgets, testNS); err != nil || len(list.Items) != 0 {
		t.Errorf("List(widgets) = %v, %v; want empty", list, err)
	}
}

func TestPlanOpsRequestsInOrder(t *testing.T) {
	snap := &Snapshot{Lists: map[schema.GroupVersionResource]*metav1.PartialObjectMetadataList{
		gvrPods:    {Items: []metav1.PartialObjectMetadata{item("p1")}},
		gvrWidgets: {Items: []metav1.PartialObjectMetadata{item("w1"), item("w2", "f")}},
	}}
	p := NewPlanOps(snap)
	ctx := context.Background()
	if err := p.DeleteCollection(ctx, gvrPods, testNS); err != nil {
		t.Fatal(err)
	}
	if err := p.Delete(ctx, gvrWidgets, testNS, "w1"); err != nil {
		t.Fatal(err)
	}
	if err := p.Delete(ctx, gvrWidgets, testNS, "w2"); err != nil {
		t.Fatal(err)
	}
	if err := p.DeleteCollection(ctx, gvrConfigMaps, testNS); err != nil {
		t.Fatal(err)
	}
	want := []PlannedRequest{
		{Verb: "deletecollection", Resource: gvrPods},
		{Verb: "delete", Resource: gvrWidgets, Name: "w1"},
		{Verb: "delete", Resource: gvrWidgets, Name: "w2"},
		{Verb: "deletecollection", Resource: gvrConfigMaps},
	}
	if !reflect.DeepEqual(p.Requests(), want) {
		t.Errorf("Requests = %+v, want %+v", p.Requests(), want)
	}
	got, err := p.List(ctx, gvrWidgets, testNS)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(names(got), []string{"w2"}) {
		t.Errorf("List(widgets) after deleting each = %q, want [w2]", names(got))
	}
}

// The estimate reads the pods still there: an unbound pod is gone after
// the deletion, a bound one stays.
func TestPlanOpsListPods(t *testing.T) {
	pods := []v1.Pod{podWith("a", "n", v1.PodRunning), podWith("b", "", v1.PodPending)}
	p := NewPlanOps(&Snapshot{Pods: pods, Lists: map[schema.GroupVersionResource]*metav1.PartialObjectMetadataList{
		gvrPods: {Items: []metav1.PartialObjectMetadata{item("a"), item("b")}},
	}})
	got, err := p.ListPods(context.Background(), testNS)
	if err != nil || !reflect.DeepEqual(got, pods) {
		t.Errorf("ListPods = %v, %v; want the snapshot's pods", got, err)
	}
	if err := p.DeleteCollection(context.Background(), gvrPods, testNS); err != nil {
		t.Fatal(err)
	}
	got, _ = p.ListPods(context.Background(), testNS)
	if len(got) != 1 || got[0].Name != "a" {
		t.Errorf("ListPods after the deletion = %v, want only the bound pod a", got)
	}
}

func TestSnapshotSortedGVRs(t *testing.T) {
	snap := &Snapshot{
		Lists: map[schema.GroupVersionResource]*metav1.PartialObjectMetadataList{
			gvrWidgets: {}, gvrPods: {}, gvrConfigMaps: {},
		},
		ListErrs: map[schema.GroupVersionResource]error{
			gvrReadOnly:   errors.New("x"),
			gvrConfigMaps: errors.New("y"), // in both: listed once
		},
	}
	want := []schema.GroupVersionResource{gvrConfigMaps, gvrPods, gvrReadOnly, gvrWidgets}
	if got := snap.SortedGVRs(); !reflect.DeepEqual(got, want) {
		t.Errorf("SortedGVRs = %v, want %v", got, want)
	}
	// GVRs yields the same, from an Order that covers them (with types
	// the snapshot lacks), or by sorting when it does not cover them all.
	for _, order := range [][]schema.GroupVersionResource{nil, want, {gvrConfigMaps, gvrPods, gvrWidgets},
		{gvrConfigMaps, {Resource: "absent"}, gvrPods, gvrReadOnly, gvrWidgets}} {
		snap.Order = order
		if got := slices.Collect(snap.GVRs()); !reflect.DeepEqual(got, want) {
			t.Errorf("GVRs with Order %v = %v, want %v", order, got, want)
		}
	}
	for range snap.GVRs() {
		break // stopping early is allowed
	}
	// Sealed, it walks the same, Listed leaving out the failed list; a
	// type added after the seal is walked too.
	snap.Seal()
	listed := func() (out []schema.GroupVersionResource) {
		for gvr, list := range snap.Listed() {
			if list != snap.Lists[gvr] {
				t.Errorf("Listed gave %s another list", gvr)
			}
			out = append(out, gvr)
		}
		return out
	}
	if got := slices.Collect(snap.GVRs()); !reflect.DeepEqual(got, want) {
		t.Errorf("sealed GVRs = %v, want %v", got, want)
	}
	if got, want := listed(), []schema.GroupVersionResource{gvrConfigMaps, gvrPods, gvrWidgets}; !reflect.DeepEqual(got, want) {
		t.Errorf("sealed Listed = %v, want %v", got, want)
	}
	late := schema.GroupVersionResource{Version: "v1", Resource: "aaa"}
	snap.Lists[late] = &metav1.PartialObjectMetadataList{}
	if got := listed(); len(got) != 4 || got[0] != late {
		t.Errorf("Listed after a type was added = %v, want it first", got)
	}
}

// TestPlanOpsDrivesContentDeleter runs a pass over a snapshot the way
// explain does and checks the predicted requests and conditions.
func TestPlanOpsDrivesContentDeleter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 9, 5, 0, time.UTC)
	nowMeta := metav1.NewTime(now)
	deletedAt := metav1.NewTime(now.Add(-10 * time.Second))
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS, DeletionTimestamp: &deletedAt}}

	tests := []struct {
		name            string
		snap            *Snapshot
		wantRequests    []string
		wantEstimate    int64
		wantPodsBlocked bool
		wantConditions  []v1.NamespaceCondition
	}{
		{
			name: "bound pod blocks everything else",
			snap: &Snapshot{
				Lists: map[schema.GroupVersionResource]*metav1.PartialObjectMetadataList{
					gvrPods:    {Items: []metav1.PartialObjectMetadata{item("p1")}},
					gvrWidgets: {Items: []metav1.PartialObjectMetadata{item("w1", "example.com/cleanup")}},
				},
				Pods: []v1.Pod{podWith("p1", "node-1", v1.PodRunning)},
			},
			wantRequests:    []string{"deletecollection pods"},
			wantEstimate:    30,
			wantPodsBlocked: true,
			wantConditions:  expectedConditions(nowMeta),
		},
		{
			name: "no pods: widgets with finalizers remain, configmaps go",
			snap: &Snapshot{
				Lists: map[schema.GroupVersionResource]*metav1.PartialObjectMetadataList{
					gvrConfigMaps: {Items: []metav1.PartialObjectMetadata{item("cm1")}},
					gvrWidgets:    {Items: []metav1.PartialObjectMetadata{item("w1", "example.com/cleanup")}},
				},
			},
			wantRequests: []string{"deletecollection configmaps", "deletecollection pods", "deletecollection widgets"},
			wantEstimate: 15,
			wantConditions: expectedConditions(nowMeta,
				failCondition(v1.NamespaceContentRemaining, nowMeta, "SomeResourcesRemain", "Some resources are remaining: widgets.example.com has 1 resource instances"),
				failCondition(v1.NamespaceFinalizersRemaining, nowMeta, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: example.com/cleanup in 1 resource instances"),
			),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ops := NewPlanOps(tc.snap)
			d := &NamespacedResourcesDeleter{
				Ops: ops, Pods: ops, DiscoverResourcesFn: discovered(testResourceLists(nil), nil),
				OrderedDeletion: true, Now: func() time.Time { return now },
			}
			r := d.deleteAllContent(context.Background(), ns)
			if r.Err != nil {
				t.Errorf("Err = %v", r.Err)
			}
			if r.Estimate != tc.wantEstimate {
				t.Errorf("Estimate = %d, want %d", r.Estimate, tc.wantEstimate)
			}
			if r.PodsBlocked != tc.wantPodsBlocked {
				t.Errorf("PodsBlocked = %v, want %v", r.PodsBlocked, tc.wantPodsBlocked)
			}
			diffConditions(t, r.Conditions, tc.wantConditions)
			var got []string
			for _, req := range ops.Requests() {
				got = append(got, req.Verb+" "+req.Resource.Resource)
			}
			sort.Strings(got)
			if !reflect.DeepEqual(got, tc.wantRequests) {
				t.Errorf("Requests = %q, want %q", got, tc.wantRequests)
			}
			if reqs := ops.Requests(); len(reqs) > 0 && reqs[0].Resource != gvrPods {
				t.Errorf("first request %+v, want pods first", reqs[0])
			}
		})
	}
}

// The order of names without making them is the order of the names.
func TestCompareNamesIsTheNamesOrder(t *testing.T) {
	parts := []string{"", "a", "ab", "b", "apps", "v1", "v1beta1", "v2", "x/y", "pods", "pods2", "z"}
	var gvrs []schema.GroupVersionResource
	for _, g := range parts {
		for _, v := range parts[:6] {
			for _, r := range parts[5:] {
				gvrs = append(gvrs, schema.GroupVersionResource{Group: g, Version: v, Resource: r})
			}
		}
	}
	for _, a := range gvrs {
		for _, b := range gvrs {
			if got, want := compareNames(a, b), strings.Compare(a.String(), b.String()); got != want {
				t.Fatalf("compareNames(%q, %q) = %d, want %d", a.String(), b.String(), got, want)
			}
		}
	}
}

// A snapshot given its discovery's order picks its resources from it, in
// the order it would sort them; one missing from the order is sorted in.
func TestSortedGVRsFromOrder(t *testing.T) {
	gvr := func(g, r string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: g, Version: "v1", Resource: r}
	}
	snap := &Snapshot{Lists: map[schema.GroupVersionResource]*metav1.PartialObjectMetadataList{gvr("b", "x"): {}, gvr("", "pods"): {}, gvr("a", "y"): {}},
		ListErrs: map[schema.GroupVersionResource]error{gvr("c", "z"): errors.New("down")}}
	want := snap.SortedGVRs()
	snap.Order = SortedByName([]schema.GroupVersionResource{gvr("c", "z"), gvr("a", "y"), gvr("zz", "unused"), gvr("b", "x"), gvr("", "pods")})
	if got := snap.SortedGVRs(); !reflect.DeepEqual(got, want) {
		t.Errorf("from the order %v, want %v", got, want)
	}
	snap.Order = snap.Order[1:]
	if got := snap.SortedGVRs(); !reflect.DeepEqual(got, want) {
		t.Errorf("from an order that lacks one %v, want %v", got, want)
	}
}
