package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
)

// AggregatedAPI is an extension API server running in the test process,
// registered with an APIService and reached by kube-apiserver's aggregator
// over loopback (through an ExternalName Service naming localhost). It
// serves one namespaced resource from memory, the way a small aggregated
// API does: no admission, so a controller may create objects in a
// terminating namespace or put finalizers back. Fail makes it answer 503 in
// one namespace, as a backend that went down after discovery does, while
// other namespaces (and discovery) keep working, so tests sharing the
// control plane are not disturbed.
type AggregatedAPI struct {
	GVR        schema.GroupVersionResource
	Kind       string
	APIService string
	// ServiceName is the ExternalName Service in namespace default.
	ServiceName string

	c      *Cluster
	server *httptest.Server

	mu      sync.Mutex
	objects map[string]map[string]*unstructured.Unstructured // namespace, name
	failing map[string]error                                 // namespace: the answer
	warning map[string]string                                // namespace: a warning its writes get
	rv      int
	// brokenTypes more resource types are served, whose every request
	// fails; hang and garbage make the server lie (Hang, Garbage).
	brokenTypes int
	hang        chan struct{}
	garbage     bool
}

// Hang makes every request wait, unanswered, until the API is closed: a
// backend that accepts connections and never answers.
func (a *AggregatedAPI) Hang() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.hang == nil {
		a.hang = make(chan struct{})
	}
}

// Garbage makes discovery answer with what is not JSON, then waits until
// the API server's aggregated discovery, which it refreshes from the
// backend once a minute, marks the group-version stale: what every client
// sees from then on.
func (a *AggregatedAPI) Garbage(ctx context.Context) error {
	a.mu.Lock()
	a.garbage = true
	a.mu.Unlock()
	return wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(context.Context) (bool, error) {
		_, _, err := a.c.Kube.Discovery().ServerGroupsAndResources()
		var failed *discovery.ErrGroupDiscoveryFailed
		if errors.As(err, &failed) {
			_, stale := failed.Groups[a.GVR.GroupVersion()]
			return stale, nil
		}
		return false, nil
	})
}

// Warn makes every write in namespace answered with the API server's
// warning header carrying text, as an admission webhook's warning is.
func (a *AggregatedAPI) Warn(namespace, text string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.warning == nil {
		a.warning = map[string]string{}
	}
	a.warning[namespace] = text
}

// aggregatedServiceNamespace holds the ExternalName Services; it always
// exists.
const aggregatedServiceNamespace = "default"

// StartAggregatedAPI serves resource (kind) in group/v1 and waits until
// the API server's discovery lists it.
func (c *Cluster) StartAggregatedAPI(ctx context.Context, group, kind, resource string) (*AggregatedAPI, error) {
	return c.StartAggregatedAPIWithBrokenTypes(ctx, group, kind, resource, 0)
}

// StartAggregatedAPIWithBrokenTypes is StartAggregatedAPI serving n more
// resource types (resource0, resource1, ...) whose every request fails
// with 503: n types whose lists fail.
func (c *Cluster) StartAggregatedAPIWithBrokenTypes(ctx context.Context, group, kind, resource string, n int) (*AggregatedAPI, error) {
	a := &AggregatedAPI{
		GVR: schema.GroupVersionResource{Group: group, Version: "v1", Resource: resource}, Kind: kind,
		APIService: "v1." + group, c: c, ServiceName: strings.ReplaceAll(group, ".", "-"),
		objects: map[string]map[string]*unstructured.Unstructured{}, failing: map[string]error{}, brokenTypes: n,
	}
	a.server = httptest.NewTLSServer(http.HandlerFunc(a.serve))
	if err := a.register(ctx); err != nil {
		a.Close(context.Background())
		return nil, err
	}
	return a, nil
}

