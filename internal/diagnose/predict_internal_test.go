package diagnose

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/compat"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
)

// fullPass is predictPass over every deletable type, as the controller
// walks them: what predictPass, which skips the types a snapshot holds
// nothing of, must give.
func fullPass(obs Observation) deletion.ContentResult {
	ops := deletion.NewPlanOps(obs.Snapshot)
	ops.DeleteErrs = WebhookRejections(obs)
	d := &deletion.NamespacedResourcesDeleter{
		NsClient: deletion.NewPlanNamespaces(obs.Namespace), Ops: ops, Pods: ops,
		DiscoverResourcesFn: func() ([]*metav1.APIResourceList, error) { return obs.Resources, obs.DiscoveryErr },
		FinalizerToken:      deletion.FinalizerToken, OrderedDeletion: obs.Ordering.Ordered,
		Now: func() time.Time { return obs.Now },
	}
	res, _ := d.Delete(context.Background(), obs.Namespace.Name)
	if res.Content == nil {
		return deletion.ContentResult{}
	}
	return *res.Content
}

func TestPredictPassSkipsOnlyWhatChangesNothing(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	verbs := metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	gvr := func(group, resource string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: group, Version: "v1", Resource: resource}
	}
	pods, cms, secrets, widgets, gadgets := gvr("", "pods"), gvr("", "configmaps"), gvr("", "secrets"), gvr("example.com", "widgets"), gvr("example.com", "gadgets")
	resources := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Namespaced: true, Verbs: verbs}, {Name: "configmaps", Namespaced: true, Verbs: verbs}, {Name: "secrets", Namespaced: true, Verbs: verbs}}},
		{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{{Name: "widgets", Namespaced: true, Verbs: verbs}, {Name: "gadgets", Namespaced: true, Verbs: metav1.Verbs{"delete", "list", "get"}}}},
	}
	deleted := metav1.NewTime(now.Add(-time.Minute))
	item := func(name string, finalizers ...string) metav1.PartialObjectMetadata {
		return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers}}
	}
	grace := int64(30)
	pod := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "p", DeletionTimestamp: &deleted, DeletionGracePeriodSeconds: &grace}}
	cases := map[string]func(*deletion.Snapshot){
		"held among empty types": func(s *deletion.Snapshot) {
			s.Lists[cms] = &metav1.PartialObjectMetadataList{Items: []metav1.PartialObjectMetadata{item("a", "example.com/x"), item("b")}}
		},
		"only plain objects a compact sweep did not keep": func(s *deletion.Snapshot) { s.Omitted[secrets] = 4 },
		"a list that failed": func(s *deletion.Snapshot) {
			s.ListErrs[widgets] = errors.New("the server is currently unable to handle the request")
		},
		"pods going first": func(s *deletion.Snapshot) {
			s.Lists[pods] = &metav1.PartialObjectMetadataList{Items: []metav1.PartialObjectMetadata{pod}}
			s.Lists[cms] = &metav1.PartialObjectMetadataList{Items: []metav1.PartialObjectMetadata{item("a", "example.com/x")}}
		},
		"a type without deletecollection": func(s *deletion.Snapshot) {
			s.Lists[gadgets] = &metav1.PartialObjectMetadataList{Items: []metav1.PartialObjectMetadata{item("g", "example.com/y")}}
		},
		"nothing at all": func(*deletion.Snapshot) {},
	}
	for name, fill := range cases {
		for _, ordered := range []bool{true, false} {
			obs := func() Observation {
				snap := &deletion.Snapshot{Lists: map[schema.GroupVersionResource]*metav1.PartialObjectMetadataList{}, ListErrs: map[schema.GroupVersionResource]error{}, Omitted: map[schema.GroupVersionResource]int{}}
				for _, g := range []schema.GroupVersionResource{pods, cms, secrets, widgets, gadgets} {
					snap.Lists[g] = &metav1.PartialObjectMetadataList{}
				}
				fill(snap)
				if l := snap.Lists[pods]; l != nil {
					snap.Pods = testPods(l.Items)
				}
				return Observation{Namespace: &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo", DeletionTimestamp: &deleted},
					Spec: v1.NamespaceSpec{Finalizers: []v1.FinalizerName{v1.FinalizerKubernetes}}},
					Resources: resources, Snapshot: snap, Now: now, Ordering: compat.Ordering{Ordered: ordered}, Services: map[string]ServiceState{}}
			}
			o := obs()
			o.Deletable = deletion.DeletableOf(o.Resources)
			if got, want := predictPass(o), fullPass(obs()); !reflect.DeepEqual(got, want) {
				t.Errorf("%s (ordered %v): predicted\n%+v\nthe full pass\n%+v", name, ordered, got, want)
			}
		}
	}
}

func testPods(items []metav1.PartialObjectMetadata) []v1.Pod {
	out := make([]v1.Pod, 0, len(items))
	for _, m := range items {
		out = append(out, v1.Pod{ObjectMeta: m.ObjectMeta, Spec: v1.PodSpec{TerminationGracePeriodSeconds: m.DeletionGracePeriodSeconds}})
	}
	return out
}
