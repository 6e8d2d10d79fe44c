// Package inspect reads from the cluster everything a diagnosis needs,
// sharing one discovery across namespaces. It never writes.
package inspect

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/ns-doctor/ns-doctor/internal/apierror"
	"github.com/ns-doctor/ns-doctor/internal/compat"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/kube"
	"github.com/ns-doctor/ns-doctor/internal/owners"
)

// Inspector gathers observations with one set of clients. It is safe for
// concurrent use: namespaces are observed in parallel, sharing discovery,
// webhooks, CRDs, APIServices and backends. Nothing of it is set after New:
// what a command asks of a diagnosis (Options) comes with each call, so
// runs that share one inspector never write to it.
type Inspector struct {
	mu      sync.Mutex
	clients *kube.Clients
	cfg     Config
	disc    *kube.Discovery
	// discovering is closed when the discovery in flight ends: the others
	// wait for it, or for their context, never for the lock.
	discovering chan struct{}
	apisvcs     []apiregv1.APIService
	// apisvcsRead: APIServices are read once, only when some group failed
	// discovery or some list failed.
	apisvcsRead bool
	webhooks    []diagnose.Webhook
	crds        []diagnose.CRD
	services    map[string]diagnose.ServiceState
	unchecked   []diagnose.Unchecked
	// uncheckedMu guards unchecked while concurrent reads add to it.
	uncheckedMu sync.Mutex
	// owners caches each finalizer's owner state.
	owners map[string]diagnose.OwnerState
	// census, when taken, spares reading types a namespace cannot hold.
	census *Census
	// fields reads who set finalizers, each distinct managedFields once.
	fields owners.Fields
	// sweep is sweepOptions' answer for the discovery sweepOf, sorted
	// order's for sortedOf.
	sweep    *kube.SweepOptions
	sweepOf  *kube.Discovery
	sorted   []schema.GroupVersionResource
	sortedOf *kube.Discovery
	// deletable is what the controller's pass derives from the discovery
	// deletableOf, derived once for the diagnoses sharing it.
	deletable   *deletion.Deletable
	deletableOf *kube.Discovery
	// ownerPods are where running owners have their pods, and
	// ownerLogCache the tails of their logs read so far.
	ownerPods     map[string]ownerPods
	ownerLogCache map[string][]diagnose.OwnerLog
	// inference is what owner inference read (infer.go), each thing once.
	inference inference
	// probed are the types listed across namespaces (probes.go), once
	// each.
	probed memo[schema.GroupVersionResource, error]
}

// Config is how an inspector reads, fixed at New.
type Config struct {
	// Compact sweeps keep only the objects a diagnosis reads one by one
	// (see kube.SweepOptions).
	Compact bool
	// Warnings, when set, gives a namespace's Warning events instead of a
	// list of them, when it has them (kube.MetadataCache's).
	Warnings func(namespace string) ([]v1.Event, bool)
}

// New returns an inspector over clients.
func New(c *kube.Clients, cfg Config) *Inspector { return &Inspector{clients: c, cfg: cfg} }

// Clients are the clients the inspector reads with.
func (i *Inspector) Clients() *kube.Clients { return i.clients }

// Options are what a command asks of each diagnosis, given with each call.
type Options struct {
	// Grace is how long a step may take before it is called stuck.
	Grace time.Duration
	// IfDeleted diagnoses an Active namespace as if it were deleted now.
	IfDeleted bool
	// Protection, with IfDeleted, reads whether protect's policy would
	// refuse the deletion first (one GET): for a person or an agent about
	// to delete; the guard, called for a DELETE that already passed the
	// policies, leaves it off.
	Protection bool
	// Ordering is the deletion order of the cluster's controller.
	Ordering compat.Ordering
}

// Explain is explain's engine in one call: the namespace's content read,
// the evidence of who holds it (when it is being deleted, or IfDeleted),
// and the diagnosis. explain, purge and watch all diagnose through it.
func (i *Inspector) Explain(ctx context.Context, ns *v1.Namespace, opts Options) (diagnose.Report, error) {
	return i.ExplainSince(ctx, ns, nil, opts)
}

// ExplainSince is Explain for a caller that reads the namespace again and
// again (explain --wait, watch): earlier is its last read
// (Report.EarlierRead), so that content still going is told from stuck.
func (i *Inspector) ExplainSince(ctx context.Context, ns *v1.Namespace, earlier *diagnose.EarlierRead, opts Options) (diagnose.Report, error) {
	obs, err := i.Observe(ctx, ns, opts)
	if err != nil {
		return diagnose.Report{}, err
	}
	obs.Earlier = earlier
	if ns.DeletionTimestamp != nil || opts.IfDeleted {
		obs.Evidence = i.Evidence(ctx, ns, obs.Snapshot)
	}
	return diagnose.Diagnose(obs), nil
}

