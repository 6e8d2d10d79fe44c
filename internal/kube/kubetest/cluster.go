// Package kubetest is an in-memory cluster behind client-go's fake
// clients, for fast unit tests of the packages that read and delete
// namespace content. One store backs the typed, metadata and dynamic
// clients alike, and it keeps the API server's deletion rules: a DELETE
// marks what finalizers (or a pod's kubelet) hold and removes the rest,
// the finalize subresource sets spec.finalizers, and an object or
// namespace with a deletionTimestamp goes once nothing holds it. It is
// never linked into the plugin: only tests import it.
package kubetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Cluster is the store and its knobs; use New, then Clients.
type Cluster struct {
	mu         sync.Mutex
	namespaces map[string]*v1.Namespace
	objects    map[schema.GroupVersionResource]map[string]*unstructured.Unstructured // namespace/name
	rv         int

	// Resources are what discovery serves; New fills the usual core ones.
	Resources []*metav1.APIResourceList
	// FailedGroups make discovery of these group-versions fail.
	FailedGroups map[schema.GroupVersion]error
	// Fail returns the error a request is answered with, or nil: verb is
	// the client-go action verb (list, delete, delete-collection, patch,
	// get, create), name empty for collections.
	Fail func(verb string, gvr schema.GroupVersionResource, namespace, name string) error
	// Allowed answers SelfSubjectAccessReviews; nil allows everything.
	Allowed func(attrs ResourceAttributes) bool
	// Now is the clock deletions are stamped with.
	Now func() time.Time

	// Requests logs every request, "verb resource[/subresource] ns/name"
	// with "(dry run)" when it was one.
	Requests []string
}

// ResourceAttributes is what a SelfSubjectAccessReview asks about.
type ResourceAttributes struct {
	Verb, Group, Resource, Subresource, Namespace string
}

// Core resources discovery serves by default.
var (
	Pods       = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	ConfigMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	Secrets    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	// Webhook configurations, cluster-scoped.
	ValidatingWebhooks = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
	MutatingWebhooks   = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
	// CRDs are cluster-scoped: Add them with an empty namespace.
	CRDs = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// AllVerbs are the verbs of an ordinary resource.
var AllVerbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// New returns an empty cluster serving pods, configmaps and secrets.
func New() *Cluster {
	c := &Cluster{
		namespaces: map[string]*v1.Namespace{},
		objects:    map[schema.GroupVersionResource]map[string]*unstructured.Unstructured{},
		Now:        time.Now,
	}
	c.Serve(Pods, "Pod", AllVerbs)
	c.Serve(ConfigMaps, "ConfigMap", AllVerbs)
	c.Serve(Secrets, "Secret", AllVerbs)
	return c
}

// Serve adds a namespaced resource to discovery.
func (c *Cluster) Serve(gvr schema.GroupVersionResource, kind string, verbs metav1.Verbs) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gv := gvr.GroupVersion().String()
	res := metav1.APIResource{Name: gvr.Resource, Namespaced: true, Kind: kind, Verbs: verbs}
	for _, rl := range c.Resources {
		if rl.GroupVersion == gv {
			rl.APIResources = append(rl.APIResources, res)
			return
		}
	}
	c.Resources = append(c.Resources, &metav1.APIResourceList{GroupVersion: gv, APIResources: []metav1.APIResource{res}})
}

// AddNamespace stores a namespace; deleted gives it a deletionTimestamp
// that long ago. spec.finalizers holds "kubernetes" unless tokens say
// otherwise.
func (c *Cluster) AddNamespace(name string, deleted time.Duration, tokens ...v1.FinalizerName) *v1.Namespace {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(tokens) == 0 {
		tokens = []v1.FinalizerName{v1.FinalizerKubernetes}
	}
	ns := &v1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(c.Now().Add(-time.Hour).Truncate(time.Second)),
			Labels: map[string]string{"kubernetes.io/metadata.name": name}},
		Spec:   v1.NamespaceSpec{Finalizers: tokens},
		Status: v1.NamespaceStatus{Phase: v1.NamespaceActive},
	}
	if deleted > 0 {
		at := metav1.NewTime(c.Now().Add(-deleted))
		ns.DeletionTimestamp, ns.Status.Phase = &at, v1.NamespaceTerminating
	}
	ns.ResourceVersion = c.nextRV()
	c.namespaces[name] = ns
	return ns.DeepCopy()
}

