package deletion

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// fakeNamespaces is a namespace client whose finalize answers can be
// scripted: errs are returned one by one before the call succeeds.
type fakeNamespaces struct {
	ns        *v1.Namespace
	getErr    error
	errs      []error
	reread    *v1.Namespace // what Get returns after the first finalize attempt
	finalized []v1.FinalizerName
	calls     int
}

func (f *fakeNamespaces) Get(_ context.Context, name string, _ metav1.GetOptions) (*v1.Namespace, error) {
	if f.getErr != nil {
		return nil, f.getErr
	}
	if f.ns == nil {
		return nil, apierrors.NewNotFound(v1.Resource("namespaces"), name)
	}
	if f.calls > 0 && f.reread != nil {
		return f.reread.DeepCopy(), nil
	}
	return f.ns.DeepCopy(), nil
}

func (f *fakeNamespaces) Finalize(_ context.Context, ns *v1.Namespace, _ metav1.UpdateOptions) (*v1.Namespace, error) {
	f.calls++
	if len(f.errs) > 0 {
		err := f.errs[0]
		f.errs = f.errs[1:]
		return nil, err
	}
	f.finalized = ns.Spec.Finalizers
	return ns, nil
}

func deletingNamespace(tokens ...v1.FinalizerName) *v1.Namespace {
	deleted := metav1.NewTime(time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC))
	return &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS, UID: "uid-1", DeletionTimestamp: &deleted}, Spec: v1.NamespaceSpec{Finalizers: tokens}}
}

