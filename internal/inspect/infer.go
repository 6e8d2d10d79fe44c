package inspect

import (
	"context"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/owners"
)

// Owner inference reads what says who removes a finalizer the catalogue
// does not know (or whose catalogued owner was not found running): RBAC,
// one list per type across the cluster, once per inspector; the workloads
// of the few namespaces whose ServiceAccounts RBAC lets remove it, and
// those named as the field managers that set it, once per namespace or
// name; managedFields come with the sweep. Reading nothing of it unless
// some finalizer needs it, and each thing once, keeps explain over many
// namespaces at the cost of one.

// inference is what inference has read, each thing once per inspector.
type inference struct {
	rbac       memo[struct{}, *rbacRead]
	workloads  memo[string, workloadsRead] // "ns/<namespace>" or "name/<name>"
	namespaces memo[string, string]        // its state when not Active
	objects    memo[string, objectRead]
	// pointed are the objects namespace finalizers point to, read once
	// each (pointed.go).
	pointed memo[string, pointedRead]
	// pointedLists are the names of the types they may point into.
	pointedLists memo[string, pointedList]
	// nodes are stuck pods' nodes (nodes.go), read once each.
	nodes memo[string, nodeRead]
	// everywhere is every workload of the cluster, read once when a
	// setter matched no workload of its identity.
	everywhere memo[struct{}, everywhereRead]
}

// rbacRead is the cluster's RBAC as read.
type rbacRead struct {
	index *owners.Index
	// read: the ClusterRoles and ClusterRoleBindings could be read.
	read      bool
	unchecked []diagnose.Unchecked
}

type workloadsRead struct {
	items     []owners.Workload
	unchecked *diagnose.Unchecked
}

type objectRead struct {
	state     string
	unchecked *diagnose.Unchecked
	// resource is the owner's <resource>.<group>; foreground: it is being
	// deleted in the foreground (it carries foregroundDeletion).
	resource   string
	foreground bool
}

// memo computes each key's value once, callers of the same key waiting for
// the first.
type memo[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]*memoEntry[V]
}

type memoEntry[V any] struct {
	once sync.Once
	v    V
}

func (c *memo[K, V]) get(k K, f func() V) V {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[K]*memoEntry[V]{}
	}
	e := c.m[k]
	if e == nil {
		e = &memoEntry[V]{}
		c.m[k] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.v = f() })
	return e.v
}

// removeVerbs remove a finalizer: an update or a patch of the object.
var removeVerbs = []string{"update", "patch"}

// writeVerbs write an API's objects: who does manages it.
var writeVerbs = []string{"create", "update", "patch"}

// Bounds of what one finalizer's inference reads off the snapshot: the
// holders' names RBAC's resourceNames are matched against, and the field
// managers' entries read.
const (
	inferNames    = 20
	inferManagers = 10
	inferAPITypes = 10
)

// needsInference tells whether a finalizer's owner is inferred: the
// catalogue does not know it, or its owner was not found running.
func needsInference(s diagnose.OwnerState) bool {
	switch s.State {
	case diagnose.OwnerUnknown, diagnose.OwnerNotFound, diagnose.OwnerNotReady, diagnose.OwnerNotChecked:
		return true
	}
	return false
}

// contentOwner infers the owner of a finalizer holding content, from its
// holders: who RBAC lets update or patch them, who set it on them.
func (i *Inspector) contentOwner(ctx context.Context, namespace string, snap *deletion.Snapshot, f string, ev *evidence) owners.Inference {
	var accesses []owners.Access
	var managers []owners.Manager
	for gvr, list := range snap.Listed() {
		var names []string
		for _, item := range list.Items {
			if !slices.Contains(item.Finalizers, f) {
				continue
			}
			if len(names) < inferNames {
				names = append(names, item.Name)
			}
			if len(managers) < inferManagers {
				managers = append(managers, i.fields.ManagersOf(item.ManagedFields, owners.MetadataFinalizers, f, deletion.ResourceName(gvr)+"/"+item.Name)...)
			}
		}
		if len(names) > 0 {
			accesses = append(accesses, owners.Access{Verbs: removeVerbs, Group: gvr.Group, Resource: gvr.Resource, Namespace: namespace, Names: names})
		}
	}
	return i.infer(ctx, namespace, f, accesses, distinctManagers(managers), ev)
}

