package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/kube/kubetest"
)

// words says what the engine hands over, so the tests read it back.
type words struct{}

func (words) Warnings(v Verdict) []string {
	var out []string
	for _, f := range v.Findings {
		out = append(out, fmt.Sprintf("%s %s sure=%v", f.Blocker.Kind, f.Blocker.Subject, f.Sure))
	}
	if v.Failure != "" {
		out = append(out, "failed open: "+string(v.Failure))
	}
	if v.Exempt != "" {
		out = append(out, "exempt: "+string(v.Exempt)+" "+v.ExemptGroup)
	}
	return out
}

func (words) Denial(v Verdict) string { return "denied " + v.Name }

// ownerless is in the catalogue, with a workload the fake cluster has not.
const ownerless = "externalsecrets.external-secrets.io/externalsecret-cleanup"

func cluster() *kubetest.Cluster {
	c := kubetest.New()
	c.AddNamespace("held", 0)
	c.Add(kubetest.ConfigMaps, kubetest.Object("ConfigMap", "held", "secret-sync", ownerless))
	c.AddNamespace("unknown", 0)
	c.Add(kubetest.ConfigMaps, kubetest.Object("ConfigMap", "unknown", "x", "example.com/someone"))
	c.AddNamespace("clean", 0)
	c.Add(kubetest.ConfigMaps, kubetest.Object("ConfigMap", "clean", "plain"))
	c.AddNamespace("going", time.Minute)
	return c
}

func testGuard(c *kubetest.Cluster, mode Mode) *Guard {
	return &Guard{Clients: c.Clients(), Words: words{}, Metrics: NewMetrics(prometheus.NewRegistry(), mode),
		Opts: Options{Mode: mode, Timeout: 5 * time.Second, ExemptGroups: []string{"platform-admins"}}}
}

// deleteRequest is kube-apiserver's request for a DELETE of obj.
func deleteRequest(t *testing.T, resource schema.GroupVersionResource, obj runtime.Object, groups ...string) *admissionv1.AdmissionRequest {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	name := obj.(metav1.Object).GetName()
	return &admissionv1.AdmissionRequest{UID: types.UID("uid-" + name), Operation: admissionv1.Delete, Name: name,
		Resource: metav1.GroupVersionResource{Group: resource.Group, Version: resource.Version, Resource: resource.Resource},
		UserInfo: authnv1.UserInfo{Username: "alice", Groups: groups}, OldObject: runtime.RawExtension{Raw: raw}}
}

var namespaces = v1.SchemeGroupVersion.WithResource("namespaces")