func TestDelete(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 9, 5, 0, time.UTC)
	conflict := apierrors.NewConflict(v1.Resource("namespaces"), testNS, errors.New("changed"))
	discoveryErr := &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{{Group: "m.io", Version: "v1"}: errors.New("down")}}
	active := deletingNamespace(FinalizerToken)
	active.DeletionTimestamp = nil
	recreated := deletingNamespace(FinalizerToken)
	recreated.UID = "uid-2"
	tests := []struct {
		name          string
		ns            *fakeNamespaces
		items         []metav1.PartialObjectMetadata // configmaps
		discoveryErr  error
		despite, all  bool
		wantStage     Stage
		wantErr       string
		wantRemaining bool
		wantFinalized []v1.FinalizerName // spec.finalizers sent, nil when not sent
		wantDropped   []v1.FinalizerName
	}{
		{name: "gone", ns: &fakeNamespaces{}, wantStage: StageGone},
		{name: "get fails", ns: &fakeNamespaces{getErr: errors.New("boom")}, wantStage: StageGone, wantErr: "boom"},
		{name: "not being deleted", ns: &fakeNamespaces{ns: active}, wantStage: StageNotDeleting},
		{name: "already finalized", ns: &fakeNamespaces{ns: deletingNamespace()}, wantStage: StageAlreadyFinalized},
		{name: "empty: finalized, other tokens kept sorted", ns: &fakeNamespaces{ns: deletingNamespace("z.io/x", FinalizerToken, "a.io/y")},
			wantStage: StageFinalized, wantFinalized: []v1.FinalizerName{"a.io/y", "z.io/x"}, wantDropped: []v1.FinalizerName{FinalizerToken}},
		{name: "escalation drops every token", ns: &fakeNamespaces{ns: deletingNamespace("z.io/x", FinalizerToken)}, all: true,
			wantStage: StageFinalized, wantFinalized: []v1.FinalizerName{}, wantDropped: []v1.FinalizerName{"z.io/x", FinalizerToken}},
		{name: "content with finalizers remains", ns: &fakeNamespaces{ns: deletingNamespace(FinalizerToken)},
			items: []metav1.PartialObjectMetadata{item("held", "example.com/x")}, wantStage: StageContentRemains, wantRemaining: true},
		{name: "discovery failure is not finalized", ns: &fakeNamespaces{ns: deletingNamespace(FinalizerToken)}, discoveryErr: discoveryErr,
			wantStage: StageContentFailed, wantErr: "unable to retrieve the complete list of server APIs: m.io/v1: down"},
		{name: "discovery failure finalized with the escalation", ns: &fakeNamespaces{ns: deletingNamespace(FinalizerToken)}, discoveryErr: discoveryErr, despite: true,
			wantStage: StageFinalized, wantFinalized: []v1.FinalizerName{}, wantDropped: []v1.FinalizerName{FinalizerToken}},
		{name: "the escalation does not finalize over remaining content", ns: &fakeNamespaces{ns: deletingNamespace(FinalizerToken)}, discoveryErr: discoveryErr, despite: true,
			items: []metav1.PartialObjectMetadata{item("held", "example.com/x")}, wantStage: StageContentFailed, wantErr: "m.io/v1: down"},
		{name: "conflict retried", ns: &fakeNamespaces{ns: deletingNamespace(FinalizerToken), errs: []error{conflict}},
			wantStage: StageFinalized, wantFinalized: []v1.FinalizerName{}, wantDropped: []v1.FinalizerName{FinalizerToken}},
		{name: "re-created namespace is not finalized", ns: &fakeNamespaces{ns: deletingNamespace(FinalizerToken), errs: []error{conflict}, reread: recreated},
			wantStage: StageFinalized, wantErr: "namespace uid has changed across retries", wantDropped: []v1.FinalizerName{FinalizerToken}},
		{name: "finalize answering NotFound is success", ns: &fakeNamespaces{ns: deletingNamespace(FinalizerToken), errs: []error{apierrors.NewNotFound(v1.Resource("namespaces"), testNS)}},
			wantStage: StageFinalized, wantDropped: []v1.FinalizerName{FinalizerToken}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ops := &fakeOps{items: map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{gvrConfigMaps: tc.items},
				keep: map[schema.GroupVersionResource]map[string]bool{gvrConfigMaps: {"held": true}}}
			d := &NamespacedResourcesDeleter{
				NsClient: tc.ns, Ops: ops, Pods: &fakePods{}, FinalizerToken: FinalizerToken, OrderedDeletion: true,
				DiscoverResourcesFn: discovered(testResourceLists(nil), tc.discoveryErr), Now: func() time.Time { return now },
				FinalizeDespiteDiscoveryFailure: tc.despite, RemoveNamespaceFinalizers: tc.all,
			}
			res, err := d.Delete(context.Background(), testNS)
			if res.Stage != tc.wantStage {
				t.Errorf("stage %d, want %d", res.Stage, tc.wantStage)
			}
			switch {
			case tc.wantErr == "" && tc.wantRemaining:
				var rre *ResourcesRemainingError
				if !errors.As(err, &rre) || rre.Estimate != 15 {
					t.Errorf("err %v, want ResourcesRemainingError of 15 s", err)
				}
			case tc.wantErr == "" && err != nil:
				t.Errorf("err %v, want none", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("err %v, want %q", err, tc.wantErr)
			}
			if tc.wantFinalized != nil && !reflect.DeepEqual(tc.ns.finalized, tc.wantFinalized) {
				t.Errorf("finalize sent %q, want %q", tc.ns.finalized, tc.wantFinalized)
			}
			if tc.wantFinalized == nil && tc.ns.finalized != nil && tc.wantStage != StageFinalized {
				t.Errorf("finalize sent %q, want none", tc.ns.finalized)
			}
			if !reflect.DeepEqual(res.Dropped, tc.wantDropped) {
				t.Errorf("dropped %q, want %q", res.Dropped, tc.wantDropped)
			}
			if (res.Content != nil) != (tc.wantStage >= StageContentFailed) {
				t.Errorf("content result %+v at stage %d", res.Content, res.Stage)
			}
		})
	}
}