// namespaceOwners reads the owners of the namespace's own finalizers: the
// catalogue's, else inferred from who may update the namespace (or its
// finalize subresource, for a spec.finalizers token), who set it, and the
// object the namespace names as its owner.
func (i *Inspector) namespaceOwners(ctx context.Context, ns *v1.Namespace, ev *evidence) map[string]diagnose.OwnerState {
	out := map[string]diagnose.OwnerState{}
	type finalizer struct {
		name, field string
		access      owners.Access
	}
	var list []finalizer
	for _, t := range ns.Spec.Finalizers {
		if t != v1.FinalizerKubernetes {
			list = append(list, finalizer{string(t), owners.SpecFinalizers,
				owners.Access{Verbs: []string{"update"}, Resource: "namespaces", Subresource: "finalize", Names: []string{ns.Name}}})
		}
	}
	for _, f := range ns.Finalizers {
		list = append(list, finalizer{f, owners.MetadataFinalizers, owners.Access{Verbs: removeVerbs, Resource: "namespaces", Names: []string{ns.Name}}})
	}
	for _, f := range list {
		state := goesWith(i.owner(ctx, f.name), ns.Name)
		if needsInference(state) {
			managers := i.fields.ManagersOf(ns.ManagedFields, f.field, f.name, "namespace/"+ns.Name)
			in := i.infer(ctx, ns.Name, f.name, []owners.Access{f.access}, managers, ev)
			in.Object = i.ownerObject(ctx, ns, f.name, ev)
			state = i.withInference(f.name, state, in)
			if f.field == owners.MetadataFinalizers && writerRuns(state) {
				state.Inferred.Pointed = i.pointedObject(ctx, ns, f.name, ev)
			}
		}
		out[f.name] = state
	}
	return out
}

// infer asks RBAC who may act as the finalizer's remover, reads the
// workloads of their namespaces and those named as its field managers,
// and decides.
func (i *Inspector) infer(ctx context.Context, namespace, finalizer string, accesses []owners.Access, managers []owners.Manager, ev *evidence) owners.Inference {
	rbac := i.inference.rbac.get(struct{}{}, func() *rbacRead { return i.readRBAC(ctx) })
	for _, u := range rbac.unchecked {
		ev.uncheckedOnce(u)
	}
	req := owners.Request{Finalizer: finalizer, Namespace: namespace, Managers: managers, RBACRead: rbac.read, WorkloadsRead: true,
		Namespaces: map[string]string{}}
	for _, a := range accesses {
		req.Grants = append(req.Grants, rbac.index.Who(a)...)
		if f, ok := finalizersAccess(a); ok {
			req.FinalizerGrants = append(req.FinalizerGrants, rbac.index.Who(f)...)
		}
		if a.Group != "" && !slices.Contains(req.Groups, a.Group) {
			req.Groups = append(req.Groups, a.Group)
		}
	}
	for _, a := range i.apiAccesses(finalizer, namespace) {
		req.APIGrants = append(req.APIGrants, rbac.index.Who(a)...)
	}
	read := func(key string) {
		w := i.workloadsOf(ctx, key)
		req.Workloads = append(req.Workloads, w.items...)
		if w.unchecked != nil {
			req.WorkloadsRead = false
			ev.uncheckedOnce(*w.unchecked)
		}
	}
	for _, n := range owners.Namespaces(req.Grants) {
		read("ns/" + n)
	}
	for _, m := range owners.ManagerNames(managers) {
		read("name/" + m)
	}
	seen := map[string]bool{namespace: true}
	for _, n := range append(owners.Namespaces(req.Grants), workloadNamespaces(req.Workloads)...) {
		if !seen[n] {
			seen[n] = true
			if state := i.inference.namespaces.get(n, func() string { return i.namespaceState(ctx, n) }); state != "" {
				req.Namespaces[n] = state
			}
		}
	}
	in := owners.Infer(req)
	if in.Unmatched {
		// What runs as the identity is not the setter: whether the
		// setter runs anywhere is read from every workload of the
		// cluster.
		all := i.inference.everywhere.get(struct{}{}, func() everywhereRead { return i.readEverywhere(ctx) })
		if all.unchecked != nil {
			ev.uncheckedOnce(*all.unchecked)
		} else if all.complete {
			in.SetterNowhere, in.Seen = owners.SetterNowhere(managers, all.items), len(all.items)
		}
	}
	return in
}

