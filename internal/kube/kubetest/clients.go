package kubetest

import (
	"context"
	"slices"
	"strings"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	authv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apimachinery/pkg/watch"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/metadata"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorfake "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/fake"

	"github.com/ns-doctor/ns-doctor/internal/kube"
)

var namespacesGVR = v1.SchemeGroupVersion.WithResource("namespaces")

// Clients returns kube.Clients over the store. typed objects (webhook
// configurations, Services, EndpointSlices, APIServices) are served by the
// fakes' own trackers.
func (c *Cluster) Clients(typed ...runtime.Object) *kube.Clients {
	var core, agg []runtime.Object
	for _, o := range typed {
		switch o := o.(type) {
		case *apiregv1.APIService:
			agg = append(agg, o)
		case *admissionregv1.ValidatingWebhookConfiguration:
			c.addTyped(ValidatingWebhooks, "ValidatingWebhookConfiguration", o)
		case *admissionregv1.MutatingWebhookConfiguration:
			c.addTyped(MutatingWebhooks, "MutatingWebhookConfiguration", o)
		default:
			core = append(core, o)
		}
	}
	kc := fake.NewClientset(core...)
	kc.PrependReactor("*", "*", c.typed)
	fd := kc.Discovery().(*fakediscovery.FakeDiscovery)
	c.mu.Lock()
	fd.Resources = c.discoveryLists()
	fd.FakedServerVersion = &version.Info{GitVersion: "v1.36.3", Major: "1", Minor: "36"}
	listKinds := map[schema.GroupVersionResource]string{}
	for _, rl := range fd.Resources {
		gv, _ := schema.ParseGroupVersion(rl.GroupVersion)
		for _, r := range rl.APIResources {
			listKinds[gv.WithResource(r.Name)] = r.Kind + "List"
		}
	}
	c.mu.Unlock()
	listKinds[CRDs] = "CustomResourceDefinitionList"
	listKinds[ValidatingWebhooks] = "ValidatingWebhookConfigurationList"
	listKinds[MutatingWebhooks] = "MutatingWebhookConfigurationList"
	scheme := runtime.NewScheme()
	_ = metav1.AddMetaToScheme(scheme)
	fakeMeta := metadatafake.NewSimpleMetadataClient(scheme)
	fakeMeta.PrependReactor("*", "*", c.metadata)
	meta := &dryRunCollections{Interface: fakeMeta, c: c}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds)
	dyn.PrependReactor("*", "*", c.dynamic)
	return &kube.Clients{Kube: kc, Metadata: meta, Dynamic: dyn, Discovery: &discovery{FakeDiscovery: fd, c: c},
		Aggregator: aggregatorfake.NewSimpleClientset(agg...), Collections: collections{c: c, meta: meta}, Placement: placement{c: c}}
}

// collections serves full reads from the store, as JSON, the way the
// dynamic client's lists are served (logged and failed as "full list"),
// and deletes collections as the metadata client does.
type collections struct {
	c    *Cluster
	meta metadata.Interface
}

func (r collections) DeleteCollection(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.DeleteOptions) error {
	return r.meta.Resource(gvr).Namespace(namespace).DeleteCollection(ctx, opts, metav1.ListOptions{})
}

func (r collections) EachObjectJSON(_ context.Context, gvr schema.GroupVersionResource, namespace string, _ int64,
	fn func(raw []byte, apiVersion, kind string) error) error {
	c := r.c
	c.mu.Lock()
	c.log("full list", gvr, "", namespace, "", false)
	err := c.fail("full list", gvr, namespace, "")
	var items [][]byte
	for _, o := range c.list(gvr, namespace) {
		raw, merr := o.MarshalJSON()
		if merr != nil {
			err = merr
		}
		items = append(items, raw)
	}
	c.mu.Unlock()
	if err != nil {
		return err
	}
	for _, raw := range items {
		if err := fn(raw, gvr.GroupVersion().String(), ""); err != nil {
			return err
		}
	}
	return nil
}

// placement reads pods' nodes from the store, logged as "table get".
type placement struct{ c *Cluster }

func (p placement) NodesOf(_ context.Context, namespace string, names []string) (map[string]string, error) {
	c := p.c
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]string{}
	for _, name := range names {
		c.log("table get", Pods, "", namespace, name, false)
		if err := c.fail("table get", Pods, namespace, name); err != nil {
			return out, err
		}
		if o := c.objects[Pods][namespace+"/"+name]; o != nil {
			out[name] = nestedString(o, "spec", "nodeName")
		}
	}
	return out, nil
}

// discoveryLists are the served resources plus an empty list for each
// failing group-version, so it is listed among the groups; callers hold mu.
func (c *Cluster) discoveryLists() []*metav1.APIResourceList {
	out := slices.Clone(c.Resources)
	for gv := range c.FailedGroups {
		out = append(out, &metav1.APIResourceList{GroupVersion: gv.String()})
	}
	return out
}