func TestModesAndExemptions(t *testing.T) {
	c := cluster()
	ctx := context.Background()
	annotated := c.Namespace("held")
	annotated.Annotations = map[string]string{AllowAnnotation: "true"}
	for _, tc := range []struct {
		name   string
		mode   Mode
		req    *admissionv1.AdmissionRequest
		want   Outcome
		exempt Exemption
		warn   string
	}{
		{"warn: a sure blocker", ModeWarn, deleteRequest(t, namespaces, c.Namespace("held")), OutcomeWarned, "", "FinalizersRemaining " + ownerless + " sure=true"},
		{"warn: an owner not known", ModeWarn, deleteRequest(t, namespaces, c.Namespace("unknown")), OutcomeWarned, "", "FinalizersRemaining example.com/someone sure=false"},
		{"warn: clean", ModeWarn, deleteRequest(t, namespaces, c.Namespace("clean")), OutcomeAllowed, "", ""},
		{"deny: a sure blocker", ModeDeny, deleteRequest(t, namespaces, c.Namespace("held")), OutcomeDenied, "", "sure=true"},
		{"deny: not sure, warned", ModeDeny, deleteRequest(t, namespaces, c.Namespace("unknown")), OutcomeWarned, "", "sure=false"},
		{"deny: the annotation", ModeDeny, deleteRequest(t, namespaces, annotated), OutcomeWarned, ExemptAnnotation, "exempt: Annotation"},
		{"deny: an exempt group", ModeDeny, deleteRequest(t, namespaces, c.Namespace("held"), "system:authenticated", "platform-admins"), OutcomeWarned, ExemptGroup, "exempt: Group platform-admins"},
		{"deny: another group", ModeDeny, deleteRequest(t, namespaces, c.Namespace("held"), "developers"), OutcomeDenied, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := testGuard(c, tc.mode)
			resp := g.Review(ctx, tc.req)
			v := g.Decide(ctx, tc.req)
			if v.Outcome != tc.want || v.Exempt != tc.exempt {
				t.Fatalf("outcome %s exempt %q, want %s %q (findings %+v, err %v)", v.Outcome, v.Exempt, tc.want, tc.exempt, v.Findings, v.Err)
			}
			if resp.UID != tc.req.UID || resp.Allowed != (tc.want != OutcomeDenied) {
				t.Errorf("response uid %s allowed %v", resp.UID, resp.Allowed)
			}
			if tc.want == OutcomeDenied && (resp.Result == nil || resp.Result.Code != http.StatusForbidden || resp.Result.Message != "denied "+tc.req.Name) {
				t.Errorf("refusal %+v", resp.Result)
			}
			if tc.want == OutcomeAllowed && len(resp.Warnings) > 0 {
				t.Errorf("a clean deletion warned: %v", resp.Warnings)
			}
			if tc.warn != "" && !strings.Contains(strings.Join(resp.Warnings, "\n"), tc.warn) {
				t.Errorf("warnings %q lack %q", resp.Warnings, tc.warn)
			}
			got := testutil.ToFloat64(g.Metrics.admissions.WithLabelValues(string(tc.mode), "namespaces", string(tc.want)))
			if got != 1 {
				t.Errorf("nsdoctor_guard_admissions_total{outcome=%q} = %v, want 1", tc.want, got)
			}
		})
	}
}

// What is not a first DELETE of a namespace or CRD is allowed untouched,
// and not counted: a namespace already being deleted (the controller's
// requests, or anyone's again), another resource, a subresource.
func TestOnlyFirstDeletesAreJudged(t *testing.T) {
	c := cluster()
	g := testGuard(c, ModeDeny)
	going := deleteRequest(t, namespaces, c.Namespace("going"))
	update := deleteRequest(t, namespaces, c.Namespace("held"))
	update.Operation = admissionv1.Update
	finalize := deleteRequest(t, namespaces, c.Namespace("held"))
	finalize.SubResource = "finalize"
	pods := deleteRequest(t, kubetest.Pods, c.Namespace("held"))
	for _, req := range []*admissionv1.AdmissionRequest{going, update, finalize, pods} {
		resp := g.Review(context.Background(), req)
		if !resp.Allowed || len(resp.Warnings) > 0 {
			t.Errorf("%s %s/%s: allowed %v warnings %v", req.Operation, req.Resource.Resource, req.SubResource, resp.Allowed, resp.Warnings)
		}
	}
	if n := testutil.CollectAndCount(g.Metrics.admissions); n != 8 {
		t.Errorf("%d series, want the 8 made at 0", n)
	}
	for _, o := range Outcomes() {
		if got := testutil.ToFloat64(g.Metrics.admissions.WithLabelValues("deny", "namespaces", string(o))); got != 0 {
			t.Errorf("counted %v %s", got, o)
		}
	}
}