func (a *AggregatedAPI) register(ctx context.Context) error {
	_, portText, _ := net.SplitHostPort(strings.TrimPrefix(a.server.URL, "https://"))
	port, _ := strconv.Atoi(portText)
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: a.ServiceName},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeExternalName, ExternalName: "localhost"},
	}
	if _, err := a.c.Kube.CoreV1().Services(aggregatedServiceNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Service for %s: %w", a.APIService, err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": a.APIService},
		"spec": map[string]any{
			"group": a.GVR.Group, "version": a.GVR.Version,
			"service":               map[string]any{"namespace": aggregatedServiceNamespace, "name": a.ServiceName, "port": int64(port)},
			"insecureSkipTLSVerify": true, "groupPriorityMinimum": int64(100), "versionPriority": int64(100),
		},
	}}
	if _, err := a.c.Dynamic.Resource(apiServiceGVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating APIService %s: %w", a.APIService, err)
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		_, err := a.c.Kube.Discovery().ServerResourcesForGroupVersion(a.GVR.GroupVersion().String())
		return err == nil, nil
	})
}

// Close unregisters the API (first, so no namespace deletion elsewhere
// meets an unavailable APIService) and stops the server.
func (a *AggregatedAPI) Close(ctx context.Context) {
	_ = a.c.DeleteAPIService(ctx, a.APIService)
	_ = a.c.Kube.CoreV1().Services(aggregatedServiceNamespace).Delete(ctx, a.ServiceName, metav1.DeleteOptions{})
	a.mu.Lock()
	if a.hang != nil {
		close(a.hang)
	}
	a.mu.Unlock()
	a.server.Close()
}

// Fail makes every request for the resource in namespace answer 503.
func (a *AggregatedAPI) Fail(namespace, message string) {
	a.FailWith(namespace, apierrors.NewServiceUnavailable(message))
}

// FailWith makes every request for the resource in namespace answer err
// (an API status error).
func (a *AggregatedAPI) FailWith(namespace string, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failing[namespace] = err
}

// Recover ends Fail.
func (a *AggregatedAPI) Recover(namespace string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.failing, namespace)
}

// Stored returns the objects the backend holds in namespace, by name (read
// directly, not through the API server).
func (a *AggregatedAPI) Stored(namespace string) map[string]*unstructured.Unstructured {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]*unstructured.Unstructured{}
	for name, obj := range a.objects[namespace] {
		out[name] = obj.DeepCopy()
	}
	return out
}

// Create creates an object through the API server (and the aggregator).
func (a *AggregatedAPI) Create(ctx context.Context, namespace, name string, finalizers ...string) error {
	return a.c.CreateCustomResource(ctx, a.GVR, a.Kind, namespace, name, finalizers...)
}

func (a *AggregatedAPI) serve(w http.ResponseWriter, req *http.Request) {
	a.mu.Lock()
	hang, garbage := a.hang, a.garbage
	a.mu.Unlock()
	if hang != nil {
		select {
		case <-hang:
		case <-req.Context().Done():
		}
		return
	}
	base := "/apis/" + a.GVR.Group + "/" + a.GVR.Version
	switch {
	case req.URL.Path == base && garbage:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "{\"kind\": \"APIResourceList\", \x00 not json at all")
	case req.URL.Path == base:
		a.discovery(w)
	case strings.HasPrefix(req.URL.Path, base+"/namespaces/"):
		parts := strings.Split(strings.TrimPrefix(req.URL.Path, base+"/namespaces/"), "/")
		if len(parts) >= 2 && parts[1] != a.GVR.Resource && strings.HasPrefix(parts[1], a.GVR.Resource) {
			writeStatus(w, apierrors.NewServiceUnavailable("the backend of "+parts[1]+" is gone"))
			return
		}
		if len(parts) < 2 || len(parts) > 3 || parts[1] != a.GVR.Resource {
			writeStatus(w, apierrors.NewNotFound(a.GVR.GroupResource(), req.URL.Path))
			return
		}
		name := ""
		if len(parts) == 3 {
			name = parts[2]
		}
		a.resource(w, req, parts[0], name)
	default:
		// Includes /apis: the aggregator then falls back to the legacy
		// per-version discovery above.
		http.NotFound(w, req)
	}
}