// discovery fails the group-versions the cluster says fail.
type discovery struct {
	*fakediscovery.FakeDiscovery
	c *Cluster
}

func (d *discovery) ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error) {
	return d.ServerResourcesForGroupVersionWithContext(context.Background(), groupVersion)
}

// ServerResourcesForGroupVersionWithContext is what client-go's discovery
// helpers call from v0.37 on: the embedded fake's would bypass the
// failures.
func (d *discovery) ServerResourcesForGroupVersionWithContext(ctx context.Context, groupVersion string) (*metav1.APIResourceList, error) {
	gv, _ := schema.ParseGroupVersion(groupVersion)
	d.c.mu.Lock()
	err := d.c.FailedGroups[gv]
	d.c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return d.FakeDiscovery.ServerResourcesForGroupVersionWithContext(ctx, groupVersion)
}

func dryRunOf(action clienttesting.Action) bool {
	switch a := action.(type) {
	case clienttesting.DeleteActionImpl:
		return len(a.DeleteOptions.DryRun) > 0
	case clienttesting.PatchActionImpl:
		return len(a.PatchOptions.DryRun) > 0
	case clienttesting.CreateActionImpl:
		return len(a.CreateOptions.DryRun) > 0
	}
	return false
}

// typed serves namespaces, pods and access reviews from the store; the rest
// falls through to the fake's tracker.
func (c *Cluster) typed(action clienttesting.Action) (bool, runtime.Object, error) {
	gvr := action.GetResource()
	switch gvr.Resource {
	case "namespaces":
		return c.namespaceAction(action)
	case "pods":
		if action.GetVerb() == "list" {
			return c.listPods(action)
		}
		if action.GetVerb() == "delete" {
			return c.metadata(action)
		}
	case "validatingwebhookconfigurations", "mutatingwebhookconfigurations":
		return c.webhookAction(action)
	case "clusterroles", "clusterrolebindings", "roles", "rolebindings", "deployments", "statefulsets", "daemonsets", "nodes":
		// Served by the fake's tracker (the typed objects given to
		// Clients); logged and failed here, so tests count them.
		return c.trackerAction(action)
	case "selfsubjectrulesreviews":
		c.logged(action)
		return false, nil, nil
	case "selfsubjectaccessreviews":
		c.logged(action)
		review := action.(clienttesting.CreateAction).GetObject().(*authv1.SelfSubjectAccessReview).DeepCopy()
		a := review.Spec.ResourceAttributes
		review.Status.Allowed = c.Allowed == nil || c.Allowed(ResourceAttributes{Verb: a.Verb, Group: a.Group, Resource: a.Resource, Subresource: a.Subresource, Namespace: a.Namespace})
		return true, review, nil
	}
	return false, nil, nil
}

// logged logs a question (a self-subject review) as "ask RESOURCE", so
// that tests count it apart from the writes.
func (c *Cluster) logged(action clienttesting.Action) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log("ask", action.GetResource(), action.GetSubresource(), action.GetNamespace(), "", false)
}

// trackerAction logs a request the fake's tracker serves, and fails it
// when the cluster says so.
func (c *Cluster) trackerAction(action clienttesting.Action) (bool, runtime.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	name := ""
	if a, ok := action.(interface{ GetName() string }); ok {
		name = a.GetName()
	}
	c.log(action.GetVerb(), action.GetResource(), action.GetSubresource(), action.GetNamespace(), name, false)
	if err := c.fail(action.GetVerb(), action.GetResource(), action.GetNamespace(), name); err != nil {
		return true, nil, err
	}
	return false, nil, nil
}

// webhookAction serves the typed lists of webhook configurations from the
// store, where the dynamic client reads and patches them too.
func (c *Cluster) webhookAction(action clienttesting.Action) (bool, runtime.Object, error) {
	if action.GetVerb() != "list" {
		return false, nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	gvr := action.GetResource()
	c.log("list", gvr, "", "", "", false)
	if err := c.fail("list", gvr, "", ""); err != nil {
		return true, nil, err
	}
	var list runtime.Object = &admissionregv1.ValidatingWebhookConfigurationList{}
	if gvr == MutatingWebhooks {
		list = &admissionregv1.MutatingWebhookConfigurationList{}
	}
	items := []any{}
	for _, o := range c.list(gvr, "") {
		items = append(items, o.Object)
	}
	err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"items": items}, list)
	return true, list, err
}

