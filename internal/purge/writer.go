package purge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// A run sends every write through a writer, as kubectl's delete sends
// through one path whatever its dry-run strategy: for real (saving first),
// as dry runs the server answers, or played over a snapshot (a plan). The
// escalations are written once, above this seam; the mode is looked at
// only here, where a request is sent.

// Write is one write of an escalation: the request, what to save before
// it, what it does to a plan, and the change it makes.
type Write struct {
	// Verb is delete, patch or create.
	Verb      string
	Resource  schema.GroupVersionResource
	Namespace string
	Name      string
	// Patch is a merge patch (guardedPatch); Object what is created.
	Patch  []byte
	Object runtime.Object
	// GracePeriod and UID: a DELETE's grace period and precondition.
	GracePeriod *int64
	UID         types.UID
	// Op is the admission operation (DELETE, UPDATE) a plan predicts
	// fail-closed webhooks' refusals for.
	Op string
	// Save is the object as it is, saved before the write.
	Save *unstructured.Unstructured
	// Play is what the write does to a plan once accepted.
	Play func(*planState)
	// Change is recorded once the write is made for real.
	Change *Change
	// Reshapes: the write changes what the API serves, so the next pass
	// discovers afresh (a plan's Play changes its discovery).
	Reshapes bool
}

// Sent is how a write went: for real, or played in a plan (a server dry
// run: sent as a dry run, then played). A real write that failed is still
// for real.
type Sent struct {
	ForReal bool
	// Saved is where a cluster-scoped object was saved first.
	Saved string
}

// planState is what a plan plays its writes over: the snapshot's content,
// the namespace, and the API's discovery.
type planState struct {
	ops  *deletion.PlanOps
	ns   *deletion.PlanNamespaces
	disc *kube.Discovery
}

// writer is the seam: the requests a run sends to the API server (a plan
// plays them over its snapshot instead), and nothing else. What a pass's
// requests reached is its tally (tally.go); whether the run acts for real,
// and where it saves, are preflight's result (prepared), never asked of the
// writer.
type writer interface {
	channel
	// operations, pods and namespaces are the deleter's (upstream's
	// metadata client, pod lister and namespace client).
	operations() deletion.Operations
	pods() deletion.PodLister
	namespaces() deletion.NamespaceClient
	// discovery is the API's discovery for a pass: for real, the one read
	// before the first pass, then afresh for every later one and after a
	// write that reshaped the API; a plan's own, as its writes played it.
	discovery(pass int) (*kube.Discovery, error)
}

// channel is the part of the writer an escalation reaches, through its
// actor: reads of what it decides from, and its writes.
type channel interface {
	// read reads an object an escalation is about to change; list and
	// listPods what it may change.
	read(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error)
	list(ctx context.Context, gvr schema.GroupVersionResource, namespace string) (*metav1.PartialObjectMetadataList, error)
	listPods(ctx context.Context, namespace string) ([]v1.Pod, error)
	// saved tells whether the run's backup holds the object in full.
	saved(gvr schema.GroupVersionResource, name string) bool
	// send sends a write.
	send(ctx context.Context, w Write) (Sent, error)
}

// clusterReader is the channel of the escalations' reads before the run
// has a writer (resolve): straight from the cluster, and no writes.
type clusterReader struct{ clients *kube.Clients }