// maxEverywhere bounds the workloads of the cluster read to tell whether a
// setter runs anywhere: pages of rbacPage, each kind.
const maxEverywhere = 5000

// everywhereRead is every workload of the cluster, as read: complete when
// no kind held more than maxEverywhere.
type everywhereRead struct {
	items     []owners.Workload
	complete  bool
	unchecked *diagnose.Unchecked
}

// readEverywhere lists every Deployment, StatefulSet and DaemonSet of the
// cluster, paged, up to maxEverywhere of each kind.
func (i *Inspector) readEverywhere(ctx context.Context) everywhereRead {
	out := everywhereRead{complete: true}
	apps := i.clients.Kube.AppsV1()
	page := func(list func(metav1.ListOptions) (string, []owners.Workload, error)) error {
		n := 0
		return pages(metav1.ListOptions{Limit: rbacPage}, func(o metav1.ListOptions) (string, error) {
			next, ws, err := list(o)
			if err != nil {
				return "", err
			}
			out.items = append(out.items, ws...)
			if n += len(ws); n >= maxEverywhere && next != "" {
				out.complete = false
				return "", nil
			}
			return next, nil
		})
	}
	err := page(func(o metav1.ListOptions) (string, []owners.Workload, error) {
		l, err := apps.Deployments("").List(ctx, o)
		if err != nil {
			return "", nil, err
		}
		var ws []owners.Workload
		for _, d := range l.Items {
			ws = append(ws, workloadOf("Deployment", d.ObjectMeta, d.Spec.Template.Spec, d.Status.ReadyReplicas, replicas(d.Spec.Replicas), d.Spec.Selector))
		}
		return l.Continue, ws, nil
	})
	if err == nil {
		err = page(func(o metav1.ListOptions) (string, []owners.Workload, error) {
			l, err := apps.StatefulSets("").List(ctx, o)
			if err != nil {
				return "", nil, err
			}
			var ws []owners.Workload
			for _, s := range l.Items {
				ws = append(ws, workloadOf("StatefulSet", s.ObjectMeta, s.Spec.Template.Spec, s.Status.ReadyReplicas, replicas(s.Spec.Replicas), s.Spec.Selector))
			}
			return l.Continue, ws, nil
		})
	}
	if err == nil {
		err = page(func(o metav1.ListOptions) (string, []owners.Workload, error) {
			l, err := apps.DaemonSets("").List(ctx, o)
			if err != nil {
				return "", nil, err
			}
			var ws []owners.Workload
			for _, d := range l.Items {
				ws = append(ws, workloadOf("DaemonSet", d.ObjectMeta, d.Spec.Template.Spec, d.Status.NumberReady, d.Status.DesiredNumberScheduled, d.Spec.Selector))
			}
			return l.Continue, ws, nil
		})
	}
	if err != nil {
		return everywhereRead{unchecked: &diagnose.Unchecked{Subject: diagnose.UncheckedWorkloads, Name: "in all namespaces", Error: err.Error()}}
	}
	return out
}