// Add stores a namespaced object of resource gvr, built from obj (kind,
// name, namespace, finalizers and anything else set).
func (c *Cluster) Add(gvr schema.GroupVersionResource, obj *unstructured.Unstructured) {
	c.mu.Lock()
	defer c.mu.Unlock()
	obj = obj.DeepCopy()
	if obj.GetAPIVersion() == "" {
		obj.SetAPIVersion(gvr.GroupVersion().String())
	}
	if obj.GetUID() == "" {
		obj.SetUID(types.UID(fmt.Sprintf("uid-%s-%s-%s", gvr.Resource, obj.GetNamespace(), obj.GetName())))
	}
	if ts := obj.GetCreationTimestamp(); ts.IsZero() {
		obj.SetCreationTimestamp(metav1.NewTime(c.Now().Add(-time.Hour)))
	}
	obj.SetResourceVersion(c.nextRV())
	if c.objects[gvr] == nil {
		c.objects[gvr] = map[string]*unstructured.Unstructured{}
	}
	c.objects[gvr][obj.GetNamespace()+"/"+obj.GetName()] = obj
}

// addTyped stores a typed cluster-scoped object; callers hold no lock.
func (c *Cluster) addTyped(gvr schema.GroupVersionResource, kind string, obj runtime.Object) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		panic(fmt.Sprintf("kubetest: %v", err))
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetKind(kind)
	c.Add(gvr, u)
}

// Object builds an object to Add.
func Object(kind, namespace, name string, finalizers ...string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"kind": kind, "metadata": map[string]any{"name": name, "namespace": namespace}}}
	if len(finalizers) > 0 {
		u.SetFinalizers(finalizers)
	}
	return u
}

// Pod builds a pod to Add: bound to node (empty: unscheduled), with its
// termination grace period.
func Pod(namespace, name, node string, grace int64, finalizers ...string) *unstructured.Unstructured {
	u := Object("Pod", namespace, name, finalizers...)
	u.Object["spec"] = map[string]any{"nodeName": node, "terminationGracePeriodSeconds": grace,
		"containers": []any{map[string]any{"name": "c", "image": "registry.invalid/none"}}}
	u.Object["status"] = map[string]any{"phase": "Running"}
	return u
}

// Namespace returns a copy of the namespace, nil when it is gone.
func (c *Cluster) Namespace(name string) *v1.Namespace {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ns := c.namespaces[name]; ns != nil {
		return ns.DeepCopy()
	}
	return nil
}

// Get returns a copy of an object, nil when it is gone.
func (c *Cluster) Get(gvr schema.GroupVersionResource, namespace, name string) *unstructured.Unstructured {
	c.mu.Lock()
	defer c.mu.Unlock()
	if o := c.objects[gvr][namespace+"/"+name]; o != nil {
		return o.DeepCopy()
	}
	return nil
}

// Names lists the objects of a resource in a namespace, sorted.
func (c *Cluster) Names(gvr schema.GroupVersionResource, namespace string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []string{}
	for _, o := range c.list(gvr, namespace) {
		out = append(out, o.GetName())
	}
	return out
}

func (c *Cluster) nextRV() string {
	c.rv++
	return strconv.Itoa(c.rv)
}

func (c *Cluster) log(verb string, gvr schema.GroupVersionResource, sub, namespace, name string, dryRun bool) {
	s := verb + " " + gvr.Resource
	if sub != "" {
		s += "/" + sub
	}
	if namespace != "" || name != "" {
		s += " " + namespace + "/" + name
	}
	if dryRun {
		s += " (dry run)"
	}
	c.Requests = append(c.Requests, s)
}

// RequestsMatching are the logged requests starting with prefix.
func (c *Cluster) RequestsMatching(prefix string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, r := range c.Requests {
		if len(r) >= len(prefix) && r[:len(prefix)] == prefix {
			out = append(out, r)
		}
	}
	return out
}