// A prediction past the budget, or one that errs, allows the deletion and
// says so.
func TestFailsOpen(t *testing.T) {
	c := cluster()
	release := make(chan struct{})
	var once sync.Once
	c.Fail = func(verb string, gvr schema.GroupVersionResource, namespace, _ string) error {
		if verb == "list" && namespace == "held" {
			<-release // a list that does not answer in time
		}
		return nil
	}
	defer once.Do(func() { close(release) })
	g := testGuard(c, ModeDeny)
	g.Opts.Timeout = 200 * time.Millisecond
	req := deleteRequest(t, namespaces, c.Namespace("held"))
	bad := deleteRequest(t, namespaces, c.Namespace("held"))
	started := time.Now()
	v := g.Decide(context.Background(), req)
	if took := time.Since(started); v.Outcome != OutcomeFailedOpen || v.Failure != FailureTimeout || took > 2*time.Second {
		t.Errorf("a stuck prediction: %s %s after %s, want failed_open Timeout within the budget", v.Outcome, v.Failure, took)
	}
	once.Do(func() { close(release) })

	bad.OldObject.Raw = []byte(`{"metadata": 7}`)
	v = g.Decide(context.Background(), bad)
	resp := g.Review(context.Background(), bad)
	if v.Outcome != OutcomeFailedOpen || v.Failure != FailureError || !resp.Allowed || len(resp.Warnings) == 0 {
		t.Errorf("an object it cannot read: %s %s, allowed %v, warnings %v", v.Outcome, v.Failure, resp.Allowed, resp.Warnings)
	}
	if got := testutil.ToFloat64(g.Metrics.admissions.WithLabelValues("deny", "namespaces", "failed_open")); got != 1 {
		t.Errorf("failed_open counted %v, want 1", got)
	}
}

// A burst beyond the predictions allowed at once waits its turn within
// the budget, and fails open past it.
func TestBusyFailsOpen(t *testing.T) {
	c := cluster()
	release := make(chan struct{})
	c.Fail = func(verb string, _ schema.GroupVersionResource, namespace, _ string) error {
		if verb == "list" && namespace == "held" {
			<-release
		}
		return nil
	}
	g := testGuard(c, ModeWarn)
	g.Opts.Concurrency, g.Opts.Timeout = 1, 300*time.Millisecond
	// The requests first: a blocked list holds the fake cluster's lock.
	held, clean := deleteRequest(t, namespaces, c.Namespace("held")), deleteRequest(t, namespaces, c.Namespace("clean"))
	var wg sync.WaitGroup
	wg.Go(func() { g.Decide(context.Background(), held) })
	time.Sleep(50 * time.Millisecond)
	v := g.Decide(context.Background(), clean)
	close(release)
	wg.Wait()
	if v.Outcome != OutcomeFailedOpen || !errors.Is(v.Err, errTimeout) || !strings.Contains(v.Err.Error(), "already running") {
		t.Errorf("no turn within the budget: %s %v", v.Outcome, v.Err)
	}
}

func TestServeHTTP(t *testing.T) {
	c := cluster()
	g := testGuard(c, ModeDeny)
	srv := httptest.NewServer(g)
	defer srv.Close()
	review := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: deleteRequest(t, namespaces, c.Namespace("held"))}
	body, _ := json.Marshal(review)
	resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.Kind != "AdmissionReview" || out.APIVersion != "admission.k8s.io/v1" || out.Response == nil || out.Response.UID != review.Request.UID || out.Response.Allowed {
		t.Errorf("answer %+v", out)
	}
	for _, bad := range []struct {
		method, body string
		code         int
	}{{http.MethodGet, "", http.StatusMethodNotAllowed}, {http.MethodPost, "not json", http.StatusBadRequest}, {http.MethodPost, `{"kind":"AdmissionReview"}`, http.StatusBadRequest}} {
		req, _ := http.NewRequest(bad.method, srv.URL, strings.NewReader(bad.body))
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = r.Body.Close()
		if r.StatusCode != bad.code {
			t.Errorf("%s %q: %d, want %d", bad.method, bad.body, r.StatusCode, bad.code)
		}
	}
}

