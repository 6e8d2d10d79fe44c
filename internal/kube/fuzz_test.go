package kube

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// Whatever a (broken or hostile) server answers to discovery, Discover
// returns resources or an error, never panics, and calls deletable only
// what supports delete.
func FuzzDiscover(f *testing.F) {
	var mu sync.Mutex
	var apiBody, apisBody string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/api":
			_, _ = w.Write([]byte(apiBody))
		case r.URL.Path == "/apis":
			_, _ = w.Write([]byte(apisBody))
		case strings.HasPrefix(r.URL.Path, "/api/v1"):
			_, _ = w.Write([]byte(`{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"pods","namespaced":true,"kind":"Pod","verbs":["list","delete"]}]}`))
		default:
			http.Error(w, "gone", http.StatusServiceUnavailable)
		}
	}))
	f.Cleanup(srv.Close)
	f.Add(`{"kind":"APIVersions","versions":["v1"]}`, `{"kind":"APIGroupList","groups":[{"name":"x.io","versions":[{"groupVersion":"x.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"x.io/v1","version":"v1"}}]}`)
	f.Add(`{}`, `{"groups":[{"name":"","versions":[{"groupVersion":"/v1"}]}]}`)
	f.Add(`not json`, `[]`)
	f.Fuzz(func(t *testing.T, api, apis string) {
		mu.Lock()
		apiBody, apisBody = api, apis
		mu.Unlock()
		client, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		d, err := Discover(context.Background(), client)
		if err != nil {
			return
		}
		for gvr, r := range d.DeletableResources() {
			if !slices.Contains(r.Verbs, "delete") || gvr.Resource != r.Name {
				t.Fatalf("%v (%+v) listed as deletable", gvr, r)
			}
		}
		if d.Err == nil && len(d.Failed) > 0 {
			t.Fatalf("failed groups %v without an error", d.Failed)
		}
	})
}