// Namespace gets one namespace; a NotFound error is returned as is.
func (i *Inspector) Namespace(ctx context.Context, name string) (*v1.Namespace, error) {
	return i.clients.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
}

// Terminating lists the namespaces being deleted, oldest deletion first,
// among those selector (a label selector, empty for all) selects.
func (i *Inspector) Terminating(ctx context.Context, selector string) ([]v1.Namespace, error) {
	all, err := i.Selected(ctx, selector)
	if err != nil {
		return nil, err
	}
	var out []v1.Namespace
	for _, ns := range all {
		if ns.DeletionTimestamp != nil {
			out = append(out, ns)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].DeletionTimestamp.Before(out[b].DeletionTimestamp) })
	return out, nil
}

// Selected lists the namespaces selector (a label selector, empty for
// all) selects, in the API's order.
func (i *Inspector) Selected(ctx context.Context, selector string) ([]v1.Namespace, error) {
	list, err := i.clients.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	for k := range list.Items {
		if !hasOwnFinalizers(&list.Items[k]) {
			// Only who set a namespace's own finalizers is read of its
			// managed fields; ten thousand namespaces' would weigh.
			list.Items[k].ManagedFields = nil
		}
	}
	return list.Items, nil
}

// Discovery is the discovery shared by this inspector's observations (nil
// before the first Observe).
func (i *Inspector) Discovery() *kube.Discovery {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.disc
}

// Discover runs the shared discovery (and the reads that go with it) once.
// Callers that find one in flight wait for it or for their own context;
// after a failed one, the next caller tries again.
func (i *Inspector) Discover(ctx context.Context) (*kube.Discovery, error) {
	for {
		i.mu.Lock()
		if d := i.disc; d != nil {
			i.mu.Unlock()
			return d, nil
		}
		if inFlight := i.discovering; inFlight != nil {
			i.mu.Unlock()
			select {
			case <-inFlight:
				continue
			case <-ctx.Done():
				return nil, fmt.Errorf("waiting for the API's discovery: %w", context.Cause(ctx))
			}
		}
		done := make(chan struct{})
		i.discovering = done
		i.mu.Unlock()
		err := i.discover(ctx)
		i.mu.Lock()
		i.discovering = nil
		i.mu.Unlock()
		close(done)
		if err != nil {
			return nil, err
		}
	}
}

// Observe reads one namespace's content, discovering the API once per
// inspector.
func (i *Inspector) Observe(ctx context.Context, ns *v1.Namespace, opts Options) (diagnose.Observation, error) {
	disc, err := i.Discover(ctx)
	if err != nil {
		return diagnose.Observation{}, err
	}
	census := i.Census()
	kept := census.content(ns)
	var gvrs []schema.GroupVersionResource
	for gvr, r := range disc.DeletableResources() {
		if hasVerb(r.Verbs, "list") && !kept.Has(gvr) && !census.Skips(ns.Name, gvr) {
			gvrs = append(gvrs, gvr)
		}
	}
	i.mu.Lock()
	sweep := i.sweepOptions()
	i.mu.Unlock()
	sweep.KeepOlderThan = ns.CreationTimestamp.Time
	lists := kept
	if len(gvrs) > 0 || kept == nil {
		lists = kube.Sweep(ctx, i.clients, ns.Name, gvrs, sweep).With(kept)
	}
	snap := snapshotOf(lists)
	i.mu.Lock()
	snap.Order = i.order()
	i.mu.Unlock()
	snap.Seal()
	if err := ctx.Err(); err != nil {
		return diagnose.Observation{}, err
	}
	return i.ObservationOf(ctx, ns, snap, nil, opts), nil
}

