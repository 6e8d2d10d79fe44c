package kube

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"
)

// fakeAPI is an API server over HTTP that knows a few collections, each
// a list of objects kept as the JSON it sends: full lists carry them byte
// for byte, metadata-only lists (asked for by the Accept header, as the
// metadata client does) their metadata. It pages lists with continue
// tokens and records every request.
type fakeAPI struct {
	t   *testing.T
	srv *httptest.Server
	// apf makes every answer carry the API Priority and Fairness header.
	apf atomic.Bool

	mu          sync.Mutex
	collections map[string]*collection
	// pageSize bounds every page whatever the client's limit (0: none),
	// as an API server may.
	pageSize int
	// fail answers the page of a collection path starting at a continue
	// token ("" for the first) with that status code.
	fail map[string]int
	// deleteStatus is the answer to a deletecollection (0: 200).
	deleteStatus int
	// warning is set as a Warning header on every answer.
	warning  string
	requests []request
}

type collection struct {
	kind  string // of an item, e.g. ConfigMap
	items []string
}

type request struct {
	Method string
	Path   string
	Query  url.Values
	Accept string
	Body   []byte
}

func newFakeAPI(t *testing.T) *fakeAPI {
	t.Helper()
	a := &fakeAPI{t: t, collections: map[string]*collection{}, fail: map[string]int{}}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

// add serves items (JSON objects) at a collection path.
func (a *fakeAPI) add(path, kind string, items ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.collections[path] = &collection{kind: kind, items: items}
}

// clients are ClientsForConfig for the server.
func (a *fakeAPI) clients() *Clients {
	a.t.Helper()
	c, err := ClientsForConfig(&rest.Config{Host: a.srv.URL})
	if err != nil {
		a.t.Fatal(err)
	}
	return c
}

// sent are the requests received so far with the given method.
func (a *fakeAPI) sent(method string) []request {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []request
	for _, r := range a.requests {
		if r.Method == method {
			out = append(out, r)
		}
	}
	return out
}

func (a *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requests = append(a.requests, request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Accept: r.Header.Get("Accept"), Body: body})
	if a.apf.Load() {
		w.Header().Set(flowSchemaHeader, "7b9c1a3e-0000-4000-8000-000000000001")
	}
	if a.warning != "" {
		w.Header().Set("Warning", `299 - "`+a.warning+`"`)
	}
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path == "/version" {
		_, _ = fmt.Fprint(w, `{"major":"1","minor":"36","gitVersion":"v1.36.3"}`)
		return
	}
	if coll, ok := a.collections[r.URL.Path]; ok {
		switch r.Method {
		case http.MethodGet:
			a.list(w, r, coll)
		case http.MethodDelete:
			if a.deleteStatus != 0 && a.deleteStatus != http.StatusOK {
				writeStatus(w, a.deleteStatus, "deletecollection refused")
				return
			}
			// An answer of some size, which the client reads to its end.
			_, _ = fmt.Fprintf(w, `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{},"items":[%s]}`,
				strings.Repeat(`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"x"}},`, 20000)+`{}`)
		default:
			writeStatus(w, http.StatusMethodNotAllowed, "method not allowed")
		}
		return
	}
	// One object of a collection: only deletes.
	i := strings.LastIndex(r.URL.Path, "/")
	if coll, ok := a.collections[r.URL.Path[:i]]; ok && r.Method == http.MethodDelete {
		name := r.URL.Path[i+1:]
		for _, item := range coll.items {
			if itemName(item) == name {
				_, _ = fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
				return
			}
		}
	}
	writeStatus(w, http.StatusNotFound, fmt.Sprintf("%s not found", r.URL.Path))
}

// list answers one page of coll: full objects, or their metadata when the
// Accept header asks for a PartialObjectMetadataList.
func (a *fakeAPI) list(w http.ResponseWriter, r *http.Request, coll *collection) {
	token := r.URL.Query().Get("continue")
	if code, ok := a.fail[r.URL.Path+"?continue="+token]; ok {
		writeStatus(w, code, "etcd is unavailable")
		return
	}
	start := 0
	if token != "" {
		var err error
		if start, err = strconv.Atoi(strings.TrimPrefix(token, "tok-")); err != nil {
			writeStatus(w, http.StatusGone, "bad continue token")
			return
		}
	}
	end := len(coll.items)
	if limit, _ := strconv.Atoi(r.URL.Query().Get("limit")); limit > 0 && start+limit < end {
		end = start + limit
	}
	if a.pageSize > 0 && start+a.pageSize < end {
		end = start + a.pageSize
	}
	next := ""
	if end < len(coll.items) {
		next = "tok-" + strconv.Itoa(end)
	}
	items := coll.items[start:end]
	if strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadataList") {
		var metas []string
		for _, item := range items {
			var obj struct {
				Metadata json.RawMessage `json:"metadata"`
			}
			if err := json.Unmarshal([]byte(item), &obj); err != nil {
				a.t.Errorf("serving %s: %v", item, err)
			}
			metas = append(metas, `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":`+string(obj.Metadata)+`}`)
		}
		_, _ = fmt.Fprintf(w, `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"continue":%q},"items":[%s]}`,
			next, strings.Join(metas, ","))
		return
	}
	// /api/v1/... or /apis/group/version/...
	parts := strings.Split(r.URL.Path, "/")
	apiVersion := parts[2]
	if parts[1] == "apis" {
		apiVersion += "/" + parts[3]
	}
	_, _ = fmt.Fprintf(w, `{"kind":"%sList","apiVersion":%q,"metadata":{"continue":%q,"resourceVersion":"42"},"items":[%s]}`,
		coll.kind, apiVersion, next, strings.Join(items, ","))
}

func itemName(item string) string {
	var obj struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal([]byte(item), &obj)
	return obj.Metadata.Name
}

// writeStatus answers an error as the API server does, with a Status.
func writeStatus(w http.ResponseWriter, code int, message string) {
	reason := map[int]string{
		http.StatusForbidden: "Forbidden", http.StatusNotFound: "NotFound", http.StatusGone: "Expired",
		http.StatusInternalServerError: "InternalError", http.StatusServiceUnavailable: "ServiceUnavailable",
	}[code]
	w.WriteHeader(code)
	_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":%q,"reason":%q,"code":%d}`,
		message, reason, code)
}