// workloadsOf reads, once per inspector, the workloads of key: "ns/NAME"
// those of a namespace, "name/NAME" those of that name in any.
func (i *Inspector) workloadsOf(ctx context.Context, key string) workloadsRead {
	return i.inference.workloads.get(key, func() workloadsRead {
		kind, name, _ := strings.Cut(key, "/")
		if kind == "ns" {
			return i.readWorkloads(ctx, name, metav1.ListOptions{}, "in namespace "+name)
		}
		byName := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
		r := i.readWorkloads(ctx, "", byName, "named "+name)
		r.items = slices.DeleteFunc(r.items, func(w owners.Workload) bool { return w.Name != name })
		return r
	})
}

// finalizersAccess asks who may update the holders' finalizers
// subresource: what a controller that blocks its objects' deletion with
// owner references is granted beside the resource, and so a mark of the
// resource's owner. Only for a resource itself, not a subresource.
func finalizersAccess(a owners.Access) (owners.Access, bool) {
	if a.Subresource != "" {
		return owners.Access{}, false
	}
	a.Verbs, a.Subresource = []string{"update"}, "finalizers"
	return a, true
}

func workloadNamespaces(ws []owners.Workload) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Namespace)
	}
	return out
}

// apiAccesses ask who writes the finalizer's own API: the types of the
// CRD groups its domain names.
func (i *Inspector) apiAccesses(finalizer, namespace string) []owners.Access {
	i.mu.Lock()
	crds := i.crds
	i.mu.Unlock()
	groups := make([]string, 0, len(crds))
	for _, c := range crds {
		groups = append(groups, c.Group)
	}
	var out []owners.Access
	for _, g := range owners.DomainGroups(finalizer, groups) {
		for _, c := range crds {
			if c.Group == g && len(out) < inferAPITypes {
				out = append(out, owners.Access{Verbs: writeVerbs, Group: g, Resource: c.Plural, Namespace: namespace})
			}
		}
	}
	return out
}

// withInference is a finalizer's owner state with what the cluster says
// (diagnose.WithInference decides); the pods of an inferred owner found
// running are kept for their log.
func (i *Inspector) withInference(finalizer string, s diagnose.OwnerState, in owners.Inference) diagnose.OwnerState {
	s = diagnose.WithInference(s, in)
	if w := in.Workload; s.Source() == diagnose.SourceInferred && s.State == diagnose.OwnerRunningReady && w != nil {
		i.keepOwnerPods(finalizer, w.Namespace, w.Selector)
	}
	return s
}

// distinctManagers keeps each field manager once, its latest write.
func distinctManagers(ms []owners.Manager) []owners.Manager {
	owners.SortManagers(ms)
	var out []owners.Manager
	seen := map[string]bool{}
	for _, m := range ms {
		if !seen[m.Name] {
			seen[m.Name] = true
			out = append(out, m)
		}
	}
	return out
}

// rbacPage is the page of RBAC's lists.
const rbacPage = 500