func (c *Cluster) listPods(action clienttesting.Action) (bool, runtime.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ns := action.GetNamespace()
	c.log("list", Pods, "", ns, "", false)
	if err := c.fail("list", Pods, ns, ""); err != nil {
		return true, nil, err
	}
	list := &v1.PodList{}
	for _, o := range c.list(Pods, ns) {
		pod, err := toPod(o)
		if err != nil {
			return true, nil, err
		}
		list.Items = append(list.Items, pod)
	}
	return true, list, nil
}

func (c *Cluster) namespaceAction(action clienttesting.Action) (bool, runtime.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	name, sub, dry := "", action.GetSubresource(), dryRunOf(action)
	if a, ok := action.(clienttesting.CreateAction); ok {
		if ns, ok := a.GetObject().(*v1.Namespace); ok {
			name = ns.Name
		}
	} else if a, ok := action.(interface{ GetName() string }); ok {
		name = a.GetName()
	}
	c.log(action.GetVerb(), namespacesGVR, sub, "", name, dry)
	if err := c.fail(action.GetVerb(), namespacesGVR, "", name); err != nil {
		return true, nil, err
	}
	if action.GetVerb() == "list" {
		list := &v1.NamespaceList{}
		for _, ns := range c.namespaces {
			list.Items = append(list.Items, *ns.DeepCopy())
		}
		slices.SortFunc(list.Items, func(a, b v1.Namespace) int { return strings.Compare(a.Name, b.Name) })
		return true, list, nil
	}
	ns := c.namespaces[name]
	if ns == nil {
		return true, nil, apierrors.NewNotFound(namespacesGVR.GroupResource(), name)
	}
	next := ns.DeepCopy()
	switch {
	case action.GetVerb() == "get":
		return true, next, nil
	case action.GetVerb() == "delete":
		if next.DeletionTimestamp == nil {
			at := metav1.NewTime(c.Now())
			next.DeletionTimestamp, next.Status.Phase = &at, v1.NamespaceTerminating
		}
	case sub == "finalize":
		next.Spec.Finalizers = action.(clienttesting.CreateAction).GetObject().(*v1.Namespace).Spec.Finalizers
	case action.GetVerb() == "patch":
		patched, err := c.patchNamespace(next, action.(clienttesting.PatchAction).GetPatch())
		if err != nil {
			return true, nil, err
		}
		next = patched
	default:
		return false, nil, nil
	}
	if dry {
		return true, next, nil
	}
	next.ResourceVersion = c.nextRV()
	if next.DeletionTimestamp != nil && len(next.Spec.Finalizers) == 0 && len(next.Finalizers) == 0 {
		delete(c.namespaces, name)
	} else {
		c.namespaces[name] = next
	}
	return true, next, nil
}

func (c *Cluster) patchNamespace(ns *v1.Namespace, patch []byte) (*v1.Namespace, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ns)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion("v1")
	u.SetKind("Namespace")
	out, err := c.patchObject(namespacesGVR, u, patch, true)
	if err != nil {
		return nil, err
	}
	next := &v1.Namespace{}
	err = runtime.DefaultUnstructuredConverter.FromUnstructured(out.Object, next)
	return next, err
}

