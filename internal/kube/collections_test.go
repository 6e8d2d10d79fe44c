package kube

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// Objects as an API server may write them: odd spacing, escapes, fields
// in no particular order. The backup must keep them byte for byte.
var rawConfigMaps = []string{
	`{"metadata":{"name":"cm-0","namespace":"ns"},"data":{"k":"v"}}`,
	`{ "data" : { "key" : "caf\u00e9" } , "metadata" : { "name" : "cm-1" , "namespace" : "ns" } }`,
	`{"metadata":{"name":"cm-2","namespace":"ns","annotations":{"a":"<&>"}},"binaryData":{"b":"AAEC"}}`,
	`{"metadata":{"name":"cm-3","namespace":"ns"},"data":{"multi":"line\nline"}}`,
	`{"metadata":{"name":"cm-4","namespace":"ns"},"immutable":true}`,
}

type seenObject struct {
	raw, apiVersion, kind string
}

func collect(seen *[]seenObject) func(raw []byte, apiVersion, kind string) error {
	return func(raw []byte, apiVersion, kind string) error {
		*seen = append(*seen, seenObject{string(raw), apiVersion, kind})
		return nil
	}
}

// EachObjectJSON follows the continue tokens page by page, asking for
// JSON at the given page size, and hands over every object exactly as the
// server wrote it, with the list's apiVersion and the item kind.
func TestEachObjectJSONPagesThroughRawObjects(t *testing.T) {
	cases := []struct {
		name                    string
		gvr                     schema.GroupVersionResource
		path, kind              string
		wantAPIVersion, wantKnd string
	}{
		{"core", configMaps, "/api/v1/namespaces/ns/configmaps", "ConfigMap", "v1", "ConfigMap"},
		{"group", schema.GroupVersionResource{Group: "example.com", Version: "v1alpha1", Resource: "widgets"},
			"/apis/example.com/v1alpha1/namespaces/ns/widgets", "Widget", "example.com/v1alpha1", "Widget"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t)
			api.add(tc.path, tc.kind, rawConfigMaps...)
			c := api.clients()
			var seen []seenObject
			if err := c.Collections.EachObjectJSON(context.Background(), tc.gvr, "ns", 2, collect(&seen)); err != nil {
				t.Fatal(err)
			}
			if len(seen) != len(rawConfigMaps) {
				t.Fatalf("%d objects reached the callback, want %d", len(seen), len(rawConfigMaps))
			}
			for i, s := range seen {
				if s.raw != rawConfigMaps[i] {
					t.Errorf("object %d reached the callback as\n%s\nwant, byte for byte,\n%s", i, s.raw, rawConfigMaps[i])
				}
				if s.apiVersion != tc.wantAPIVersion || s.kind != tc.wantKnd {
					t.Errorf("object %d: apiVersion %q kind %q, want %q %q", i, s.apiVersion, s.kind, tc.wantAPIVersion, tc.wantKnd)
				}
			}
			gets := api.sent(http.MethodGet)
			var tokens []string
			for _, r := range gets {
				if r.Path != tc.path {
					t.Errorf("GET %s, want %s", r.Path, tc.path)
				}
				if r.Query.Get("limit") != "2" {
					t.Errorf("limit=%q, want 2", r.Query.Get("limit"))
				}
				if r.Accept != "application/json" {
					t.Errorf("Accept %q, want application/json (never protobuf: the objects are kept as JSON)", r.Accept)
				}
				tokens = append(tokens, r.Query.Get("continue"))
			}
			if want := []string{"", "tok-2", "tok-4"}; !slices.Equal(tokens, want) {
				t.Errorf("continue tokens sent %q, want %q", tokens, want)
			}
		})
	}
}

func TestEachObjectJSONEmptyCollection(t *testing.T) {
	api := newFakeAPI(t)
	api.add("/api/v1/namespaces/ns/configmaps", "ConfigMap")
	called := 0
	err := api.clients().Collections.EachObjectJSON(context.Background(), configMaps, "ns", 10, func([]byte, string, string) error {
		called++
		return nil
	})
	if err != nil || called != 0 || len(api.sent(http.MethodGet)) != 1 {
		t.Errorf("empty collection: err %v, %d calls, %d requests; want nil, 0, 1", err, called, len(api.sent(http.MethodGet)))
	}
}

// The callback's error ends the read at once: no further object, no
// further page.
func TestEachObjectJSONStopsOnCallbackError(t *testing.T) {
	api := newFakeAPI(t)
	api.add("/api/v1/namespaces/ns/configmaps", "ConfigMap", rawConfigMaps...)
	full := errors.New("backup disk full")
	calls := 0
	err := api.clients().Collections.EachObjectJSON(context.Background(), configMaps, "ns", 3, func([]byte, string, string) error {
		calls++
		if calls == 2 {
			return full
		}
		return nil
	})
	if !errors.Is(err, full) {
		t.Fatalf("err %v, want the callback's", err)
	}
	if calls != 2 {
		t.Errorf("callback called %d times, want 2 (none after its error)", calls)
	}
	if n := len(api.sent(http.MethodGet)); n != 1 {
		t.Errorf("%d pages asked, want 1", n)
	}
}

// A server error on a later page is returned as the API error it is, with
// the server's message, after the objects of the pages before it.
func TestEachObjectJSONReturnsAServerErrorMidList(t *testing.T) {
	api := newFakeAPI(t)
	api.add("/api/v1/namespaces/ns/configmaps", "ConfigMap", rawConfigMaps...)
	api.fail["/api/v1/namespaces/ns/configmaps?continue=tok-2"] = http.StatusInternalServerError
	var seen []seenObject
	err := api.clients().Collections.EachObjectJSON(context.Background(), configMaps, "ns", 2, collect(&seen))
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "etcd is unavailable") {
		t.Fatalf("err %v, want the server's internal error and its message", err)
	}
	if len(seen) != 2 || seen[0].raw != rawConfigMaps[0] || seen[1].raw != rawConfigMaps[1] {
		t.Errorf("objects before the error: %v, want the first page's two", seen)
	}
}