// readRBAC lists ClusterRoles, ClusterRoleBindings, Roles and RoleBindings
// across the cluster, at once, keeping of each what the walk reads. A list
// that is refused is unchecked: inference then rests on less.
func (i *Inspector) readRBAC(ctx context.Context) *rbacRead {
	var (
		data    owners.RBAC
		errs    [4]error
		wg      sync.WaitGroup
		rb      = i.clients.Kube.RbacV1()
		options = metav1.ListOptions{Limit: rbacPage}
	)
	wg.Go(func() {
		errs[0] = pages(options, func(o metav1.ListOptions) (string, error) {
			l, err := rb.ClusterRoles().List(ctx, o)
			if err != nil {
				return "", err
			}
			for _, r := range l.Items {
				data.ClusterRoles = append(data.ClusterRoles, rbacv1.ClusterRole{ObjectMeta: slim(r.ObjectMeta), Rules: r.Rules, AggregationRule: r.AggregationRule})
			}
			return l.Continue, nil
		})
	})
	wg.Go(func() {
		errs[1] = pages(options, func(o metav1.ListOptions) (string, error) {
			l, err := rb.ClusterRoleBindings().List(ctx, o)
			if err != nil {
				return "", err
			}
			for _, b := range l.Items {
				data.ClusterRoleBindings = append(data.ClusterRoleBindings, rbacv1.ClusterRoleBinding{ObjectMeta: slim(b.ObjectMeta), RoleRef: b.RoleRef, Subjects: b.Subjects})
			}
			return l.Continue, nil
		})
	})
	wg.Go(func() {
		errs[2] = pages(options, func(o metav1.ListOptions) (string, error) {
			l, err := rb.Roles("").List(ctx, o)
			if err != nil {
				return "", err
			}
			for _, r := range l.Items {
				data.Roles = append(data.Roles, rbacv1.Role{ObjectMeta: slim(r.ObjectMeta), Rules: r.Rules})
			}
			return l.Continue, nil
		})
	})
	wg.Go(func() {
		errs[3] = pages(options, func(o metav1.ListOptions) (string, error) {
			l, err := rb.RoleBindings("").List(ctx, o)
			if err != nil {
				return "", err
			}
			for _, b := range l.Items {
				data.RoleBindings = append(data.RoleBindings, rbacv1.RoleBinding{ObjectMeta: slim(b.ObjectMeta), RoleRef: b.RoleRef, Subjects: b.Subjects})
			}
			return l.Continue, nil
		})
	})
	wg.Wait()
	out := &rbacRead{read: errs[0] == nil && errs[1] == nil}
	for k, name := range []string{"clusterroles", "clusterrolebindings", "roles", "rolebindings"} {
		if errs[k] != nil {
			out.unchecked = append(out.unchecked, diagnose.Unchecked{Subject: diagnose.UncheckedRBAC, Name: name, Error: errs[k].Error()})
		}
	}
	out.index = owners.NewIndex(data)
	return out
}

// slim keeps of an RBAC object's metadata what the walk reads: its name,
// namespace, and labels (aggregation selects roles by them).
func slim(m metav1.ObjectMeta) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, Labels: m.Labels}
	// The Helm release that installed it names its product, for the
	// affinity of an owner with a finalizer's domain; no other annotation
	// is kept.
	if r := m.Annotations[owners.AnnotationRelease]; r != "" {
		out.Annotations = map[string]string{owners.AnnotationRelease: r}
	}
	return out
}

// pages calls page with each continue token until the last page.
func pages(opts metav1.ListOptions, page func(metav1.ListOptions) (string, error)) error {
	for {
		next, err := page(opts)
		if err != nil || next == "" {
			return err
		}
		opts.Continue = next
	}
}

// readWorkloads lists Deployments, StatefulSets and DaemonSets (in
// namespace, "" for all, with opts), as owners see them. A refused list is
// unchecked, named by what.
func (i *Inspector) readWorkloads(ctx context.Context, namespace string, opts metav1.ListOptions, what string) workloadsRead {
	out, err := listWorkloads(ctx, i.clients.Kube.AppsV1(), namespace, opts)
	r := workloadsRead{items: out}
	if err != nil {
		r.unchecked = &diagnose.Unchecked{Subject: diagnose.UncheckedWorkloads, Name: what, Error: err.Error()}
	}
	return r
}

