package kube

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
)

var (
	pods    = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	secrets = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// meta is an object of the fake API with the given metadata fields.
func meta(name, created string, extra ...string) string {
	fields := append([]string{fmt.Sprintf(`"name":%q,"namespace":"ns","uid":"uid-%s","resourceVersion":"7","creationTimestamp":%q`, name, name, created)}, extra...)
	return `{"metadata":{` + strings.Join(fields, ",") + `}}`
}

const (
	recent = "2026-03-01T00:00:00Z"
	before = "2025-06-01T00:00:00Z"
)

// In list order: plain objects among held ones (finalizer, being deleted,
// owned, older than the namespace).
var mixedConfigMaps = []string{
	meta("plain-1", recent),
	meta("finalized", recent, `"finalizers":["example.com/hold"]`),
	meta("plain-2", recent),
	meta("plain-3", recent),
	meta("owned", recent, `"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"p","uid":"u"}]`),
	meta("plain-4", recent),
	meta("deleting", recent, `"deletionTimestamp":"2026-03-02T00:00:00Z"`, `"finalizers":["f"]`),
	meta("old", before),
}

func names(list *metav1.PartialObjectMetadataList) []string {
	if list == nil {
		return nil
	}
	var out []string
	for _, item := range list.Items {
		out = append(out, item.Name)
	}
	return out
}

// sweepAPI serves configmaps (mixed), pods (plain) and refuses secrets, in
// pages of three whatever the limit.
func sweepAPI(t *testing.T) *fakeAPI {
	api := newFakeAPI(t)
	api.pageSize = 3
	api.add("/api/v1/namespaces/ns/configmaps", "ConfigMap", mixedConfigMaps...)
	api.add("/api/v1/namespaces/ns/pods", "Pod", meta("pod-1", recent), meta("pod-2", recent), meta("pod-3", recent))
	api.add("/api/v1/namespaces/ns/secrets", "Secret")
	api.fail["/api/v1/namespaces/ns/secrets?continue="] = http.StatusForbidden
	return api
}

// A compact sweep keeps every object that holds something and the first
// KeepPlain plain ones, counting the rest, across pages; a Whole type is
// kept whole; a refused type is an error of its own.
func TestSweepCompacts(t *testing.T) {
	api := sweepAPI(t)
	c := api.clients()
	olderThan, _ := time.Parse(time.RFC3339, "2026-01-01T00:00:00Z")
	snap := Sweep(context.Background(), c, "ns", []schema.GroupVersionResource{configMaps, pods, secrets}, SweepOptions{
		Compact: true, KeepPlain: 2, Whole: map[schema.GroupVersionResource]bool{pods: true}, KeepOlderThan: olderThan,
	})
	if got, want := names(snap.Items[configMaps]), []string{"plain-1", "finalized", "plain-2", "owned", "deleting", "old"}; !slices.Equal(got, want) {
		t.Errorf("configmaps kept %q, want %q", got, want)
	}
	if got, want := names(snap.Items[pods]), []string{"pod-1", "pod-2", "pod-3"}; !slices.Equal(got, want) {
		t.Errorf("pods (whole) kept %q, want %q", got, want)
	}
	if want := map[schema.GroupVersionResource]int{configMaps: 2}; !maps.Equal(snap.Omitted, want) {
		t.Errorf("omitted %v, want %v", snap.Omitted, want)
	}
	if len(snap.Errs) != 1 || !apierrors.IsForbidden(snap.Errs[secrets]) {
		t.Errorf("errors %v, want secrets Forbidden only", snap.Errs)
	}
	if _, ok := snap.Items[secrets]; ok {
		t.Error("a failed type has a list too")
	}
}

func TestSweepWithoutCompactionKeepsAll(t *testing.T) {
	api := sweepAPI(t)
	snap := Sweep(context.Background(), api.clients(), "ns", []schema.GroupVersionResource{configMaps, pods}, SweepOptions{KeepPlain: 1})
	if got := names(snap.Items[configMaps]); len(got) != len(mixedConfigMaps) {
		t.Errorf("configmaps kept %q, want all %d", got, len(mixedConfigMaps))
	}
	if len(snap.Omitted) != 0 || len(snap.Errs) != 0 {
		t.Errorf("omitted %v, errors %v; want none", snap.Omitted, snap.Errs)
	}
}

// Keep chooses instead of compaction, Whole types included.
func TestSweepKeepChooses(t *testing.T) {
	api := sweepAPI(t)
	keep := func(m *metav1.PartialObjectMetadata) bool { return strings.HasSuffix(m.Name, "-2") }
	snap := Sweep(context.Background(), api.clients(), "ns", []schema.GroupVersionResource{configMaps, pods}, SweepOptions{
		Keep: keep, Compact: true, KeepPlain: 100, Whole: map[schema.GroupVersionResource]bool{pods: true},
	})
	if got := names(snap.Items[configMaps]); !slices.Equal(got, []string{"plain-2"}) {
		t.Errorf("configmaps kept %q, want [plain-2]", got)
	}
	if got := names(snap.Items[pods]); !slices.Equal(got, []string{"pod-2"}) {
		t.Errorf("pods kept %q, want [pod-2]", got)
	}
	if want := map[schema.GroupVersionResource]int{configMaps: 7, pods: 2}; !maps.Equal(snap.Omitted, want) {
		t.Errorf("omitted %v, want %v", snap.Omitted, want)
	}
}

// Sweep in every namespace asks the cluster-wide path.
func TestSweepAllNamespaces(t *testing.T) {
	api := newFakeAPI(t)
	api.add("/api/v1/configmaps", "ConfigMap", meta("a", recent), meta("b", recent))
	snap := Sweep(context.Background(), api.clients(), "", []schema.GroupVersionResource{configMaps}, SweepOptions{})
	if got := names(snap.Items[configMaps]); !slices.Equal(got, []string{"a", "b"}) || len(snap.Errs) != 0 {
		t.Errorf("kept %q, errors %v; want [a b] and none", got, snap.Errs)
	}
}

// A cancelled sweep still answers for every type, each with its error.
func TestSweepCancelledRecordsEveryType(t *testing.T) {
	api := sweepAPI(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	gvrs := []schema.GroupVersionResource{configMaps, pods, secrets}
	snap := Sweep(ctx, api.clients(), "ns", gvrs, SweepOptions{})
	for _, gvr := range gvrs {
		if !errors.Is(snap.Errs[gvr], context.Canceled) {
			t.Errorf("%v: error %v, want the cancellation", gvr.Resource, snap.Errs[gvr])
		}
	}
	if len(snap.Items) != 0 {
		t.Errorf("lists %v after a cancellation", snap.Items)
	}
}

// ListMetadata asks for metadata only (never the objects' content),
// follows every page, and keeps only the fields ns-doctor reads.
func TestListMetadataPagesAndTrims(t *testing.T) {
	api := newFakeAPI(t)
	api.pageSize = 2
	var items []string
	for i := range 5 {
		items = append(items, meta(fmt.Sprintf("cm-%d", i), recent,
			`"labels":{"app":"x"}`, `"annotations":{"big":"`+strings.Repeat("a", 100)+`"}`,
			`"managedFields":[{"manager":"kubectl","operation":"Apply"}]`, `"finalizers":["f"]`,
			`"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"p","uid":"u"}]`, `"generateName":"cm-"`))
	}
	api.add("/api/v1/namespaces/ns/configmaps", "ConfigMap", items...)
	c := api.clients()
	for name, list := range map[string]func() (*metav1.PartialObjectMetadataList, error){
		"ListMetadata": func() (*metav1.PartialObjectMetadataList, error) {
			return ListMetadata(context.Background(), c.Metadata, configMaps, "ns")
		},
		"MetadataOps.List": func() (*metav1.PartialObjectMetadataList, error) {
			return NewMetadataOps(c, false).List(context.Background(), configMaps, "ns")
		},
	} {
		t.Run(name, func(t *testing.T) {
			start := len(api.sent(http.MethodGet))
			list, err := list()
			if err != nil {
				t.Fatal(err)
			}
			if got, want := names(list), []string{"cm-0", "cm-1", "cm-2", "cm-3", "cm-4"}; !slices.Equal(got, want) {
				t.Fatalf("listed %q, want %q", got, want)
			}
			m := list.Items[3].ObjectMeta
			if m.Annotations != nil || m.ManagedFields != nil || m.GenerateName != "" {
				t.Errorf("kept fields ns-doctor does not read: %+v", m)
			}
			if m.Labels["app"] != "x" || len(m.Finalizers) != 1 || len(m.OwnerReferences) != 1 || m.UID != "uid-cm-3" ||
				m.ResourceVersion != "7" || m.Namespace != "ns" || m.CreationTimestamp.IsZero() {
				t.Errorf("dropped fields ns-doctor reads: %+v", m)
			}
			gets := api.sent(http.MethodGet)[start:]
			var tokens []string
			for _, r := range gets {
				if !strings.Contains(r.Accept, "as=PartialObjectMetadataList;g=meta.k8s.io;v=v1") {
					t.Errorf("Accept %q does not ask for metadata only", r.Accept)
				}
				if r.Query.Get("limit") != "500" {
					t.Errorf("limit=%q, want 500", r.Query.Get("limit"))
				}
				tokens = append(tokens, r.Query.Get("continue"))
			}
			if want := []string{"", "tok-2", "tok-4"}; !slices.Equal(tokens, want) {
				t.Errorf("continue tokens %q, want %q", tokens, want)
			}
		})
	}
}

func TestListMetadataReturnsAnErrorMidList(t *testing.T) {
	api := newFakeAPI(t)
	api.pageSize = 1
	api.add("/api/v1/namespaces/ns/configmaps", "ConfigMap", meta("a", recent), meta("b", recent))
	api.fail["/api/v1/namespaces/ns/configmaps?continue=tok-1"] = http.StatusServiceUnavailable
	list, err := ListMetadata(context.Background(), api.clients().Metadata, configMaps, "ns")
	if !apierrors.IsServiceUnavailable(err) || list != nil {
		t.Errorf("list %v, err %v; want no list and the server's error", list, err)
	}
}

// Until a response shows API Priority and Fairness, sweeps use the
// rate-limited clients; from then on, clients without a client-side rate
// limit, built once, that reach the same server.
func TestSweepClientsSwitchOnAPFHeader(t *testing.T) {
	api := newFakeAPI(t)
	api.add("/api/v1/namespaces/ns/configmaps", "ConfigMap", meta("a", recent))
	c := api.clients()
	if _, err := ServerVersion(context.Background(), c.Discovery); err != nil {
		t.Fatal(err)
	}
	if c.SweepMetadata() != c.Metadata || c.SweepDynamic() != c.Dynamic {
		t.Fatal("unthrottled clients before any response carried the priority and fairness header")
	}
	throttled, err := c.sweepREST()
	if err != nil {
		t.Fatal(err)
	}
	if throttled.GetRateLimiter() == nil {
		t.Error("the raw client has no rate limit before the header")
	}
	if again, _ := c.sweepREST(); again != throttled {
		t.Error("the rate-limited raw client was built twice")
	}

	api.apf.Store(true)
	if _, err := ServerVersion(context.Background(), c.Discovery); err != nil {
		t.Fatal(err)
	}
	md, dyn := c.SweepMetadata(), c.SweepDynamic()
	if md == c.Metadata || md == nil || dyn == c.Dynamic || dyn == nil {
		t.Fatal("still the rate-limited clients after a response carried the header")
	}
	if c.SweepMetadata() != md || c.SweepDynamic() != dyn {
		t.Error("the unthrottled clients are built anew on each call")
	}
	raw, err := c.sweepREST()
	if err != nil {
		t.Fatal(err)
	}
	if raw == throttled || raw.GetRateLimiter() != nil {
		t.Errorf("raw client %p (rate limiter %v), want a new one without a rate limiter", raw, raw.GetRateLimiter())
	}
	if NewMetadataOps(c, false).Client != md {
		t.Error("a deletion pass does not use the unthrottled metadata client")
	}
	// They reach the server.
	snap := Sweep(context.Background(), c, "ns", []schema.GroupVersionResource{configMaps}, SweepOptions{})
	if got := names(snap.Items[configMaps]); !slices.Equal(got, []string{"a"}) {
		t.Errorf("swept %q (errors %v) with the unthrottled client, want [a]", got, snap.Errs)
	}
	var seen []seenObject
	if err := c.Collections.EachObjectJSON(context.Background(), configMaps, "ns", 10, collect(&seen)); err != nil || len(seen) != 1 {
		t.Errorf("full read with the unthrottled client: %v, %d objects", err, len(seen))
	}
}

// Clients built without ClientsForConfig (tests' fakes) sweep with the
// clients they were given.
func TestSweepClientsWithoutAPFTracking(t *testing.T) {
	scheme := runtime.NewScheme()
	c := &Clients{Metadata: metadatafake.NewSimpleMetadataClient(scheme), Dynamic: dynamicfake.NewSimpleDynamicClient(scheme)}
	if c.SweepMetadata() != c.Metadata || c.SweepDynamic() != c.Dynamic {
		t.Error("sweep clients differ from the given ones")
	}
}

func TestPodListerListsTheNamespacesPods(t *testing.T) {
	grace := int64(90)
	client := fake.NewClientset(
		&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}, Spec: v1.PodSpec{TerminationGracePeriodSeconds: &grace}},
		&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}},
		&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "other"}},
	)
	got, err := PodLister{Client: client}.ListPods(context.Background(), "ns")
	if err != nil {
		t.Fatal(err)
	}
	var gotNames []string
	for _, p := range got {
		gotNames = append(gotNames, p.Name)
	}
	slices.Sort(gotNames)
	if !slices.Equal(gotNames, []string{"a", "b"}) {
		t.Errorf("pods %q, want [a b]", gotNames)
	}
	for _, p := range got {
		if p.Name == "a" && (p.Spec.TerminationGracePeriodSeconds == nil || *p.Spec.TerminationGracePeriodSeconds != 90) {
			t.Errorf("pod a's spec lost: %+v", p.Spec)
		}
	}

	client.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(pods.GroupResource(), "", errors.New("no"))
	})
	if list, err := (PodLister{Client: client}).ListPods(context.Background(), "ns"); !apierrors.IsForbidden(err) || list != nil {
		t.Errorf("pods %v, err %v; want the list's error", list, err)
	}
}