func TestEachObjectJSONRejectsAnUnreadablePage(t *testing.T) {
	api := newFakeAPI(t)
	api.add("/api/v1/namespaces/ns/configmaps", "ConfigMap", `not json`)
	err := api.clients().Collections.EachObjectJSON(context.Background(), configMaps, "ns", 2, func([]byte, string, string) error {
		t.Error("callback called for an unreadable page")
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "reading a page of configmaps") {
		t.Errorf("err %v, want one naming the page it could not read", err)
	}
}

// A deletion pass's deletecollection: DELETE on the collection path, the
// options (background propagation, dryRun when asked) in the body, asking
// for metadata only; the large answer is read away without error.
func TestDeleteCollectionRequest(t *testing.T) {
	for _, dryRun := range []bool{false, true} {
		t.Run(map[bool]string{false: "real", true: "dry run"}[dryRun], func(t *testing.T) {
			api := newFakeAPI(t)
			api.add("/apis/apps/v1/namespaces/ns/deployments", "Deployment")
			ops := NewMetadataOps(api.clients(), dryRun)
			if err := ops.DeleteCollection(context.Background(), schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "ns"); err != nil {
				t.Fatal(err)
			}
			dels := api.sent(http.MethodDelete)
			if len(dels) != 1 {
				t.Fatalf("%d DELETE requests, want 1", len(dels))
			}
			r := dels[0]
			if r.Path != "/apis/apps/v1/namespaces/ns/deployments" {
				t.Errorf("DELETE %s", r.Path)
			}
			if r.Accept != deletedAsMetadata {
				t.Errorf("Accept %q, want %q", r.Accept, deletedAsMetadata)
			}
			var opts metav1.DeleteOptions
			if err := json.Unmarshal(r.Body, &opts); err != nil {
				t.Fatalf("body %q: %v", r.Body, err)
			}
			if opts.PropagationPolicy == nil || *opts.PropagationPolicy != metav1.DeletePropagationBackground {
				t.Errorf("propagationPolicy %v, want Background", opts.PropagationPolicy)
			}
			if want := map[bool][]string{true: {metav1.DryRunAll}}[dryRun]; !slices.Equal(opts.DryRun, want) {
				t.Errorf("dryRun %q, want %q", opts.DryRun, want)
			}
		})
	}
}

func TestDeleteCollectionReturnsTheServersRefusal(t *testing.T) {
	api := newFakeAPI(t)
	api.add("/api/v1/namespaces/ns/configmaps", "ConfigMap")
	api.deleteStatus = http.StatusForbidden
	err := api.clients().Collections.DeleteCollection(context.Background(), configMaps, "ns", metav1.DeleteOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("err %v, want Forbidden", err)
	}
}

// A single delete goes through the metadata client with the same options.
func TestMetadataOpsDelete(t *testing.T) {
	api := newFakeAPI(t)
	api.add("/api/v1/namespaces/ns/configmaps", "ConfigMap", rawConfigMaps...)
	ops := NewMetadataOps(api.clients(), true)
	if err := ops.Delete(context.Background(), configMaps, "ns", "cm-3"); err != nil {
		t.Fatal(err)
	}
	dels := api.sent(http.MethodDelete)
	if len(dels) != 1 || dels[0].Path != "/api/v1/namespaces/ns/configmaps/cm-3" {
		t.Fatalf("DELETE requests %+v, want one of cm-3", dels)
	}
	var opts metav1.DeleteOptions
	if err := json.Unmarshal(dels[0].Body, &opts); err != nil {
		t.Fatalf("body %q: %v", dels[0].Body, err)
	}
	if opts.PropagationPolicy == nil || *opts.PropagationPolicy != metav1.DeletePropagationBackground || !slices.Equal(opts.DryRun, []string{metav1.DryRunAll}) {
		t.Errorf("options %+v, want background propagation and dryRun All", opts)
	}
	if err := ops.Delete(context.Background(), configMaps, "ns", "gone"); !apierrors.IsNotFound(err) {
		t.Errorf("deleting a missing object: %v, want NotFound", err)
	}
}

// The server's warnings reach the sink for writes (deletes), not for the
// reads of a sweep or a backup.
func TestWarningsReachTheSinkForWritesOnly(t *testing.T) {
	api := newFakeAPI(t)
	api.add("/api/v1/namespaces/ns/configmaps", "ConfigMap", rawConfigMaps...)
	api.warning = "v1 ConfigMap is deprecated"
	c := api.clients()
	var got []string
	ctx := WithWarnings(context.Background(), func(text string) { got = append(got, text) })

	if _, err := ListMetadata(ctx, c.Metadata, configMaps, "ns"); err != nil {
		t.Fatal(err)
	}
	if err := c.Collections.EachObjectJSON(ctx, configMaps, "ns", 10, func([]byte, string, string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("warnings of reads reached the sink: %q", got)
	}
	ops := NewMetadataOps(c, false)
	if err := ops.Delete(ctx, configMaps, "ns", "cm-0"); err != nil {
		t.Fatal(err)
	}
	if err := ops.DeleteCollection(ctx, configMaps, "ns"); err != nil {
		t.Fatal(err)
	}
	if want := []string{"v1 ConfigMap is deprecated", "v1 ConfigMap is deprecated"}; !slices.Equal(got, want) {
		t.Errorf("warnings of the two deletes: %q, want %q", got, want)
	}
}