func (c *Cluster) fail(verb string, gvr schema.GroupVersionResource, namespace, name string) error {
	if c.Fail == nil {
		return nil
	}
	return c.Fail(verb, gvr, namespace, name)
}

// list returns a namespace's objects of gvr sorted by name; callers hold mu.
func (c *Cluster) list(gvr schema.GroupVersionResource, namespace string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range c.objects[gvr] {
		if namespace == "" || o.GetNamespace() == namespace { // "": every namespace, as the API
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out
}

// deleteObject plays a DELETE with background propagation (or the grace
// given): the garbage collector's finalizers are dropped, finalizers and a
// pod's kubelet keep the object marked, anything else goes.
func (c *Cluster) deleteObject(gvr schema.GroupVersionResource, o *unstructured.Unstructured, grace *int64) {
	fins := slices.DeleteFunc(o.GetFinalizers(), func(f string) bool {
		return f == metav1.FinalizerDeleteDependents || f == metav1.FinalizerOrphanDependents
	})
	o.SetFinalizers(fins)
	kubelet := gvr == Pods && (grace == nil || *grace > 0) && nestedString(o, "spec", "nodeName") != "" &&
		!slices.Contains([]string{"Succeeded", "Failed"}, nestedString(o, "status", "phase"))
	if len(fins) == 0 && !kubelet {
		delete(c.objects[gvr], o.GetNamespace()+"/"+o.GetName())
		return
	}
	if o.GetDeletionTimestamp() == nil {
		at := metav1.NewTime(c.Now())
		o.SetDeletionTimestamp(&at)
	}
	o.SetResourceVersion(c.nextRV())
}

// patchObject applies a JSON merge patch, checking a resourceVersion it
// carries, and removes an object being deleted that nothing holds any more.
func (c *Cluster) patchObject(gvr schema.GroupVersionResource, o *unstructured.Unstructured, patch []byte, dryRun bool) (*unstructured.Unstructured, error) {
	var meta struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patch, &meta); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if rv := meta.Metadata.ResourceVersion; rv != "" && rv != o.GetResourceVersion() {
		return nil, apierrors.NewConflict(gvr.GroupResource(), o.GetName(), fmt.Errorf("the object has been modified"))
	}
	orig, err := json.Marshal(o.Object)
	if err != nil {
		return nil, err
	}
	merged, err := jsonpatch.MergePatch(orig, patch)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(merged); err != nil {
		return nil, err
	}
	if dryRun {
		return out, nil
	}
	out.SetResourceVersion(c.nextRV())
	key := o.GetNamespace() + "/" + o.GetName()
	kubelet := gvr == Pods && nestedString(out, "spec", "nodeName") != ""
	if out.GetDeletionTimestamp() != nil && len(out.GetFinalizers()) == 0 && !kubelet {
		delete(c.objects[gvr], key)
		return out, nil
	}
	c.objects[gvr][key] = out
	return out, nil
}

func nestedString(o *unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(o.Object, fields...)
	return s
}

// toPartial is an object's metadata as the metadata client returns it.
func toPartial(o *unstructured.Unstructured) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: o.GetAPIVersion(), Kind: o.GetKind()}}
	m.Name, m.Namespace, m.UID, m.ResourceVersion = o.GetName(), o.GetNamespace(), o.GetUID(), o.GetResourceVersion()
	m.CreationTimestamp, m.DeletionTimestamp, m.Finalizers = o.GetCreationTimestamp(), o.GetDeletionTimestamp(), o.GetFinalizers()
	m.DeletionGracePeriodSeconds, m.Labels, m.OwnerReferences = o.GetDeletionGracePeriodSeconds(), o.GetLabels(), o.GetOwnerReferences()
	m.ManagedFields = o.GetManagedFields()
	return m
}

func toPod(o *unstructured.Unstructured) (v1.Pod, error) {
	var pod v1.Pod
	err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &pod)
	return pod, err
}

// SetNamespaceFinalizers sets a stored namespace's metadata.finalizers,
// a new resourceVersion with them as the API server gives.
func (c *Cluster) SetNamespaceFinalizers(name string, finalizers ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ns := c.namespaces[name]; ns != nil {
		ns.Finalizers, ns.ResourceVersion = finalizers, c.nextRV()
	}
}