func (a *AggregatedAPI) discovery(w http.ResponseWriter) {
	// No watch: the garbage collector leaves the resources alone.
	verbs := metav1.Verbs{"create", "get", "list", "delete", "deletecollection", "patch"}
	resources := []metav1.APIResource{{Name: a.GVR.Resource, SingularName: strings.ToLower(a.Kind), Namespaced: true, Kind: a.Kind, Verbs: verbs}}
	for i := range a.brokenTypes {
		name := a.GVR.Resource + strconv.Itoa(i)
		resources = append(resources, metav1.APIResource{Name: name, SingularName: name, Namespaced: true, Kind: a.Kind + strconv.Itoa(i), Verbs: verbs})
	}
	writeJSON(w, http.StatusOK, &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: a.GVR.GroupVersion().String(),
		APIResources: resources,
	})
}

func (a *AggregatedAPI) resource(w http.ResponseWriter, req *http.Request, ns, name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err, ok := a.failing[ns]; ok {
		writeStatus(w, err)
		return
	}
	dryRun := req.URL.Query().Get("dryRun") == "All"
	if text, ok := a.warning[ns]; ok && req.Method != http.MethodGet {
		w.Header().Add("Warning", `299 - "`+text+`"`)
	}
	var err error
	switch {
	case req.Method == http.MethodGet && name == "":
		a.list(w, req, ns)
		return
	case req.Method == http.MethodGet:
		var obj *unstructured.Unstructured
		if obj, err = a.get(ns, name); err == nil {
			writeJSON(w, http.StatusOK, obj.Object)
			return
		}
	case req.Method == http.MethodPost && name == "":
		err = a.create(w, req, ns, dryRun)
	case req.Method == http.MethodDelete:
		err = a.delete(w, ns, name, dryRun)
	case req.Method == http.MethodPatch && name != "":
		err = a.patch(w, req, ns, name, dryRun)
	default:
		err = apierrors.NewMethodNotSupported(a.GVR.GroupResource(), req.Method)
	}
	if err != nil {
		writeStatus(w, err)
	}
}

func (a *AggregatedAPI) get(ns, name string) (*unstructured.Unstructured, error) {
	obj, ok := a.objects[ns][name]
	if !ok {
		return nil, apierrors.NewNotFound(a.GVR.GroupResource(), name)
	}
	return obj, nil
}

// list answers as metadata when asked (the namespace controller's and
// ns-doctor's metadata client), else with full objects.
func (a *AggregatedAPI) list(w http.ResponseWriter, req *http.Request, ns string) {
	kind, apiVersion, itemKind := a.Kind+"List", a.GVR.GroupVersion().String(), a.Kind
	if strings.Contains(req.Header.Get("Accept"), "as=PartialObjectMetadataList") {
		kind, apiVersion, itemKind = "PartialObjectMetadataList", "meta.k8s.io/v1", "PartialObjectMetadata"
	}
	var names []string
	for name := range a.objects[ns] {
		names = append(names, name)
	}
	sort.Strings(names)
	items := []any{}
	for _, name := range names {
		obj := a.objects[ns][name].DeepCopy()
		if itemKind == "PartialObjectMetadata" {
			obj = &unstructured.Unstructured{Object: map[string]any{"metadata": obj.Object["metadata"]}}
		}
		obj.SetKind(itemKind)
		obj.SetAPIVersion(apiVersion)
		items = append(items, obj.Object)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"kind": kind, "apiVersion": apiVersion,
		"metadata": map[string]any{"resourceVersion": strconv.Itoa(a.rv)}, "items": items,
	})
}