// ObservationOf is what the inspector read once (webhooks, CRDs,
// APIServices, backends) with snap as the namespace's content and disc as
// the API's discovery: no sweep of its own. A nil disc is the inspector's
// own; a purge passes the one its last pass made, which may have seen an
// API fail since.
func (i *Inspector) ObservationOf(ctx context.Context, ns *v1.Namespace, snap *deletion.Snapshot, disc *kube.Discovery, opts Options) diagnose.Observation {
	i.mu.Lock()
	defer i.mu.Unlock()
	obs := diagnose.Observation{Namespace: ns, Snapshot: snap, Now: time.Now(),
		Grace: opts.Grace, IfDeleted: opts.IfDeleted, Ordering: opts.Ordering}
	if disc == nil {
		disc = i.disc
	}
	if disc == nil {
		return obs
	}
	if len(snap.ListErrs) > 0 || len(disc.Failed) > 0 {
		// A list that failed may be an aggregated API whose backend broke
		// after discovery: its APIService and Service tell.
		if !i.apisvcsRead {
			i.listAPIServices(ctx)
		}
		i.readBackends(ctx, snap, disc)
	}
	obs.Resources, obs.DiscoveryErr, obs.FailedGroups = disc.Resources, disc.Err, disc.Failed
	if i.deletableOf != disc {
		i.deletable, i.deletableOf = deletion.DeletableOf(disc.Resources), disc
	}
	obs.Deletable = i.deletable
	obs.APIServices, obs.Webhooks, obs.CRDs, obs.Services = i.apisvcs, i.webhooks, i.crds, maps.Clone(i.services)
	i.uncheckedMu.Lock()
	obs.Unchecked = slices.Clone(i.unchecked)
	i.uncheckedMu.Unlock()
	obs.RescueHold = i.rescueHold(ctx, ns)
	obs.Probes = i.probes(ctx, ns, snap, disc)
	for _, p := range obs.Probes {
		if p.Err != nil && apierror.Classify(p.Err).Kind == apierror.Forbidden {
			obs.Unchecked = append(obs.Unchecked, diagnose.Unchecked{Subject: diagnose.UncheckedResource,
				Name: deletion.ResourceName(p.Resource) + " across namespaces", Error: p.Err.Error()})
		}
	}
	if opts.IfDeleted && opts.Protection && ns.DeletionTimestamp == nil {
		obs.Protection = i.protection(ctx, ns)
	}
	return obs
}

// Diagnose is the diagnosis of ns with snap as its content and disc as
// the API's discovery (what a purge run last saw), with the evidence of
// who holds it: no second sweep.
func (i *Inspector) Diagnose(ctx context.Context, ns *v1.Namespace, snap *deletion.Snapshot, disc *kube.Discovery, opts Options) diagnose.Report {
	obs := i.ObservationOf(ctx, ns, snap, disc, opts)
	obs.Evidence = i.Evidence(ctx, ns, snap)
	return diagnose.Diagnose(obs)
}