func (c clusterReader) read(ctx context.Context, gvr schemaGVR, namespace, name string) (*unstructured.Unstructured, error) {
	return c.clients.Dynamic.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (c clusterReader) list(ctx context.Context, gvr schemaGVR, namespace string) (*metav1.PartialObjectMetadataList, error) {
	return kube.ListMetadata(ctx, c.clients.SweepMetadata(), gvr, namespace)
}

func (c clusterReader) listPods(ctx context.Context, namespace string) ([]v1.Pod, error) {
	return kube.PodLister{Client: c.clients.Kube}.ListPods(ctx, namespace)
}

func (clusterReader) saved(schemaGVR, string) bool { return false }

func (c clusterReader) send(context.Context, Write) (Sent, error) {
	return Sent{}, errors.New("no write before preflight ends")
}

// guardedPatch is the merge patch from before to after, carrying before's
// resourceVersion: if anyone changed the object since it was read, the
// API server answers Conflict instead of clobbering their change.
func guardedPatch(before, after *unstructured.Unstructured) ([]byte, error) {
	from, err := json.Marshal(before.Object)
	if err != nil {
		return nil, err
	}
	to, err := json.Marshal(after.Object)
	if err != nil {
		return nil, err
	}
	patch, err := jsonpatch.CreateMergePatch(from, to)
	if err != nil {
		return nil, fmt.Errorf("computing the patch of %s: %w", before.GetName(), err)
	}
	var m map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		return nil, err
	}
	meta, _ := m["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		m["metadata"] = meta
	}
	meta["resourceVersion"] = before.GetResourceVersion()
	return json.Marshal(m)
}

// toUnstructured turns a typed object into what writes patch and save.
func toUnstructured(obj runtime.Object, apiVersion, kind string) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	return u, nil
}

// sender sends writes to the API server, with the client each resource's
// requests go through; dryRun sends them with dryRun=All.
type sender struct {
	clients *kube.Clients
	dryRun  bool
}

var namespacesGVR = v1.SchemeGroupVersion.WithResource("namespaces")

func (s sender) send(ctx context.Context, w Write) error {
	ctx = kube.Writing(ctx)
	var dry []string
	if s.dryRun {
		dry = []string{metav1.DryRunAll}
	}
	switch {
	case w.Resource == namespacesGVR && w.Verb == "create":
		_, err := s.clients.Kube.CoreV1().Namespaces().Create(ctx, w.Object.(*v1.Namespace), metav1.CreateOptions{DryRun: dry})
		return err
	case w.Resource == namespacesGVR && w.Verb == "delete":
		return s.clients.Kube.CoreV1().Namespaces().Delete(ctx, w.Name, metav1.DeleteOptions{DryRun: dry})
	case w.Resource == namespacesGVR:
		_, err := s.clients.Kube.CoreV1().Namespaces().Patch(ctx, w.Name, types.MergePatchType, w.Patch, metav1.PatchOptions{DryRun: dry})
		return err
	case w.Resource == deletion.PodsGVR && w.Verb == "delete":
		opts := metav1.DeleteOptions{GracePeriodSeconds: w.GracePeriod, DryRun: dry}
		if w.UID != "" {
			opts.Preconditions = &metav1.Preconditions{UID: &w.UID}
		}
		return s.clients.Kube.CoreV1().Pods(w.Namespace).Delete(ctx, w.Name, opts)
	case w.Namespace == "" && w.Verb == "delete":
		// Cluster-scoped configuration (webhooks, APIServices), read and
		// written in full.
		opts := metav1.DeleteOptions{DryRun: dry}
		if w.UID != "" {
			opts.Preconditions = &metav1.Preconditions{UID: &w.UID}
		}
		return s.clients.Dynamic.Resource(w.Resource).Delete(ctx, w.Name, opts)
	case w.Namespace == "":
		_, err := s.clients.Dynamic.Resource(w.Resource).Patch(ctx, w.Name, types.MergePatchType, w.Patch, metav1.PatchOptions{DryRun: dry})
		return err
	case w.Verb == "delete":
		return s.clients.SweepMetadata().Resource(w.Resource).Namespace(w.Namespace).Delete(ctx, w.Name, metav1.DeleteOptions{GracePeriodSeconds: w.GracePeriod, DryRun: dry})
	}
	_, err := s.clients.SweepMetadata().Resource(w.Resource).Namespace(w.Namespace).Patch(ctx, w.Name, types.MergePatchType, w.Patch, metav1.PatchOptions{DryRun: dry})
	return err
}

// realWriter acts: every object is saved before a request may change or
// delete it.
type realWriter struct {
	clients *kube.Clients
	bk      *backup.Writer
	content *backupOps
	// former is a namespace that no longer exists (--orphans): its passes
	// run over it until purge re-creates it to strip finalizers.
	former *deletion.PlanNamespaces
	// disc is the discovery read before the first pass; stale once a write
	// reshaped the API; rediscover reads it afresh.
	disc       *kube.Discovery
	stale      bool
	rediscover func() (*kube.Discovery, error)
}