// FinalizerFieldsPer keeps who set a finalizer for the first objects of a
// type whose kept entries own it; an object whose entries own none of its
// finalizers (its setter lost) does not count against them.
func TestSweepKeepsFinalizerFieldsForTheFirstHolders(t *testing.T) {
	api := newFakeAPI(t)
	api.pageSize = 2
	api.add("/api/v1/namespaces/ns/configmaps", "ConfigMap",
		meta("a-1", recent, `"finalizers":["a"]`),
		meta("ab", recent, `"finalizers":["a","b"]`),
		meta("lost-1", recent, `"finalizers":["lost/x"]`),
		meta("lost-2", recent, `"finalizers":["lost/x"]`),
		meta("a-2", recent, `"finalizers":["a"]`),
		meta("plain", recent))
	// The stub's entry names the finalizers it was asked about; it owns
	// them all but lost/ ones.
	fields := func(_ []metav1.ManagedFieldsEntry, finalizers []string) ([]metav1.ManagedFieldsEntry, []string) {
		var owned []string
		for _, f := range finalizers {
			if !strings.HasPrefix(f, "lost/") {
				owned = append(owned, f)
			}
		}
		return []metav1.ManagedFieldsEntry{{Manager: strings.Join(finalizers, "+")}}, owned
	}
	for per, want := range map[int]string{
		1: "a-1:a ab:b lost-1:lost/x lost-2:lost/x a-2: plain:",
		0: "a-1:a ab:a+b lost-1:lost/x lost-2:lost/x a-2:a plain:",
	} {
		snap := Sweep(context.Background(), api.clients(), "ns", []schema.GroupVersionResource{configMaps}, SweepOptions{FinalizerFields: fields, FinalizerFieldsPer: per})
		var got []string
		for _, item := range snap.Items[configMaps].Items {
			var managers []string
			for _, e := range item.ManagedFields {
				managers = append(managers, e.Manager)
			}
			got = append(got, item.Name+":"+strings.Join(managers, ","))
		}
		if strings.Join(got, " ") != want {
			t.Errorf("FinalizerFieldsPer %d: kept %q, want %q", per, strings.Join(got, " "), want)
		}
	}
}