func (a *AggregatedAPI) create(w http.ResponseWriter, req *http.Request, ns string, dryRun bool) error {
	obj := &unstructured.Unstructured{}
	if err := readJSON(req.Body, &obj.Object); err != nil {
		return err
	}
	if _, exists := a.objects[ns][obj.GetName()]; exists {
		return apierrors.NewAlreadyExists(a.GVR.GroupResource(), obj.GetName())
	}
	obj.SetNamespace(ns)
	obj.SetUID(uuid.NewUUID())
	obj.SetCreationTimestamp(metav1.Now())
	if !dryRun {
		a.store(ns, obj)
	}
	writeJSON(w, http.StatusCreated, obj.Object)
	return nil
}

// delete removes one object or the whole collection; objects with
// finalizers are only marked, as the API server does.
func (a *AggregatedAPI) delete(w http.ResponseWriter, ns, name string, dryRun bool) error {
	names := []string{name}
	if name == "" {
		names = nil
		for n := range a.objects[ns] {
			names = append(names, n)
		}
	} else if _, err := a.get(ns, name); err != nil {
		return err
	}
	if !dryRun {
		for _, n := range names {
			a.markDeleted(ns, n)
		}
	}
	writeJSON(w, http.StatusOK, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess})
	return nil
}

func (a *AggregatedAPI) markDeleted(ns, name string) {
	obj := a.objects[ns][name]
	if len(obj.GetFinalizers()) == 0 {
		delete(a.objects[ns], name)
		return
	}
	if obj.GetDeletionTimestamp() == nil {
		now := metav1.Now()
		obj.SetDeletionTimestamp(&now)
		a.store(ns, obj)
	}
}

// patch applies a JSON merge patch, honouring a resourceVersion
// precondition in it, and removes a deleted object once its last
// finalizer is gone.
func (a *AggregatedAPI) patch(w http.ResponseWriter, req *http.Request, ns, name string, dryRun bool) error {
	obj, err := a.get(ns, name)
	if err != nil {
		return err
	}
	var patch map[string]any
	if err := readJSON(req.Body, &patch); err != nil {
		return err
	}
	if rv, _, _ := unstructured.NestedString(patch, "metadata", "resourceVersion"); rv != "" && rv != obj.GetResourceVersion() {
		return apierrors.NewConflict(a.GVR.GroupResource(), name, fmt.Errorf("the object has been modified"))
	}
	patched := &unstructured.Unstructured{Object: mergePatch(obj.DeepCopy().Object, patch)}
	if !dryRun {
		a.store(ns, patched)
		if patched.GetDeletionTimestamp() != nil && len(patched.GetFinalizers()) == 0 {
			delete(a.objects[ns], name)
		}
	}
	writeJSON(w, http.StatusOK, patched.Object)
	return nil
}

func (a *AggregatedAPI) store(ns string, obj *unstructured.Unstructured) {
	a.rv++
	obj.SetResourceVersion(strconv.Itoa(a.rv))
	if a.objects[ns] == nil {
		a.objects[ns] = map[string]*unstructured.Unstructured{}
	}
	a.objects[ns][obj.GetName()] = obj
}

// mergePatch applies an RFC 7386 merge patch.
func mergePatch(doc, patch map[string]any) map[string]any {
	for k, pv := range patch {
		pm, isMap := pv.(map[string]any)
		dm, docIsMap := doc[k].(map[string]any)
		switch {
		case pv == nil:
			delete(doc, k)
		case isMap && docIsMap:
			doc[k] = mergePatch(dm, pm)
		case isMap:
			doc[k] = mergePatch(map[string]any{}, pm)
		default:
			doc[k] = pv
		}
	}
	return doc
}

func readJSON(r io.Reader, into any) error {
	if err := json.NewDecoder(r).Decode(into); err != nil {
		return apierrors.NewBadRequest("decoding the request body: " + err.Error())
	}
	return nil
}

func writeStatus(w http.ResponseWriter, err error) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		status = apierrors.NewInternalError(err)
	}
	s := status.Status()
	s.Kind, s.APIVersion = "Status", "v1"
	writeJSON(w, int(s.Code), &s)
}

func writeJSON(w http.ResponseWriter, code int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}