func newRealWriter(clients *kube.Clients, bk *backup.Writer, rc *recreations, former *deletion.PlanNamespaces) *realWriter {
	return &realWriter{clients: clients, bk: bk, former: former,
		content: &backupOps{inner: kube.NewMetadataOps(clients, false), bk: bk, dyn: clients, counts: newCounts(), rc: rc}}
}

func (w *realWriter) discovery(pass int) (*kube.Discovery, error) {
	if pass > 1 || w.stale {
		disc, err := w.rediscover()
		if err != nil {
			return nil, err
		}
		w.disc, w.stale = disc, false
	}
	return w.disc, nil
}

func (w *realWriter) operations() deletion.Operations { return w.content }
func (w *realWriter) pods() deletion.PodLister        { return w.content }

func (w *realWriter) namespaces() deletion.NamespaceClient {
	api := w.clients.Kube.CoreV1().Namespaces()
	if w.former == nil {
		return api
	}
	return &formerNamespaces{api: api, former: w.former}
}

func (w *realWriter) read(ctx context.Context, gvr schemaGVR, namespace, name string) (*unstructured.Unstructured, error) {
	return w.clients.SweepDynamic().Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (w *realWriter) list(ctx context.Context, gvr schemaGVR, namespace string) (*metav1.PartialObjectMetadataList, error) {
	return kube.ListMetadata(ctx, w.clients.SweepMetadata(), gvr, namespace)
}

func (w *realWriter) saved(gvr schemaGVR, name string) bool { return w.bk.Holds(gvr, name) }

func (w *realWriter) listPods(ctx context.Context, namespace string) ([]v1.Pod, error) {
	list, err := w.clients.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// send saves the object first (cluster-scoped ones apart, and their path
// is returned), then sends the request; nothing is changed that could not
// be saved.
func (w *realWriter) send(ctx context.Context, wr Write) (Sent, error) {
	sent := Sent{ForReal: true}
	if wr.Save != nil {
		var err error
		if wr.Namespace == "" {
			sent.Saved, err = w.bk.SaveCluster(wr.Resource, wr.Save)
		} else {
			err = w.bk.Save(wr.Resource, wr.Save)
		}
		if err != nil {
			return sent, fmt.Errorf("saving %s/%s first: %w", deletion.ResourceName(wr.Resource), wr.Name, err)
		}
	}
	if err := (sender{clients: w.clients}).send(ctx, wr); err != nil {
		return sent, err
	}
	w.stale = w.stale || wr.Reshapes
	return sent, nil
}

// formerNamespaces is the view of a namespace that no longer exists: the
// in-memory one, until purge re-creates it (then the API server's).
type formerNamespaces struct {
	api    deletion.NamespaceClient
	former *deletion.PlanNamespaces
}

func (f *formerNamespaces) Get(ctx context.Context, name string, opts metav1.GetOptions) (*v1.Namespace, error) {
	ns, err := f.api.Get(ctx, name, opts)
	if apierrors.IsNotFound(err) {
		return f.former.Get(ctx, name, opts)
	}
	return ns, err
}

func (f *formerNamespaces) Finalize(ctx context.Context, ns *v1.Namespace, opts metav1.UpdateOptions) (*v1.Namespace, error) {
	if ns.UID != "" { // re-created: a real namespace
		return f.api.Finalize(ctx, ns, opts)
	}
	return f.former.Finalize(ctx, ns, opts)
}

// planWriter plays every write over a snapshot. A client plan predicts the
// answers (fail-closed webhooks whose backend is down); a server dry run
// (server set) sends each write with dryRun=All first, so webhooks and RBAC
// answer, and plays what they accept.
type planWriter struct {
	planState
	// rejections are a client plan's predicted answers.
	rejections diagnose.Rejections
	// server sends the dry runs; nil for a client plan.
	server *kube.Clients
	// exists is false for a namespace that no longer exists: the API
	// server has nothing to answer a write in it with.
	exists bool
	// spared answers a server dry run's refusal as the run would meet it
	// with its escalations at work: nil for one they spare it (a webhook
	// it bypasses: a dry run cannot bypass it first).
	spared  func(err error, what string) error
	clients *kube.Clients
}

func (w *planWriter) pods() deletion.PodLister { return w.ops }

func (w *planWriter) operations() deletion.Operations {
	if w.server == nil {
		return w.ops
	}
	return &deletion.ServerDryRunOps{Server: &sparingOps{Operations: kube.NewMetadataOps(w.server, true), spared: w.spared}, Plan: w.ops}
}

func (w *planWriter) discovery(int) (*kube.Discovery, error) { return w.disc, nil }

func (w *planWriter) namespaces() deletion.NamespaceClient {
	if w.server == nil || !w.exists {
		return w.ns
	}
	return &deletion.ServerDryRunNamespaces{Server: &sparingNamespaces{NamespaceClient: w.server.Kube.CoreV1().Namespaces(), spared: w.spared}, Plan: w.ns}
}

// read reads namespaced content as the plan holds it (metadata), and
// configuration from the API server.
func (w *planWriter) read(ctx context.Context, gvr schemaGVR, namespace, name string) (*unstructured.Unstructured, error) {
	if namespace == "" {
		return w.clients.Dynamic.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
	}
	item, err := w.ops.Get(gvr, name)
	if err != nil {
		return nil, err
	}
	return toUnstructured(item, gvr.GroupVersion().String(), "")
}

func (w *planWriter) list(ctx context.Context, gvr schemaGVR, namespace string) (*metav1.PartialObjectMetadataList, error) {
	return w.ops.List(ctx, gvr, namespace)
}

// saved: a plan saves nothing.
func (*planWriter) saved(schemaGVR, string) bool { return false }

func (w *planWriter) listPods(ctx context.Context, namespace string) ([]v1.Pod, error) {
	return w.ops.ListPods(ctx, namespace)
}

// send predicts the answer (client) or asks the server (server), and plays
// the write when it is accepted.
func (w *planWriter) send(ctx context.Context, wr Write) (Sent, error) {
	var err error
	switch {
	case w.server == nil:
		err = w.predicted(wr)
	case wr.Namespace != "" && !w.exists:
		// No namespace to send to yet: purge --force re-creates it first.
		err = w.predicted(wr)
	default:
		err = w.spared(sender{clients: w.server, dryRun: true}.send(ctx, wr), wr.Verb+" "+deletion.ResourceName(wr.Resource)+"/"+wr.Name)
	}
	if err == nil && wr.Play != nil {
		wr.Play(&w.planState)
	}
	return Sent{}, err
}

func (w *planWriter) predicted(wr Write) error {
	switch wr.Op {
	case "DELETE":
		return w.rejections.Delete[wr.Resource]
	case "UPDATE":
		return w.rejections.Update[wr.Resource]
	}
	return nil
}

// sparingOps passes a server dry run's content requests, answering the
// refusals the run's escalations spare it as the run would meet them.
type sparingOps struct {
	deletion.Operations
	spared func(err error, what string) error
}

func (f *sparingOps) DeleteCollection(ctx context.Context, gvr schema.GroupVersionResource, ns string) error {
	return f.spared(f.Operations.DeleteCollection(ctx, gvr, ns), "deletecollection "+deletion.ResourceName(gvr))
}

func (f *sparingOps) Delete(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) error {
	return f.spared(f.Operations.Delete(ctx, gvr, ns, name), "delete "+deletion.ResourceName(gvr)+"/"+name)
}

// sparingNamespaces does the same for the finalize call.
type sparingNamespaces struct {
	deletion.NamespaceClient
	spared func(err error, what string) error
}

func (f *sparingNamespaces) Finalize(ctx context.Context, ns *v1.Namespace, opts metav1.UpdateOptions) (*v1.Namespace, error) {
	out, err := f.NamespaceClient.Finalize(ctx, ns, opts)
	if err = f.spared(err, "finalize"); err == nil && out == nil {
		out = ns
	}
	return out, err
}