// The CRD case: instances whose finalizers' owner does not run keep the
// CRD in Terminating.
func TestCRDDeletion(t *testing.T) {
	c := cluster()
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	c.Serve(widgets, "Widget", kubetest.AllVerbs)
	c.Add(widgets, kubetest.Object("Widget", "clean", "w1", ownerless))
	c.Add(widgets, kubetest.Object("Widget", "unknown", "w2"))
	crd := func(name, plural string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "CustomResourceDefinition", APIVersion: "apiextensions.k8s.io/v1"}, ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	req := func(name, plural string) *admissionv1.AdmissionRequest {
		r := deleteRequest(t, schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, crd(name, plural))
		r.OldObject.Raw = []byte(fmt.Sprintf(`{"metadata":{"name":%q},"spec":{"group":"example.com","names":{"plural":%q},"versions":[{"name":"v1","served":true,"storage":true}]}}`, name, plural))
		return r
	}
	g := testGuard(c, ModeDeny)
	v := g.Decide(context.Background(), req("widgets.example.com", "widgets"))
	if v.Outcome != OutcomeDenied || v.Target != TargetCRD || len(v.Findings) != 1 {
		t.Fatalf("a CRD whose instance waits for an owner not running: %s, %+v (%v)", v.Outcome, v.Findings, v.Err)
	}
	f := v.Findings[0].Blocker.Facts.(*diagnose.FinalizerFacts)
	if f.Content.Count != 1 || len(f.Held) != 1 || f.Held[0] != "clean/w1" {
		t.Errorf("held %+v %v", f.Content, f.Held)
	}
	c.Serve(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}, "Gadget", kubetest.AllVerbs)
	if v := g.Decide(context.Background(), req("gadgets.example.com", "gadgets")); v.Outcome != OutcomeAllowed {
		t.Errorf("a CRD without instances: %s %+v", v.Outcome, v.Findings)
	}
	none := req("none.example.com", "nones")
	none.OldObject.Raw = []byte(`{"metadata":{"name":"none.example.com"},"spec":{"group":"example.com","names":{"plural":"nones"},"versions":[{"name":"v1","served":false}]}}`)
	if v := g.Decide(context.Background(), none); v.Outcome != OutcomeFailedOpen || v.Failure != FailureError {
		t.Errorf("a CRD serving no version: %s %v, want failed open with the error", v.Outcome, v.Err)
	}
}

// With its reads kept ready, the guard's predictions never list the
// namespace in the path of its DELETE (its content comes from the
// informers), nor anything again (the discovery and the rest come from
// the warm inspector); and the verdicts are those read afresh.
func TestReadsKeptReady(t *testing.T) {
	c := cluster()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := testGuard(c, ModeDeny)
	g.Reads = &Reads{Clients: g.Clients, Refresh: time.Hour}
	go g.Reads.Run(ctx)
	deadline := time.Now().Add(30 * time.Second)
	for synced, watched := g.Reads.Synced(); g.Reads.Inspector() == nil || watched == 0 || synced < watched; synced, watched = g.Reads.Synced() {
		if time.Now().After(deadline) {
			t.Fatalf("reads not ready after 30s: %d of %d types synced", synced, watched)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for name, want := range map[string]Outcome{"held": OutcomeDenied, "unknown": OutcomeWarned, "clean": OutcomeAllowed} {
		req := deleteRequest(t, namespaces, c.Namespace(name))
		// The namespace is never listed; what is read once per inspector
		// (a catalogued owner's workloads) only the first time.
		for round := range 2 {
			before := len(c.RequestsMatching(""))
			if v := g.Decide(ctx, req); v.Outcome != want {
				t.Errorf("%s: outcome %s, want %s (findings %+v, err %v)", name, v.Outcome, want, v.Findings, v.Err)
			}
			for _, r := range c.RequestsMatching("")[before:] {
				if strings.HasPrefix(r, "list ") && (round > 0 || strings.Contains(r, " "+name+"/")) {
					t.Errorf("%s, prediction %d: %s in the path of the DELETE", name, round+1, r)
				}
			}
		}
		if fresh := testGuard(c, ModeDeny).Decide(ctx, req); fresh.Outcome != want {
			t.Errorf("%s: read afresh, outcome %s, want %s", name, fresh.Outcome, want)
		}
	}
}