// A plan plays several passes with escalations between them, the way a
// force run would: strip a finalizer, and the next pass finalizes; the
// namespace is then gone.
func TestPlanPlaysPassesToTheEnd(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 9, 5, 0, time.UTC)
	ns := deletingNamespace(FinalizerToken)
	snap := &Snapshot{Lists: map[schema.GroupVersionResource]*metav1.PartialObjectMetadataList{
		gvrWidgets: {Items: []metav1.PartialObjectMetadata{item("w1", "example.com/cleanup", metav1.FinalizerDeleteDependents), item("w2")}},
		gvrPods:    {Items: []metav1.PartialObjectMetadata{item("p1")}},
	}, Pods: []v1.Pod{podWith("p1", "", v1.PodPending)}}
	ops, nsc := NewPlanOps(snap), NewPlanNamespaces(ns)
	d := &NamespacedResourcesDeleter{NsClient: nsc, Ops: ops, Pods: ops, FinalizerToken: FinalizerToken, OrderedDeletion: true,
		DiscoverResourcesFn: discovered(testResourceLists(nil), nil), Now: func() time.Time { return now }}

	res, err := d.Delete(context.Background(), testNS)
	var rre *ResourcesRemainingError
	if !errors.As(err, &rre) || res.Stage != StageContentRemains {
		t.Fatalf("pass 1: stage %d, err %v", res.Stage, err)
	}
	left, _ := ops.List(context.Background(), gvrWidgets, testNS)
	if len(left.Items) != 1 || !reflect.DeepEqual(left.Items[0].Finalizers, []string{"example.com/cleanup"}) || left.Items[0].DeletionTimestamp == nil {
		t.Fatalf("after pass 1 widgets = %+v, want w1 terminating with only example.com/cleanup", left.Items)
	}
	ops.RemoveFinalizers(gvrWidgets, "w1", []string{"example.com/cleanup"})
	if res, err = d.Delete(context.Background(), testNS); err != nil || res.Stage != StageFinalized {
		t.Fatalf("pass 2: stage %d, err %v", res.Stage, err)
	}
	if res, err = d.Delete(context.Background(), testNS); err != nil || res.Stage != StageGone {
		t.Fatalf("pass 3: stage %d, err %v; want the namespace gone", res.Stage, err)
	}
	if _, err := NewPlanOps(snap).List(context.Background(), gvrWidgets, testNS); err != nil || len(snap.Lists[gvrWidgets].Items) != 2 {
		t.Errorf("the snapshot itself changed")
	}
}

// A namespace held by its own metadata.finalizers stays after finalizing
// until they are removed.
func TestPlanNamespacesMetadataFinalizers(t *testing.T) {
	ns := deletingNamespace(FinalizerToken)
	ns.Finalizers = []string{"example.com/ns"}
	p := NewPlanNamespaces(ns)
	if _, err := p.Finalize(context.Background(), &v1.Namespace{ObjectMeta: ns.ObjectMeta}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := p.Get(context.Background(), testNS, metav1.GetOptions{})
	if err != nil || len(got.Spec.Finalizers) != 0 {
		t.Fatalf("after finalize: %v, %+v", err, got)
	}
	p.RemoveMetadataFinalizers()
	if _, err := p.Get(context.Background(), testNS, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after the metadata finalizers went: %v, want NotFound", err)
	}
	if _, err := p.Finalize(context.Background(), ns, metav1.UpdateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("finalize of a gone namespace: %v, want NotFound", err)
	}
}

// A pod force-deleted goes at once unless finalizers hold it; one that is
// stripped of its finalizers while bound still waits for its kubelet.
func TestPlanOpsForceDeleteAndStrip(t *testing.T) {
	deleted := metav1.NewTime(time.Now())
	bound := item("bound", "example.com/x")
	bound.DeletionTimestamp = &deleted
	snap := &Snapshot{Lists: map[schema.GroupVersionResource]*metav1.PartialObjectMetadataList{
		gvrPods: {Items: []metav1.PartialObjectMetadata{bound, item("lost"), item("held", "example.com/x")}},
	}, Pods: []v1.Pod{podWith("bound", "node-1", v1.PodRunning), podWith("lost", "gone", v1.PodRunning), podWith("held", "gone", v1.PodRunning)}}
	p := NewPlanOps(snap)
	p.RemoveFinalizers(gvrPods, "bound", []string{"example.com/x"})
	p.ForceDelete(gvrPods, "lost")
	p.ForceDelete(gvrPods, "held")
	got, _ := p.List(context.Background(), gvrPods, testNS)
	if !reflect.DeepEqual(names(got), []string{"bound", "held"}) {
		t.Errorf("pods left %q, want bound (kubelet) and held (finalizer)", names(got))
	}
	for _, it := range got.Items {
		if it.DeletionTimestamp == nil {
			t.Errorf("%s not marked for deletion", it.Name)
		}
	}
}