// discover reads discovery, webhooks and CRDs without the lock (it is the
// only discovery in flight), then keeps them and reads what they point at.
func (i *Inspector) discover(ctx context.Context) error {
	// Discovery and the cluster-wide lists go at once: over a slow link
	// each round trip counts.
	var (
		d        *kube.Discovery
		err      error
		webhooks []diagnose.Webhook
		crds     []diagnose.CRD
		wg       sync.WaitGroup
	)
	wg.Go(func() { d, err = kube.Discover(ctx, i.clients.Discovery) })
	wg.Go(func() { webhooks = i.listWebhooks(ctx) })
	wg.Go(func() { crds = i.listCRDs(ctx) })
	wg.Wait()
	if err != nil {
		return err
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.disc, i.webhooks, i.crds = d, webhooks, crds
	if len(d.Failed) > 0 {
		i.listAPIServices(ctx)
	}
	i.services = map[string]diagnose.ServiceState{}
	i.readBackends(ctx, nil, d)
	i.readInstallers(ctx)
	return nil
}

// listAPIServices is best effort: without permission to read APIServices
// the report still names the failing group-versions.
func (i *Inspector) listAPIServices(ctx context.Context) {
	i.apisvcsRead = true
	list, err := i.clients.Aggregator.ApiregistrationV1().APIServices().List(ctx, metav1.ListOptions{})
	if err != nil {
		i.uncheck(diagnose.UncheckedAPIServices, "", err)
		return
	}
	i.apisvcs = list.Items
}

// readBackends reads every Service that an APIService failing disc or a
// list in snap, a fail-closed webhook or a CRD conversion webhook points
// at, once per inspector.
func (i *Inspector) readBackends(ctx context.Context, snap *deletion.Snapshot, disc *kube.Discovery) {
	refs := map[string]diagnose.ServiceRef{}
	for _, svc := range i.apisvcs {
		if s := svc.Spec.Service; s != nil && failing(schema.GroupVersion{Group: svc.Spec.Group, Version: svc.Spec.Version}, snap, disc) {
			refs[s.Namespace+"/"+s.Name] = diagnose.ServiceRef{Namespace: s.Namespace, Name: s.Name}
		}
	}
	for _, wh := range i.webhooks {
		if wh.Service != nil && wh.FailurePolicy == "Fail" {
			refs[wh.Service.Key()] = *wh.Service
		}
	}
	for _, crd := range i.crds {
		if crd.ConversionService != nil {
			refs[crd.ConversionService.Key()] = *crd.ConversionService
		}
	}
	for key, ref := range refs {
		if _, known := i.services[key]; !known {
			i.services[key] = i.serviceState(ctx, ref)
		}
	}
}

// sweepOptions compacts unless some webhook selects objects by label: its
// matching then needs every object's labels.
// Either way, a held object keeps of its managedFields who set its
// finalizers (owner inference), and nothing more. Made once per
// discovery: every namespace's sweep shares it (callers hold mu).
func (i *Inspector) sweepOptions() kube.SweepOptions {
	if i.sweep == nil || i.sweepOf != i.disc {
		o := i.makeSweepOptions()
		i.sweep, i.sweepOf = &o, i.disc
	}
	return *i.sweep
}

// order is the discovery's deletable resources in SortedGVRs' order,
// made once per discovery (callers hold mu).
func (i *Inspector) order() []schema.GroupVersionResource {
	if i.sorted == nil || i.sortedOf != i.disc {
		i.sorted = deletion.SortedByName(slices.Collect(maps.Keys(i.disc.DeletableResources())))
		i.sortedOf = i.disc
	}
	return i.sorted
}

func (i *Inspector) makeSweepOptions() kube.SweepOptions {
	plain := kube.SweepOptions{FinalizerFields: i.fields.KeepFinalizerEntries, FinalizerFieldsPer: inferManagers}
	if !i.cfg.Compact {
		return plain
	}
	for _, wh := range i.webhooks {
		if wh.ObjectSelector != nil && (len(wh.ObjectSelector.MatchLabels) > 0 || len(wh.ObjectSelector.MatchExpressions) > 0) {
			return plain
		}
	}
	// Pods are kept whole for their grace periods, and types without
	// deletecollection for the deletes of their items a plan lists.
	whole := map[schema.GroupVersionResource]bool{deletion.PodsGVR: true}
	for gvr, r := range i.disc.DeletableResources() {
		if !hasVerb(r.Verbs, "deletecollection") {
			whole[gvr] = true
		}
	}
	return kube.SweepOptions{Compact: true, KeepPlain: diagnose.MaxExamples, Whole: whole, FinalizerFields: i.fields.KeepFinalizerEntries, FinalizerFieldsPer: inferManagers}
}

// snapshotOf turns what a sweep read into what a pass plans over.
func snapshotOf(l *kube.Lists) *deletion.Snapshot {
	snap := &deletion.Snapshot{Lists: l.Items, ListErrs: l.Errs, Omitted: l.Omitted}
	if pods := l.Items[deletion.PodsGVR]; pods != nil {
		snap.Pods, snap.PodSpecsUnknown = podsFromMetadata(pods.Items), true
	}
	return snap
}

// defaultGracePeriod is the API's default terminationGracePeriodSeconds.
const defaultGracePeriod = int64(30)

// podsFromMetadata rebuilds what the controller's estimate reads from pods
// without reading their spec: a terminating pod's deletionGracePeriodSeconds
// is the grace it was given (the spec's, unless the deleter chose another),
// and a pod not yet deleted is assumed to have the default 30 s. Phase and
// node are unknown, so a plan assumes such pods terminate gracefully.
func podsFromMetadata(items []metav1.PartialObjectMetadata) []v1.Pod {
	out := make([]v1.Pod, 0, len(items))
	for _, m := range items {
		grace := defaultGracePeriod
		if m.DeletionGracePeriodSeconds != nil {
			grace = *m.DeletionGracePeriodSeconds
		}
		out = append(out, v1.Pod{ObjectMeta: m.ObjectMeta, Spec: v1.PodSpec{TerminationGracePeriodSeconds: &grace}})
	}
	return out
}

// failing tells whether gv failed disc or a list in snap.
func failing(gv schema.GroupVersion, snap *deletion.Snapshot, disc *kube.Discovery) bool {
	if _, ok := disc.Failed[gv]; ok {
		return true
	}
	if snap != nil {
		for gvr := range snap.ListErrs {
			if gvr.GroupVersion() == gv {
				return true
			}
		}
	}
	return false
}

func hasVerb(verbs []string, verb string) bool {
	for _, v := range verbs {
		if v == verb {
			return true
		}
	}
	return false
}
