package deletion

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/discovery"
)

const testNS = "NS"

var (
	gvrPods       = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	gvrConfigMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvrWidgets    = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	gvrReadOnly   = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "readonlies"}
)

var allVerbs = metav1.Verbs{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

// fakeCall is one request sent to fakeOps.
type fakeCall struct {
	verb string
	gvr  schema.GroupVersionResource
	ns   string
	name string
}

func (c fakeCall) String() string {
	s := c.verb + " " + c.gvr.Resource + "." + c.gvr.Group
	if c.name != "" {
		s += " " + c.name
	}
	return s
}

// fakeOps is a tiny API server: items per GVR; a DELETE removes an item
// unless it is named in keep; configurable errors per GVR (and per item
// for Delete).
type fakeOps struct {
	mu                  sync.Mutex
	items               map[schema.GroupVersionResource][]metav1.PartialObjectMetadata
	keep                map[schema.GroupVersionResource]map[string]bool
	deleteCollectionErr map[schema.GroupVersionResource]error
	listErr             map[schema.GroupVersionResource]error
	deleteErr           map[string]error // by item name
	calls               []fakeCall
}

func (f *fakeOps) record(c fakeCall) {
	f.calls = append(f.calls, c)
}

func (f *fakeOps) remove(gvr schema.GroupVersionResource, name string) {
	var out []metav1.PartialObjectMetadata
	for _, it := range f.items[gvr] {
		if it.Name != name || f.keep[gvr][it.Name] {
			out = append(out, it)
		}
	}
	f.items[gvr] = out
}

func (f *fakeOps) DeleteCollection(_ context.Context, gvr schema.GroupVersionResource, namespace string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record(fakeCall{verb: "deletecollection", gvr: gvr, ns: namespace})
	if err := f.deleteCollectionErr[gvr]; err != nil {
		return err
	}
	for _, it := range append([]metav1.PartialObjectMetadata(nil), f.items[gvr]...) {
		f.remove(gvr, it.Name)
	}
	return nil
}

func (f *fakeOps) List(_ context.Context, gvr schema.GroupVersionResource, namespace string) (*metav1.PartialObjectMetadataList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record(fakeCall{verb: "list", gvr: gvr, ns: namespace})
	if err := f.listErr[gvr]; err != nil {
		return nil, err
	}
	return &metav1.PartialObjectMetadataList{Items: append([]metav1.PartialObjectMetadata(nil), f.items[gvr]...)}, nil
}

func (f *fakeOps) Delete(_ context.Context, gvr schema.GroupVersionResource, namespace, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record(fakeCall{verb: "delete", gvr: gvr, ns: namespace, name: name})
	if err := f.deleteErr[name]; err != nil {
		return err
	}
	f.remove(gvr, name)
	return nil
}

// callsFor returns, in order, the calls made for gvr.
func (f *fakeOps) callsFor(gvr schema.GroupVersionResource) []string {
	out := []string{}
	for _, c := range f.calls {
		if c.gvr == gvr {
			out = append(out, c.String())
		}
	}
	return out
}

type fakePods struct {
	pods  []v1.Pod
	err   error
	calls int
}

func (f *fakePods) ListPods(_ context.Context, namespace string) ([]v1.Pod, error) {
	f.calls++
	if namespace != testNS {
		return nil, fmt.Errorf("ListPods namespace %q, want %q", namespace, testNS)
	}
	return f.pods, f.err
}

func item(name string, finalizers ...string) metav1.PartialObjectMetadata {
	return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, Finalizers: finalizers}}
}

func pod(name string, grace int64, phase v1.PodPhase) v1.Pod {
	return v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS},
		Spec:       v1.PodSpec{NodeName: "node-1", TerminationGracePeriodSeconds: &grace},
		Status:     v1.PodStatus{Phase: phase},
	}
}

// testResourceLists: pods, configmaps, widgets with every verb, and a
// resource that cannot be deleted. widgetVerbs overrides widgets' verbs.
func testResourceLists(widgetVerbs metav1.Verbs) []*metav1.APIResourceList {
	if widgetVerbs == nil {
		widgetVerbs = allVerbs
	}
	return []*metav1.APIResourceList{
		{
			GroupVersion: "v1",
			APIResources: []metav1.APIResource{
				{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: allVerbs},
				{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: allVerbs},
			},
		},
		{
			GroupVersion: "example.com/v1",
			APIResources: []metav1.APIResource{
				{Name: "widgets", Namespaced: true, Kind: "Widget", Verbs: widgetVerbs},
				{Name: "readonlies", Namespaced: true, Kind: "ReadOnly", Verbs: metav1.Verbs{"get", "list", "watch"}},
			},
		},
	}
}