// listWorkloads lists the three kinds of workload at once. What could be
// listed is returned with the first error.
func listWorkloads(ctx context.Context, apps appsv1client.AppsV1Interface, namespace string, opts metav1.ListOptions) ([]owners.Workload, error) {
	var (
		mu   sync.Mutex
		out  []owners.Workload
		errs []error
		wg   sync.WaitGroup
	)
	add := func(ws []owners.Workload, err error) {
		mu.Lock()
		defer mu.Unlock()
		out = append(out, ws...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	wg.Go(func() {
		l, err := apps.Deployments(namespace).List(ctx, opts)
		var ws []owners.Workload
		if err == nil {
			for _, d := range l.Items {
				ws = append(ws, workloadOf("Deployment", d.ObjectMeta, d.Spec.Template.Spec, d.Status.ReadyReplicas, replicas(d.Spec.Replicas), d.Spec.Selector))
			}
		}
		add(ws, err)
	})
	wg.Go(func() {
		l, err := apps.StatefulSets(namespace).List(ctx, opts)
		var ws []owners.Workload
		if err == nil {
			for _, s := range l.Items {
				ws = append(ws, workloadOf("StatefulSet", s.ObjectMeta, s.Spec.Template.Spec, s.Status.ReadyReplicas, replicas(s.Spec.Replicas), s.Spec.Selector))
			}
		}
		add(ws, err)
	})
	wg.Go(func() {
		l, err := apps.DaemonSets(namespace).List(ctx, opts)
		var ws []owners.Workload
		if err == nil {
			for _, d := range l.Items {
				ws = append(ws, workloadOf("DaemonSet", d.ObjectMeta, d.Spec.Template.Spec, d.Status.NumberReady, d.Status.DesiredNumberScheduled, d.Spec.Selector))
			}
		}
		add(ws, err)
	})
	wg.Wait()
	slices.SortFunc(out, func(a, b owners.Workload) int {
		return strings.Compare(a.Namespace+"/"+a.Kind+"/"+a.Name, b.Namespace+"/"+b.Kind+"/"+b.Name)
	})
	if len(errs) > 0 {
		return out, errs[0]
	}
	return out, nil
}

func workloadOf(kind string, m metav1.ObjectMeta, pod v1.PodSpec, ready, want int32, sel *metav1.LabelSelector) owners.Workload {
	account := pod.ServiceAccountName
	if account == "" {
		account = pod.DeprecatedServiceAccount
	}
	if account == "" {
		account = "default"
	}
	w := owners.Workload{Kind: kind, Namespace: m.Namespace, Name: m.Name, ServiceAccount: account, Ready: ready, Want: want,
		Deleting: m.DeletionTimestamp != nil, Selector: sel}
	for _, k := range owners.NameLabels {
		if v := m.Labels[k]; v != "" {
			w.Labels = append(w.Labels, v)
		}
	}
	for _, c := range pod.Containers {
		w.Containers = append(w.Containers, c.Name)
		if len(c.Command) > 0 {
			w.Binaries = append(w.Binaries, path.Base(c.Command[0]))
		}
	}
	return w
}

// namespaceState is a namespace's state when it is not Active: being
// deleted, or gone. One that cannot be read is taken as Active.
func (i *Inspector) namespaceState(ctx context.Context, name string) string {
	ns, err := i.clients.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return owners.NamespaceGone
	case err == nil && ns.DeletionTimestamp != nil:
		return owners.NamespaceTerminating
	}
	return ""
}

// ownerObject is the object the namespace names as its owner (an owner
// reference) that put a finalizer there: the one of the finalizer's
// domain, else the only one; with its state.
func (i *Inspector) ownerObject(ctx context.Context, ns *v1.Namespace, finalizer string, ev *evidence) *owners.Object {
	refs := ns.OwnerReferences
	var ref *metav1.OwnerReference
	for k := range refs {
		gv, _ := schema.ParseGroupVersion(refs[k].APIVersion)
		if len(owners.DomainGroups(finalizer, []string{gv.Group})) > 0 {
			ref = &refs[k]
			break
		}
	}
	if ref == nil && len(refs) == 1 {
		ref = &refs[0]
	}
	if ref == nil {
		return nil
	}
	key := ref.APIVersion + "/" + ref.Kind + "/" + ref.Name + "/" + string(ref.UID)
	r := i.inference.objects.get(key, func() objectRead { return i.readOwnerObject(ctx, *ref) })
	if r.unchecked != nil {
		ev.uncheckedOnce(*r.unchecked)
	}
	return &owners.Object{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, State: r.state}
}

// readOwnerObject reads a cluster-scoped owner's metadata: there, being
// deleted, or gone (a new object of that name is not it).
func (i *Inspector) readOwnerObject(ctx context.Context, ref metav1.OwnerReference) objectRead {
	name := ref.Kind + " " + ref.Name
	gvr, ok, err := i.clusterResource(ctx, ref.APIVersion, ref.Kind)
	switch {
	case err != nil:
		return objectRead{state: owners.ObjectUnknown, unchecked: &diagnose.Unchecked{Subject: diagnose.UncheckedOwnerObject, Name: name, Error: err.Error()}}
	case !ok:
		return objectRead{state: owners.ObjectGone}
	}
	m, err := i.clients.Metadata.Resource(gvr).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return objectRead{state: owners.ObjectGone}
	case err != nil:
		return objectRead{state: owners.ObjectUnknown, unchecked: &diagnose.Unchecked{Subject: diagnose.UncheckedOwnerObject, Name: name, Error: err.Error()}}
	case ref.UID != "" && m.UID != ref.UID:
		return objectRead{state: owners.ObjectGone}
	case m.DeletionTimestamp != nil:
		return objectRead{state: owners.ObjectDeleting, resource: deletion.ResourceName(gvr), foreground: slices.Contains(m.Finalizers, metav1.FinalizerDeleteDependents)}
	}
	return objectRead{state: owners.ObjectPresent, resource: deletion.ResourceName(gvr)}
}

