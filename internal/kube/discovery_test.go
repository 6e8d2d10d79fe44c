package kube

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// discoveryServer answers legacy discovery: the core group, apps (one
// version), metrics.k8s.io (an aggregated API), and fails the paths in
// failing with 503.
func discoveryServer(t *testing.T, failing ...string) discovery.DiscoveryInterface {
	t.Helper()
	bodies := map[string]string{
		"/api": `{"kind":"APIVersions","versions":["v1"]}`,
		"/api/v1": `{"kind":"APIResourceList","groupVersion":"v1","resources":[
			{"name":"pods","namespaced":true,"kind":"Pod","verbs":["create","delete","deletecollection","get","list"]},
			{"name":"pods/log","namespaced":true,"kind":"Pod","verbs":["get"]},
			{"name":"bindings","namespaced":true,"kind":"Binding","verbs":["create"]},
			{"name":"namespaces","namespaced":false,"kind":"Namespace","verbs":["delete","get","list"]}]}`,
		"/apis": `{"kind":"APIGroupList","groups":[
			{"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}},
			{"name":"metrics.k8s.io","versions":[{"groupVersion":"metrics.k8s.io/v1beta1","version":"v1beta1"}],"preferredVersion":{"groupVersion":"metrics.k8s.io/v1beta1","version":"v1beta1"}}]}`,
		"/apis/apps/v1": `{"kind":"APIResourceList","groupVersion":"apps/v1","resources":[
			{"name":"deployments","namespaced":true,"kind":"Deployment","verbs":["delete","list"]}]}`,
		"/apis/metrics.k8s.io/v1beta1": `{"kind":"APIResourceList","groupVersion":"metrics.k8s.io/v1beta1","resources":[
			{"name":"pods","namespaced":true,"kind":"PodMetrics","verbs":["get","list"]}]}`,
		"/version": `{"major":"1","minor":"36","gitVersion":"v1.36.3"}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := bodies[r.URL.Path]
		if !ok || slices.Contains(failing, r.URL.Path) {
			writeStatus(w, http.StatusServiceUnavailable, "the server is currently unable to handle the request")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	client, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

var (
	podsGVR        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

func deletableKeys(d *Discovery) []schema.GroupVersionResource {
	keys := slices.Collect(maps.Keys(d.DeletableResources()))
	slices.SortFunc(keys, func(a, b schema.GroupVersionResource) int { return strings.Compare(a.String(), b.String()) })
	return keys
}

// Deletable: namespaced, supporting delete; neither cluster-scoped types,
// subresources nor types without delete.
func TestDiscoverComplete(t *testing.T) {
	d, err := Discover(context.Background(), discoveryServer(t))
	if err != nil {
		t.Fatal(err)
	}
	if d.Err != nil || d.Failed != nil {
		t.Errorf("complete discovery recorded a failure: %v, %v", d.Err, d.Failed)
	}
	if got, want := deletableKeys(d), []schema.GroupVersionResource{podsGVR, deploymentsGVR}; !slices.Equal(got, want) {
		t.Errorf("deletable %v, want %v", got, want)
	}
	if r := d.DeletableResources()[podsGVR]; r.Kind != "Pod" || !r.Namespaced {
		t.Errorf("pods resource %+v", r)
	}
}

// A group that fails is recorded, with the error as discovery returned
// it; the others are still there.
func TestDiscoverPartial(t *testing.T) {
	d, err := Discover(context.Background(), discoveryServer(t, "/apis/metrics.k8s.io/v1beta1"))
	if err != nil {
		t.Fatalf("a partial discovery failed: %v", err)
	}
	var groupErr *discovery.ErrGroupDiscoveryFailed
	if !errors.As(d.Err, &groupErr) {
		t.Errorf("Err %v, want discovery's group failure", d.Err)
	}
	metrics := schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}
	if len(d.Failed) != 1 || d.Failed[metrics] == nil {
		t.Errorf("failed %v, want metrics.k8s.io/v1beta1 only", d.Failed)
	}
	if got, want := deletableKeys(d), []schema.GroupVersionResource{podsGVR, deploymentsGVR}; !slices.Equal(got, want) {
		t.Errorf("deletable %v, want %v", got, want)
	}
}

func TestDiscoverTotalFailure(t *testing.T) {
	d, err := Discover(context.Background(), discoveryServer(t, "/api", "/apis"))
	if err == nil || !strings.Contains(err.Error(), "discovering the API's resources") || d != nil {
		t.Errorf("discovery %v, err %v; want only an error", d, err)
	}
}

func TestDeletableResourcesSkipsAnUnreadableGroupVersion(t *testing.T) {
	del := []string{"delete"}
	d := &Discovery{Resources: []*metav1.APIResourceList{
		{GroupVersion: "a/b/c", APIResources: []metav1.APIResource{{Name: "things", Namespaced: true, Verbs: del}}},
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Namespaced: true, Verbs: del}}},
	}}
	if got := deletableKeys(d); !slices.Equal(got, []schema.GroupVersionResource{podsGVR}) {
		t.Errorf("deletable %v, want pods only", got)
	}
}

func TestServerVersion(t *testing.T) {
	v, err := ServerVersion(context.Background(), discoveryServer(t))
	if err != nil || v != "v1.36.3" {
		t.Errorf("version %q, err %v; want v1.36.3", v, err)
	}
	if _, err := ServerVersion(context.Background(), discoveryServer(t, "/version")); err == nil || !strings.Contains(err.Error(), "reading the server's version") {
		t.Errorf("err %v, want one naming the version", err)
	}
}

// A discovery that does not answer (an API server saturated by thousands
// of namespaces) ends with its context: a watch told to stop is not held
// by it. The server answers only once the test ends; without the context
// Discover and ServerVersion would wait for it.
func TestDiscoveryEndsWithItsContext(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	client, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func(context.Context) error{
		"Discover":      func(ctx context.Context) error { _, err := Discover(ctx, client); return err },
		"ServerVersion": func(ctx context.Context) error { _, err := ServerVersion(ctx, client); return err },
	} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- call(ctx) }()
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s: %v, want the context's end", name, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s still waits for the server after its context ended", name)
		}
	}
}