// errMessages flattens an aggregate into sorted messages.
func errMessages(err error) []string {
	if err == nil {
		return nil
	}
	var out []string
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		for _, e := range agg.Errors() {
			out = append(out, e.Error())
		}
	} else {
		out = append(out, err.Error())
	}
	sort.Strings(out)
	return out
}

func TestDeleteAllContent(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 9, 5, 0, time.UTC)
	nowMeta := metav1.NewTime(now)

	metricsGV := schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}
	discoveryErr := &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{
		metricsGV: errors.New("stale GroupVersion discovery: metrics.k8s.io/v1beta1"),
	}}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "",
		errors.New(`User "bob" cannot list resource "configmaps" in API group "" in the namespace "NS"`))
	unavailable := apierrors.NewServiceUnavailable("the server is currently unable to handle the request")

	const (
		cmUnexpected   = "unexpected items still remain in namespace: NS for gvr: /v1, Resource=configmaps"
		podsUnexpected = "unexpected items still remain in namespace: NS for gvr: /v1, Resource=pods"
		forbiddenMsg   = `configmaps is forbidden: User "bob" cannot list resource "configmaps" in API group "" in the namespace "NS"`
	)

	// Concurrency changes the order requests are sent in, never the result.
	for _, workers := range []int{1, 8} {
		tests := []struct {
			name string
			// setup
			resources       []*metav1.APIResourceList
			discoveryErr    error
			ops             *fakeOps
			pods            *fakePods
			nilPodLister    bool
			ordered         bool
			deletedSecsAgo  int
			widgetVerbs     metav1.Verbs
			useWidgetsVerbs bool
			// expectations
			wantEstimate    int64
			wantErrs        []string // sorted messages of the aggregate
			wantConditions  []v1.NamespaceCondition
			wantPodsBlocked bool
			wantRemaining   map[schema.GroupVersionResource]int
			wantFinalizers  map[string]int
			wantCalls       map[schema.GroupVersionResource][]string // per GVR, in order
			wantPodListings int
		}{
			{
				name:            "empty namespace",
				ops:             &fakeOps{},
				pods:            &fakePods{},
				ordered:         true,
				wantEstimate:    0,
				wantConditions:  expectedConditions(nowMeta),
				wantRemaining:   map[schema.GroupVersionResource]int{},
				wantFinalizers:  map[string]int{},
				wantPodListings: 1,
				wantCalls: map[schema.GroupVersionResource][]string{
					gvrPods:       {"deletecollection pods.", "list pods."},
					gvrConfigMaps: {"deletecollection configmaps.", "list configmaps."},
					gvrWidgets:    {"deletecollection widgets.example.com", "list widgets.example.com"},
				},
			},
			{
				name: "items remaining with finalizers",
				ops: &fakeOps{
					items: map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{
						gvrWidgets:    {item("w1", "example.com/cleanup"), item("w2", "example.com/cleanup", "example.com/other")},
						gvrConfigMaps: {item("cm1"), item("cm2", "example.com/cleanup")},
					},
					keep: map[schema.GroupVersionResource]map[string]bool{gvrWidgets: {"w1": true, "w2": true}, gvrConfigMaps: {"cm2": true}},
				},
				pods:         &fakePods{},
				ordered:      true,
				wantEstimate: 15,
				// finalizer counts add up across resource types
				wantConditions: expectedConditions(nowMeta,
					failCondition(v1.NamespaceContentRemaining, nowMeta, "SomeResourcesRemain", "Some resources are remaining: configmaps. has 1 resource instances, widgets.example.com has 2 resource instances"),
					failCondition(v1.NamespaceFinalizersRemaining, nowMeta, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: example.com/cleanup in 3 resource instances, example.com/other in 1 resource instances"),
				),
				wantRemaining:   map[schema.GroupVersionResource]int{gvrWidgets: 2, gvrConfigMaps: 1},
				wantFinalizers:  map[string]int{"example.com/cleanup": 3, "example.com/other": 1},
				wantPodListings: 1,
				wantCalls: map[schema.GroupVersionResource][]string{
					gvrPods:       {"deletecollection pods.", "list pods."},
					gvrConfigMaps: {"deletecollection configmaps.", "list configmaps."},
					gvrWidgets:    {"deletecollection widgets.example.com", "list widgets.example.com"},
				},
			},
			{
				name: "items remaining without finalizers and no estimate",
				ops: &fakeOps{
					items: map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{gvrConfigMaps: {item("cm1")}},
					keep:  map[schema.GroupVersionResource]map[string]bool{gvrConfigMaps: {"cm1": true}},
				},
				pods:         &fakePods{},
				ordered:      true,
				wantEstimate: 0,
				wantErrs:     []string{cmUnexpected},
				wantConditions: expectedConditions(nowMeta,
					failCondition(v1.NamespaceDeletionContentFailure, nowMeta, "ContentDeletionFailed", "Failed to delete all resource types, 1 remaining: "+cmUnexpected),
					failCondition(v1.NamespaceContentRemaining, nowMeta, "SomeResourcesRemain", "Some resources are remaining: configmaps. has 1 resource instances"),
				),
				wantRemaining:   map[schema.GroupVersionResource]int{gvrConfigMaps: 1},
				wantFinalizers:  map[string]int{},
				wantPodListings: 1,
			},
			{
				name: "deletecollection not in verbs: list and delete each",
				ops: &fakeOps{
					items: map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{gvrWidgets: {item("w1"), item("w2"), item("w3")}},
					// NotFound and MethodNotSupported on one item are ignored
					deleteErr: map[string]error{
						"w1": apierrors.NewNotFound(gvrWidgets.GroupResource(), "w1"),
						"w2": apierrors.NewMethodNotSupported(gvrWidgets.GroupResource(), "delete"),
					},
				},
				pods:            &fakePods{},
				ordered:         true,
				widgetVerbs:     metav1.Verbs{"get", "list", "delete"},
				useWidgetsVerbs: true,
				// w1 and w2 were "not deleted" by the fake, so they remain
				// without finalizers: that is the unexpected-items error
				wantErrs: []string{"unexpected items still remain in namespace: NS for gvr: example.com/v1, Resource=widgets"},
				wantConditions: expectedConditions(nowMeta,
					failCondition(v1.NamespaceDeletionContentFailure, nowMeta, "ContentDeletionFailed", "Failed to delete all resource types, 1 remaining: unexpected items still remain in namespace: NS for gvr: example.com/v1, Resource=widgets"),
					failCondition(v1.NamespaceContentRemaining, nowMeta, "SomeResourcesRemain", "Some resources are remaining: widgets.example.com has 2 resource instances"),
				),
				wantRemaining:   map[schema.GroupVersionResource]int{gvrWidgets: 2},
				wantFinalizers:  map[string]int{},
				wantPodListings: 1,
				wantCalls: map[schema.GroupVersionResource][]string{
					gvrWidgets: {"list widgets.example.com", "delete widgets.example.com w1", "delete widgets.example.com w2", "delete widgets.example.com w3", "list widgets.example.com"},
				},
			},
			{
				name: "deletecollection not in verbs: all items deleted",
				ops: &fakeOps{
					items: map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{gvrWidgets: {item("w1"), item("w2")}},
				},
				pods:            &fakePods{},
				ordered:         true,
				widgetVerbs:     metav1.Verbs{"get", "list", "delete"},
				useWidgetsVerbs: true,
				wantConditions:  expectedConditions(nowMeta),
				wantRemaining:   map[schema.GroupVersionResource]int{},
				wantFinalizers:  map[string]int{},
				wantPodListings: 1,
				wantCalls: map[schema.GroupVersionResource][]string{
					gvrWidgets: {"list widgets.example.com", "delete widgets.example.com w1", "delete widgets.example.com w2", "list widgets.example.com"},
				},
			},
			{
				name: "delete of one item fails with another error: stops that GVR",
				ops: &fakeOps{
					items:     map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{gvrWidgets: {item("w1"), item("w2")}},
					deleteErr: map[string]error{"w1": unavailable},
				},
				pods:            &fakePods{},
				ordered:         true,
				widgetVerbs:     metav1.Verbs{"get", "list", "delete"},
				useWidgetsVerbs: true,
				wantErrs:        []string{"the server is currently unable to handle the request"},
				wantConditions: expectedConditions(nowMeta,
					failCondition(v1.NamespaceDeletionContentFailure, nowMeta, "ContentDeletionFailed", "Failed to delete all resource types, 1 remaining: the server is currently unable to handle the request"),
				),
				wantRemaining:   map[schema.GroupVersionResource]int{},
				wantFinalizers:  map[string]int{},
				wantPodListings: 1,
				wantCalls: map[schema.GroupVersionResource][]string{
					gvrWidgets:    {"list widgets.example.com", "delete widgets.example.com w1"},
					gvrConfigMaps: {"deletecollection configmaps.", "list configmaps."},
				},
			},
			{
				name: "deletecollection returns MethodNotSupported: falls back to delete each",
				ops: &fakeOps{
					items:               map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{gvrWidgets: {item("w1"), item("w2")}},
					deleteCollectionErr: map[schema.GroupVersionResource]error{gvrWidgets: apierrors.NewMethodNotSupported(gvrWidgets.GroupResource(), "deletecollection")},
				},
				pods:            &fakePods{},
				ordered:         true,
				wantConditions:  expectedConditions(nowMeta),
				wantRemaining:   map[schema.GroupVersionResource]int{},
				wantFinalizers:  map[string]int{},
				wantPodListings: 1,
				wantCalls: map[schema.GroupVersionResource][]string{
					gvrWidgets: {"deletecollection widgets.example.com", "list widgets.example.com", "delete widgets.example.com w1", "delete widgets.example.com w2", "list widgets.example.com"},
				},
			},
			{
				// upstream TestDeleteEncounters404
				name: "deletecollection and list return NotFound: treated as unsupported",
				ops: &fakeOps{
					deleteCollectionErr: map[schema.GroupVersionResource]error{gvrWidgets: apierrors.NewNotFound(schema.GroupResource{}, "")},
					listErr:             map[schema.GroupVersionResource]error{gvrWidgets: apierrors.NewNotFound(schema.GroupResource{}, "")},
				},
				pods:            &fakePods{},
				ordered:         true,
				wantConditions:  expectedConditions(nowMeta),
				wantRemaining:   map[schema.GroupVersionResource]int{},
				wantFinalizers:  map[string]int{},
				wantPodListings: 1,
				wantCalls: map[schema.GroupVersionResource][]string{
					gvrWidgets: {"deletecollection widgets.example.com", "list widgets.example.com", "list widgets.example.com"},
				},
			},
			{
				name: "neither list nor deletecollection in verbs: nothing sent",
				ops: &fakeOps{
					items: map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{gvrWidgets: {item("w1")}},
				},
				pods:            &fakePods{},
				ordered:         true,
				widgetVerbs:     metav1.Verbs{"delete"},
				useWidgetsVerbs: true,
				wantConditions:  expectedConditions(nowMeta),
				wantRemaining:   map[schema.GroupVersionResource]int{},
				wantFinalizers:  map[string]int{},
				wantPodListings: 1,
				wantCalls:       map[schema.GroupVersionResource][]string{gvrWidgets: {}},
			},
			{
				name: "ordered deletion, pods within grace remain: other resources untouched",
				ops: &fakeOps{
					items: map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{
						gvrPods:    {item("p1"), item("p2", "example.com/pod-guard")},
						gvrWidgets: {item("w1", "example.com/cleanup")},
					},
					keep: map[schema.GroupVersionResource]map[string]bool{gvrPods: {"p1": true, "p2": true}, gvrWidgets: {"w1": true}},
				},
				pods: &fakePods{pods: []v1.Pod{
					pod("p1", 30, v1.PodRunning),
					pod("p2", 20, v1.PodRunning),
					pod("done", 600, v1.PodSucceeded), // terminal pods do not count
					pod("failed", 900, v1.PodFailed),
				}},
				ordered:        true,
				deletedSecsAgo: 10,
				wantEstimate:   30,
				// upstream blind spot: no ProcessContentTotals on this path, so
				// ContentRemaining and FinalizersRemaining keep their ok variants
				wantConditions:  expectedConditions(nowMeta),
				wantPodsBlocked: true,
				wantRemaining:   map[schema.GroupVersionResource]int{gvrPods: 2},
				wantFinalizers:  map[string]int{"example.com/pod-guard": 1},
				wantPodListings: 1,
				wantCalls: map[schema.GroupVersionResource][]string{
					gvrPods:       {"deletecollection pods.", "list pods."},
					gvrConfigMaps: {},
					gvrWidgets:    {},
				},
			},
			{
				name: "ordered deletion, pods gone within their grace: estimate 0, others processed",
				ops: &fakeOps{
					items: map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{gvrPods: {item("p1")}},
				},
				pods:            &fakePods{pods: []v1.Pod{pod("p1", 30, v1.PodRunning)}},
				ordered:         true,
				deletedSecsAgo:  10,
				wantEstimate:    0,
				wantConditions:  expectedConditions(nowMeta),
				wantRemaining:   map[schema.GroupVersionResource]int{},
				wantFinalizers:  map[string]int{},
				wantPodListings: 1,
				wantCalls: map[schema.GroupVersionResource][]string{
					gvrPods:       {"deletecollection pods.", "list pods."},
					gvrConfigMaps: {"deletecollection configmaps.", "list configmaps."},
					gvrWidgets:    {"deletecollection widgets.example.com", "list widgets.example.com"},
				},
			},
			{
				name: "ordered deletion, pods past their grace without finalizers",
				ops: &fakeOps{
					items: map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{gvrPods: {item("p1")}},
					keep:  map[schema.GroupVersionResource]map[string]bool{gvrPods: {"p1": true}},
				},
				pods:           &fakePods{pods: []v1.Pod{pod("p1", 30, v1.PodRunning)}},
				ordered:        true,
				deletedSecsAgo: 60,
				wantEstimate:   0,
				// errs wraps, the condition gets the raw error
				wantErrs: []string{"failed to delete pods for namespace: NS, err: " + podsUnexpected},
				wantConditions: expectedConditions(nowMeta,
					failCondition(v1.NamespaceDeletionContentFailure, nowMeta, "ContentDeletionFailed", "Failed to delete all resource types, 1 remaining: "+podsUnexpected),
				),
				wantPodsBlocked: true,
				wantRemaining:   map[schema.GroupVersionResource]int{gvrPods: 1},
				wantFinalizers:  map[string]int{},
				wantPodListings: 1,
				wantCalls: map[schema.GroupVersionResource][]string{
					gvrPods:       {"deletecollection pods.", "list pods."},
					gvrConfigMaps: {},
					gvrWidgets:    {},
				},
			},
			{
				name: "ordered deletion, exactly at the grace period: estimate drops to 0",
				ops: &fakeOps{
					items: map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{gvrPods: {item("p1", "f")}},
					keep:  map[schema.GroupVersionResource]map[string]bool{gvrPods: {"p1": true}},
				},
				pods:           &fakePods{pods: []v1.Pod{pod("p1", 30, v1.PodRunning)}},
				ordered:        true,
				deletedSecsAgo: 30,
				// no grace left, but the finalizer gives the default 15 s
				wantEstimate:    15,
				wantConditions:  expectedConditions(nowMeta),
				wantPodsBlocked: true,
				wantRemaining:   map[schema.GroupVersionResource]int{gvrPods: 1},
				wantFinalizers:  map[string]int{"f": 1},
				wantPodListings: 1,
				wantCalls: map[schema.GroupVersionResource][]string{
					gvrPods:    {"deletecollection pods.", "list pods."},
					gvrWidgets: {},
				},
			},
			{
				name: "unordered deletion: pods are processed with everything else and counted",
				ops: &fakeOps{
					items: map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{
						gvrPods:    {item("p1")},
						gvrWidgets: {item("w1", "example.com/cleanup")},
					},
					keep: map[schema.GroupVersionResource]map[string]bool{gvrPods: {"p1": true}, gvrWidgets: {"w1": true}},
				},
				pods:           &fakePods{pods: []v1.Pod{pod("p1", 45, v1.PodRunning)}},
				ordered:        false,
				deletedSecsAgo: 5,
				wantEstimate:   45,
				wantConditions: expectedConditions(nowMeta,
					failCondition(v1.NamespaceContentRemaining, nowMeta, "SomeResourcesRemain", "Some resources are remaining: pods. has 1 resource instances, widgets.example.com has 1 resource instances"),
					failCondition(v1.NamespaceFinalizersRemaining, nowMeta, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: example.com/cleanup in 1 resource instances"),
				),
				wantRemaining:   map[schema.GroupVersionResource]int{gvrPods: 1, gvrWidgets: 1},
				wantFinalizers:  map[string]int{"example.com/cleanup": 1},
				wantPodListings: 1,
				wantCalls: map[schema.GroupVersionResource][]string{
					gvrPods:       {"deletecollection pods.", "list pods."},
					gvrConfigMaps: {"deletecollection configmaps.", "list configmaps."},
					gvrWidgets:    {"deletecollection widgets.example.com", "list widgets.example.com"},
				},
			},
			{
				name:         "partial discovery failure: recorded, discovered resources still processed",
				discoveryErr: discoveryErr,
				ops: &fakeOps{
					items: map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{gvrWidgets: {item("w1", "example.com/cleanup")}},
					keep:  map[schema.GroupVersionResource]map[string]bool{gvrWidgets: {"w1": true}},
				},
				pods:         &fakePods{},
				ordered:      true,
				wantEstimate: 15,
				wantErrs:     []string{"unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1"},
				wantConditions: expectedConditions(nowMeta,
					failCondition(v1.NamespaceDeletionDiscoveryFailure, nowMeta, "DiscoveryFailed", "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1"),
					failCondition(v1.NamespaceContentRemaining, nowMeta, "SomeResourcesRemain", "Some resources are remaining: widgets.example.com has 1 resource instances"),
					failCondition(v1.NamespaceFinalizersRemaining, nowMeta, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: example.com/cleanup in 1 resource instances"),
				),
				wantRemaining:   map[schema.GroupVersionResource]int{gvrWidgets: 1},
				wantFinalizers:  map[string]int{"example.com/cleanup": 1},
				wantPodListings: 1,
				wantCalls: map[schema.GroupVersionResource][]string{
					gvrPods:       {"deletecollection pods.", "list pods."},
					gvrConfigMaps: {"deletecollection configmaps.", "list configmaps."},
					gvrWidgets:    {"deletecollection widgets.example.com", "list widgets.example.com"},
				},
			},
			{
				name:         "discovery failed entirely: nothing processed",
				resources:    []*metav1.APIResourceList{},
				discoveryErr: errors.New("connection refused"),
				ops:          &fakeOps{},
				pods:         &fakePods{},
				ordered:      true,
				wantErrs:     []string{"connection refused"},
				wantConditions: expectedConditions(nowMeta,
					failCondition(v1.NamespaceDeletionDiscoveryFailure, nowMeta, "DiscoveryFailed", "connection refused"),
				),
				wantRemaining:   map[schema.GroupVersionResource]int{},
				wantFinalizers:  map[string]int{},
				wantPodListings: 0,
				wantCalls:       map[schema.GroupVersionResource][]string{gvrPods: {}, gvrWidgets: {}},
			},
			{
				name: "unparsable group version: recorded, nothing processed",
				resources: append(testResourceLists(nil), &metav1.APIResourceList{
					GroupVersion: "a/b/c",
					APIResources: []metav1.APIResource{{Name: "things", Namespaced: true, Verbs: allVerbs}},
				}),
				ops:      &fakeOps{},
				pods:     &fakePods{},
				ordered:  true,
				wantErrs: []string{"unexpected GroupVersion string: a/b/c"},
				wantConditions: expectedConditions(nowMeta,
					failCondition(v1.NamespaceDeletionGVParsingFailure, nowMeta, "GroupVersionParsingFailed", "unexpected GroupVersion string: a/b/c"),
				),
				wantRemaining:   map[schema.GroupVersionResource]int{},
				wantFinalizers:  map[string]int{},
				wantPodListings: 0,
				wantCalls:       map[schema.GroupVersionResource][]string{gvrPods: {}, gvrConfigMaps: {}, gvrWidgets: {}},
			},
			{
				name: "forbidden list on one GVR does not stop the others",
				ops: &fakeOps{
					items: map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{
						gvrConfigMaps: {item("cm1")},
						gvrWidgets:    {item("w1", "example.com/cleanup")},
					},
					keep:    map[schema.GroupVersionResource]map[string]bool{gvrConfigMaps: {"cm1": true}, gvrWidgets: {"w1": true}},
					listErr: map[schema.GroupVersionResource]error{gvrConfigMaps: forbidden},
				},
				pods:         &fakePods{},
				ordered:      true,
				wantEstimate: 15,
				wantErrs:     []string{forbiddenMsg},
				wantConditions: expectedConditions(nowMeta,
					failCondition(v1.NamespaceDeletionContentFailure, nowMeta, "ContentDeletionFailed", "Failed to delete all resource types, 1 remaining: "+forbiddenMsg),
					failCondition(v1.NamespaceContentRemaining, nowMeta, "SomeResourcesRemain", "Some resources are remaining: widgets.example.com has 1 resource instances"),
					failCondition(v1.NamespaceFinalizersRemaining, nowMeta, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: example.com/cleanup in 1 resource instances"),
				),
				wantRemaining:   map[schema.GroupVersionResource]int{gvrWidgets: 1},
				wantFinalizers:  map[string]int{"example.com/cleanup": 1},
				wantPodListings: 1,
				wantCalls: map[schema.GroupVersionResource][]string{
					gvrPods:       {"deletecollection pods.", "list pods."},
					gvrConfigMaps: {"deletecollection configmaps.", "list configmaps."},
					gvrWidgets:    {"deletecollection widgets.example.com", "list widgets.example.com"},
				},
			},
			{
				name: "503 on deletecollection is an error (no fallback), errors sorted in the condition",
				ops: &fakeOps{
					items: map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{
						gvrConfigMaps: {item("cm1")},
						gvrWidgets:    {item("w1")},
					},
					keep:                map[schema.GroupVersionResource]map[string]bool{gvrConfigMaps: {"cm1": true}},
					deleteCollectionErr: map[schema.GroupVersionResource]error{gvrWidgets: unavailable},
				},
				pods:     &fakePods{},
				ordered:  true,
				wantErrs: []string{"the server is currently unable to handle the request", cmUnexpected},
				wantConditions: expectedConditions(nowMeta,
					failCondition(v1.NamespaceDeletionContentFailure, nowMeta, "ContentDeletionFailed", "Failed to delete all resource types, 2 remaining: the server is currently unable to handle the request, "+cmUnexpected),
					failCondition(v1.NamespaceContentRemaining, nowMeta, "SomeResourcesRemain", "Some resources are remaining: configmaps. has 1 resource instances"),
				),
				wantRemaining:   map[schema.GroupVersionResource]int{gvrConfigMaps: 1},
				wantFinalizers:  map[string]int{},
				wantPodListings: 1,
				wantCalls: map[schema.GroupVersionResource][]string{
					gvrConfigMaps: {"deletecollection configmaps.", "list configmaps."},
					gvrWidgets:    {"deletecollection widgets.example.com"},
				},
			},
			{
				name: "pod lister error stops pods only before any request",
				ops:  &fakeOps{},
				pods: &fakePods{err: errors.New("pods is forbidden")},
				// unordered so that the other resources are processed
				ordered:  false,
				wantErrs: []string{"pods is forbidden"},
				wantConditions: expectedConditions(nowMeta,
					failCondition(v1.NamespaceDeletionContentFailure, nowMeta, "ContentDeletionFailed", "Failed to delete all resource types, 1 remaining: pods is forbidden"),
				),
				wantRemaining:   map[schema.GroupVersionResource]int{},
				wantFinalizers:  map[string]int{},
				wantPodListings: 1,
				wantCalls: map[schema.GroupVersionResource][]string{
					gvrPods:       {},
					gvrConfigMaps: {"deletecollection configmaps.", "list configmaps."},
				},
			},
			{
				name:         "nil pod lister",
				ops:          &fakeOps{},
				nilPodLister: true,
				ordered:      true,
				wantErrs:     []string{"failed to delete pods for namespace: NS, err: unexpected: podsGetter is nil. Cannot estimate grace period seconds for pods"},
				wantConditions: expectedConditions(nowMeta,
					failCondition(v1.NamespaceDeletionContentFailure, nowMeta, "ContentDeletionFailed", "Failed to delete all resource types, 1 remaining: unexpected: podsGetter is nil. Cannot estimate grace period seconds for pods"),
				),
				wantRemaining:  map[schema.GroupVersionResource]int{},
				wantFinalizers: map[string]int{},
				wantCalls: map[schema.GroupVersionResource][]string{
					gvrPods:       {},
					gvrConfigMaps: {"deletecollection configmaps.", "list configmaps."},
				},
			},
		}

		for _, tc := range tests {
			t.Run(fmt.Sprintf("%s/workers=%d", tc.name, workers), func(t *testing.T) {
				if tc.ops.items == nil {
					tc.ops.items = map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{}
				}
				resources := tc.resources
				if resources == nil {
					var wv metav1.Verbs
					if tc.useWidgetsVerbs {
						wv = tc.widgetVerbs
					}
					resources = testResourceLists(wv)
				}
				deletedAt := metav1.NewTime(now.Add(-time.Duration(tc.deletedSecsAgo) * time.Second))
				ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS, DeletionTimestamp: &deletedAt}}
				d := &NamespacedResourcesDeleter{
					Ops:                 tc.ops,
					DiscoverResourcesFn: discovered(resources, tc.discoveryErr),
					OrderedDeletion:     tc.ordered,
					Workers:             workers,
					Now:                 func() time.Time { return now },
				}
				if !tc.nilPodLister {
					d.Pods = tc.pods
				}

				got := d.deleteAllContent(context.Background(), ns)

				if got.Estimate != tc.wantEstimate {
					t.Errorf("Estimate = %d, want %d", got.Estimate, tc.wantEstimate)
				}
				if gotErrs := errMessages(got.Err); !reflect.DeepEqual(gotErrs, tc.wantErrs) {
					t.Errorf("Err = %q, want %q", gotErrs, tc.wantErrs)
				}
				if tc.wantErrs == nil && got.Err != nil {
					t.Errorf("Err = %#v, want nil", got.Err)
				}
				if got.PodsBlocked != tc.wantPodsBlocked {
					t.Errorf("PodsBlocked = %v, want %v", got.PodsBlocked, tc.wantPodsBlocked)
				}
				diffConditions(t, got.Conditions, tc.wantConditions)
				if !reflect.DeepEqual(got.Totals.GVRToNumRemaining, tc.wantRemaining) {
					t.Errorf("Totals.GVRToNumRemaining = %v, want %v", got.Totals.GVRToNumRemaining, tc.wantRemaining)
				}
				if !reflect.DeepEqual(got.Totals.FinalizersToNumRemaining, tc.wantFinalizers) {
					t.Errorf("Totals.FinalizersToNumRemaining = %v, want %v", got.Totals.FinalizersToNumRemaining, tc.wantFinalizers)
				}
				for gvr, want := range tc.wantCalls {
					if gotCalls := tc.ops.callsFor(gvr); !reflect.DeepEqual(gotCalls, want) {
						t.Errorf("calls for %s = %q, want %q", gvr.Resource, gotCalls, want)
					}
				}
				// a resource without the delete verb is never touched
				if c := tc.ops.callsFor(gvrReadOnly); len(c) != 0 {
					t.Errorf("calls for a resource without delete: %q", c)
				}
				for _, c := range tc.ops.calls {
					if c.ns != testNS {
						t.Errorf("call %s in namespace %q, want %q", c, c.ns, testNS)
					}
				}
				// with ordered deletion, pods go first
				if tc.ordered && len(tc.ops.callsFor(gvrPods)) > 0 && tc.ops.calls[0].gvr != gvrPods {
					t.Errorf("first call %s, want pods first", tc.ops.calls[0])
				}
				if tc.wantPodsBlocked {
					for _, c := range tc.ops.calls {
						if c.gvr != gvrPods {
							t.Errorf("pods remain but %s was sent", c)
						}
					}
				}
				if tc.pods != nil && tc.pods.calls != tc.wantPodListings {
					t.Errorf("ListPods called %d times, want %d", tc.pods.calls, tc.wantPodListings)
				}
			})
		}
	}
}

// TestDeleteAllContentOpCacheAcrossPasses checks that the op cache built
// from discovery is kept between passes and that a 404 on deletecollection
// is not cached (upstream TestDeleteEncounters404, second namespace).
func TestDeleteAllContentOpCacheAcrossPasses(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 9, 5, 0, time.UTC)
	deletedAt := metav1.NewTime(now)
	ops := &fakeOps{
		items:               map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{},
		deleteCollectionErr: map[schema.GroupVersionResource]error{gvrWidgets: apierrors.NewNotFound(schema.GroupResource{}, "")},
	}
	d := &NamespacedResourcesDeleter{
		Ops: ops, Pods: &fakePods{}, OrderedDeletion: true, Now: func() time.Time { return now },
		DiscoverResourcesFn: discovered([]*metav1.APIResourceList{{
			GroupVersion: "example.com/v1",
			APIResources: []metav1.APIResource{{Name: "widgets", Namespaced: true, Kind: "Widget", Verbs: allVerbs}},
		}}, nil),
	}
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS, DeletionTimestamp: &deletedAt}}

	if r := d.deleteAllContent(context.Background(), ns); r.Err != nil || r.Estimate != 0 {
		t.Fatalf("first pass: estimate %d, err %v", r.Estimate, r.Err)
	}
	want := []string{"deletecollection widgets.example.com", "list widgets.example.com", "list widgets.example.com"}
	if got := ops.callsFor(gvrWidgets); !reflect.DeepEqual(got, want) {
		t.Fatalf("first pass calls = %q, want %q", got, want)
	}

	ops.calls = nil
	ops.deleteCollectionErr = nil
	if r := d.deleteAllContent(context.Background(), ns); r.Err != nil || r.Estimate != 0 {
		t.Fatalf("second pass: estimate %d, err %v", r.Estimate, r.Err)
	}
	want = []string{"deletecollection widgets.example.com", "list widgets.example.com"}
	if got := ops.callsFor(gvrWidgets); !reflect.DeepEqual(got, want) {
		t.Errorf("second pass calls = %q, want %q", got, want)
	}
}