// clusterResource finds the cluster-scoped resource of a kind in its
// group-version's discovery (the shared discovery holds namespaced types
// only); a kind the API no longer serves has no objects.
func (i *Inspector) clusterResource(ctx context.Context, apiVersion, kind string) (schema.GroupVersionResource, bool, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionResource{}, false, nil
	}
	rl, err := discovery.ToDiscoveryInterfaceWithContext(i.clients.Discovery).ServerResourcesForGroupVersionWithContext(ctx, gv.String())
	switch {
	case apierrors.IsNotFound(err):
		return schema.GroupVersionResource{}, false, nil
	case err != nil:
		return schema.GroupVersionResource{}, false, err
	}
	for _, r := range rl.APIResources {
		if r.Kind == kind && !r.Namespaced && !strings.Contains(r.Name, "/") {
			return gv.WithResource(r.Name), true, nil
		}
	}
	return schema.GroupVersionResource{}, false, nil
}

// Warm reads ahead what this inspector reads once for all its diagnoses:
// the discovery (with webhooks, CRDs, APIServices and their backends),
// RBAC for owner inference, and whatever else earlier (the inspector it
// replaces, nil for none) had read by then (workloads, namespaces, the
// catalogued owners), so that a long-running reader swapping it in makes
// no diagnosis wait for them.
func (i *Inspector) Warm(ctx context.Context, earlier *Inspector) error {
	if _, err := i.Discover(ctx); err != nil {
		return err
	}
	i.inference.rbac.get(struct{}{}, func() *rbacRead { return i.readRBAC(ctx) })
	if earlier == nil {
		return ctx.Err()
	}
	var g errgroup.Group
	g.SetLimit(evidenceConcurrency)
	for _, key := range earlier.inference.workloads.keys() {
		g.Go(func() error {
			i.workloadsOf(ctx, key)
			return nil
		})
	}
	for _, n := range earlier.inference.namespaces.keys() {
		g.Go(func() error {
			i.inference.namespaces.get(n, func() string { return i.namespaceState(ctx, n) })
			return nil
		})
	}
	earlier.mu.Lock()
	finalizers := slices.Collect(maps.Keys(earlier.owners))
	earlier.mu.Unlock()
	for _, f := range finalizers {
		g.Go(func() error {
			i.owner(ctx, f)
			return nil
		})
	}
	_ = g.Wait()
	return ctx.Err()
}

// keys are the keys computed or being computed.
func (c *memo[K, V]) keys() []K {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Collect(maps.Keys(c.m))
}