// metadata serves the metadata client (and pod deletes) from the store.
func (c *Cluster) metadata(action clienttesting.Action) (bool, runtime.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gvr, ns, verb := action.GetResource(), action.GetNamespace(), action.GetVerb()
	name := ""
	if a, ok := action.(interface{ GetName() string }); ok {
		name = a.GetName()
	}
	c.log(verb, gvr, "", ns, name, dryRunOf(action))
	if err := c.fail(verb, gvr, ns, name); err != nil {
		return true, nil, err
	}
	if c.objects[gvr] == nil && !c.served(gvr) {
		return true, nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	switch verb {
	case "list":
		// The metadata fake wants a metav1.List of PartialObjectMetadata.
		list := &metav1.List{}
		for _, o := range c.list(gvr, ns) {
			list.Items = append(list.Items, runtime.RawExtension{Object: toPartial(o)})
		}
		return true, list, nil
	case "delete-collection":
		for _, o := range c.list(gvr, ns) {
			if !dryRunOf(action) {
				c.deleteObject(gvr, o, nil)
			}
		}
		return true, nil, nil
	}
	o := c.objects[gvr][ns+"/"+name]
	if o == nil {
		return true, nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	switch verb {
	case "get":
		return true, toPartial(o), nil
	case "delete":
		opts := action.(clienttesting.DeleteActionImpl).DeleteOptions
		if len(opts.DryRun) == 0 {
			c.deleteObject(gvr, o, opts.GracePeriodSeconds)
		}
		return true, nil, nil
	case "patch":
		out, err := c.patchObject(gvr, o, action.(clienttesting.PatchAction).GetPatch(), dryRunOf(action))
		if err != nil {
			return true, nil, err
		}
		return true, toPartial(out), nil
	}
	return false, nil, nil
}

// dynamic serves full objects from the store.
func (c *Cluster) dynamic(action clienttesting.Action) (bool, runtime.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gvr, ns, verb := action.GetResource(), action.GetNamespace(), action.GetVerb()
	name := ""
	if a, ok := action.(interface{ GetName() string }); ok {
		name = a.GetName()
	}
	c.log("full "+verb, gvr, "", ns, name, false)
	if err := c.fail("full "+verb, gvr, ns, name); err != nil {
		return true, nil, err
	}
	switch verb {
	case "list":
		list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": gvr.GroupVersion().String(), "kind": "List"}}
		for _, o := range c.list(gvr, ns) {
			list.Items = append(list.Items, *o.DeepCopy())
		}
		return true, list, nil
	case "get":
		if o := c.objects[gvr][ns+"/"+name]; o != nil {
			return true, o.DeepCopy(), nil
		}
		return true, nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	case "patch":
		o := c.objects[gvr][ns+"/"+name]
		if o == nil {
			return true, nil, apierrors.NewNotFound(gvr.GroupResource(), name)
		}
		out, err := c.patchObject(gvr, o, action.(clienttesting.PatchAction).GetPatch(), false)
		return true, out, err
	}
	return false, nil, nil
}

// served tells whether discovery lists gvr; callers hold mu.
func (c *Cluster) served(gvr schema.GroupVersionResource) bool {
	for _, rl := range c.Resources {
		if rl.GroupVersion != gvr.GroupVersion().String() {
			continue
		}
		for _, r := range rl.APIResources {
			if r.Name == gvr.Resource {
				return true
			}
		}
	}
	return false
}

// dryRunCollections passes the dry-run option of DeleteCollection, which
// the metadata fake drops from its action, by answering it here.
type dryRunCollections struct {
	metadata.Interface
	c *Cluster
}

// IsWatchListSemanticsUnSupported tells informers over it to list, then
// watch, as the fake it wraps does: a fake sends no initial events.
func (d *dryRunCollections) IsWatchListSemanticsUnSupported() bool { return true }

func (d *dryRunCollections) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	g := d.Interface.Resource(gvr)
	return &dryRunResource{ResourceInterface: g, getter: g, gvr: gvr, c: d.c}
}

// dryRunResource embeds the fake's interface scoped as asked (cluster or
// namespace), so that a method client-go adds to metadata.ResourceInterface
// (DeleteWithResult in v0.38) reaches the fake in the same scope without a
// change here.
type dryRunResource struct {
	metadata.ResourceInterface
	getter metadata.Getter
	gvr    schema.GroupVersionResource
	ns     string
	c      *Cluster
}

func (r *dryRunResource) Namespace(ns string) metadata.ResourceInterface {
	return &dryRunResource{ResourceInterface: r.getter.Namespace(ns), getter: r.getter, gvr: r.gvr, ns: ns, c: r.c}
}

func (r *dryRunResource) target() metadata.ResourceInterface { return r.ResourceInterface }

func (r *dryRunResource) DeleteCollection(ctx context.Context, opts metav1.DeleteOptions, listOpts metav1.ListOptions) error {
	if len(opts.DryRun) == 0 {
		return r.target().DeleteCollection(ctx, opts, listOpts)
	}
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	r.c.log("delete-collection", r.gvr, "", r.ns, "", true)
	return r.c.fail("delete-collection", r.gvr, r.ns, "")
}

func (r *dryRunResource) Get(ctx context.Context, name string, opts metav1.GetOptions, sub ...string) (*metav1.PartialObjectMetadata, error) {
	return r.target().Get(ctx, name, opts, sub...)
}

func (r *dryRunResource) List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	return r.target().List(ctx, opts)
}

func (r *dryRunResource) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return r.target().Watch(ctx, opts)
}

func (r *dryRunResource) Delete(ctx context.Context, name string, opts metav1.DeleteOptions, sub ...string) error {
	return r.target().Delete(ctx, name, opts, sub...)
}

// Patch answers a dry run here: the metadata fake drops patch options too.
func (r *dryRunResource) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*metav1.PartialObjectMetadata, error) {
	if len(opts.DryRun) == 0 {
		return r.target().Patch(ctx, name, pt, data, opts, sub...)
	}
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	r.c.log("patch", r.gvr, "", r.ns, name, true)
	if err := r.c.fail("patch", r.gvr, r.ns, name); err != nil {
		return nil, err
	}
	o := r.c.objects[r.gvr][r.ns+"/"+name]
	if o == nil {
		return nil, apierrors.NewNotFound(r.gvr.GroupResource(), name)
	}
	out, err := r.c.patchObject(r.gvr, o, data, true)
	if err != nil {
		return nil, err
	}
	return toPartial(out), nil
}