func TestEstimatePodGracePeriod(t *testing.T) {
	noGrace := v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nograce"}, Status: v1.PodStatus{Phase: v1.PodRunning}}
	tests := []struct {
		name string
		pods []v1.Pod
		want int64
	}{
		{name: "none", want: 0},
		{name: "max of running", pods: []v1.Pod{pod("a", 30, v1.PodRunning), pod("b", 45, v1.PodPending), pod("c", 10, v1.PodRunning)}, want: 45},
		{name: "terminal pods ignored", pods: []v1.Pod{pod("a", 30, v1.PodRunning), pod("b", 300, v1.PodSucceeded), pod("c", 400, v1.PodFailed)}, want: 30},
		{name: "unknown phase counts", pods: []v1.Pod{pod("a", 12, v1.PodUnknown)}, want: 12},
		{name: "nil grace ignored", pods: []v1.Pod{noGrace, pod("a", 5, v1.PodRunning)}, want: 5},
		{name: "zero grace", pods: []v1.Pod{pod("a", 0, v1.PodRunning)}, want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := EstimatePodGracePeriod(tc.pods); got != tc.want {
				t.Errorf("EstimatePodGracePeriod = %d, want %d", got, tc.want)
			}
		})
	}
}

// discovered is a DiscoverResourcesFn answering resources and err.
func discovered(resources []*metav1.APIResourceList, err error) func() ([]*metav1.APIResourceList, error) {
	return func() ([]*metav1.APIResourceList, error) { return resources, err }
}
