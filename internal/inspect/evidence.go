package inspect

import (
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/finalizers"
	"github.com/ns-doctor/ns-doctor/internal/owners"
)

// holdersPerType bounds the objects per type whose status is read: the
// examples a report names.
const holdersPerType = diagnose.MaxExamples

// maxHolderReads bounds the status reads of one explain, so that they do
// not grow with the namespace: 150 held types would otherwise cost 450
// GETs, more than the whole sweep. One object per type comes first, so
// the first types do not take the whole budget.
const maxHolderReads = 6

// maxEvents bounds the Warning events a report shows.
const maxEvents = 5

// Evidence reads what says who holds a namespace and why: for each
// finalizer holding content, whether its owner appears to run; the status
// conditions of the objects holding it (status only: never spec or data,
// and never a Secret or ConfigMap); the namespace's Warning events. Each
// read is best effort: what could not be read is listed as unchecked.
func (i *Inspector) Evidence(ctx context.Context, ns *v1.Namespace, snap *deletion.Snapshot) diagnose.Evidence {
	// Every read goes at once (bounded): over a slow link, a namespace
	// whose 150 types each hold a few finalized objects would otherwise
	// cost hundreds of round trips.
	ev := &evidence{Evidence: diagnose.Evidence{Owners: map[string]diagnose.OwnerState{}}}
	var g errgroup.Group
	g.SetLimit(evidenceConcurrency)
	for _, f := range holdingFinalizers(snap) {
		g.Go(func() error {
			state := goesWith(i.owner(ctx, f), ns.Name)
			if needsInference(state) {
				state = i.withInference(f, state, i.contentOwner(ctx, ns.Name, snap, f, ev))
			}
			ev.mu.Lock()
			ev.Owners[f] = state
			ev.mu.Unlock()
			return nil
		})
	}
	if hasOwnFinalizers(ns) {
		g.Go(func() error {
			owners := i.namespaceOwners(ctx, ns, ev)
			ev.mu.Lock()
			ev.NamespaceOwners = owners
			ev.mu.Unlock()
			return nil
		})
	}
	targets := holderTargets(snap)
	found := make([]*diagnose.Holder, len(targets))
	for k, t := range targets {
		g.Go(func() error {
			found[k] = i.holder(ctx, ns.Name, t, ev)
			return nil
		})
	}
	g.Go(func() error {
		ev.Events = i.events(ctx, ns, ev)
		return nil
	})
	g.Go(func() error {
		owners := i.foregroundOwners(ctx, snap, ev)
		ev.mu.Lock()
		ev.ForegroundOwners = owners
		ev.mu.Unlock()
		return nil
	})
	g.Go(func() error {
		nodes := i.podNodes(ctx, ns.Name, snap, ev)
		ev.mu.Lock()
		ev.PodNodes = nodes
		ev.mu.Unlock()
		return nil
	})
	_ = g.Wait() // the reads report their own failures, as unchecked
	ev.OwnerLogs = i.ownerLogs(ctx, ns.Name, ev)
	for _, h := range found {
		if h != nil {
			ev.Holders = append(ev.Holders, *h)
		}
	}
	return ev.Evidence
}

// evidenceConcurrency bounds the evidence's requests in flight, as the
// sweep bounds its lists.
const evidenceConcurrency = 48

// evidence is the Evidence being gathered by concurrent reads.
type evidence struct {
	diagnose.Evidence
	mu sync.Mutex
}

func (ev *evidence) unchecked(what diagnose.UncheckedSubject, name string, err error) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ev.Unchecked = append(ev.Unchecked, diagnose.Unchecked{Subject: what, Name: name, Error: err.Error()})
}

// uncheckedOnce records u unless the same read failed already (the
// inference of several finalizers shares its reads).
func (ev *evidence) uncheckedOnce(u diagnose.Unchecked) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if !slices.Contains(ev.Unchecked, u) {
		ev.Unchecked = append(ev.Unchecked, u)
	}
}

// hasOwnFinalizers: the namespace holds itself (a spec.finalizers token
// other than kubernetes, or metadata.finalizers).
func hasOwnFinalizers(ns *v1.Namespace) bool {
	return len(ns.Finalizers) > 0 || slices.ContainsFunc(ns.Spec.Finalizers, func(f v1.FinalizerName) bool { return f != v1.FinalizerKubernetes })
}

func holdingFinalizers(snap *deletion.Snapshot) []string {
	seen := map[string]bool{}
	for _, list := range snap.Lists {
		if list == nil {
			continue
		}
		for _, item := range list.Items {
			for _, f := range item.Finalizers {
				seen[f] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for f := range seen {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// goesWith is a catalogued owner's state for the namespace being
// diagnosed: an owner whose workload was found in that very namespace is
// deleted with it (or would be, for an Active one), however ready it is
// now, and nothing will remove its finalizers then.
func goesWith(s diagnose.OwnerState, namespace string) diagnose.OwnerState {
	if s.Found == nil || s.Found.Namespace != namespace {
		return s
	}
	if s.State == diagnose.OwnerRunningReady || s.State == diagnose.OwnerNotReady {
		s.State = diagnose.OwnerDeletedWithNamespace
	}
	return s
}

// owner looks for a finalizer's owner among its usual workloads: in their
// usual namespace first, else by name in any namespace (installs move
// them). It is asked once per inspector.
func (i *Inspector) owner(ctx context.Context, finalizer string) diagnose.OwnerState {
	i.mu.Lock()
	if s, ok := i.owners[finalizer]; ok {
		i.mu.Unlock()
		return s
	}
	i.mu.Unlock()
	state := i.findOwner(ctx, finalizer)
	i.mu.Lock()
	if i.owners == nil {
		i.owners = map[string]diagnose.OwnerState{}
	}
	i.owners[finalizer] = state
	i.mu.Unlock()
	return state
}

func (i *Inspector) findOwner(ctx context.Context, finalizer string) diagnose.OwnerState {
	e := finalizers.Lookup(finalizer)
	switch {
	case e == nil:
		return diagnose.OwnerState{State: diagnose.OwnerUnknown}
	case e.Detect.Builtin:
		return diagnose.OwnerState{State: diagnose.OwnerControlPlane, Owner: e.Owner}
	case len(e.Detect.Workloads) == 0:
		return diagnose.OwnerState{State: diagnose.OwnerNotChecked, Owner: e.Owner}
	}
	best := diagnose.OwnerState{State: diagnose.OwnerNotFound, Owner: e.Owner}
	for _, w := range e.Detect.Workloads {
		ref := diagnose.WorkloadRef{Kind: w.Kind, Namespace: w.Namespace, Name: w.Name}
		best.Looked = append(best.Looked, ref)
		found, err := i.workloads(ctx, w)
		if err != nil {
			return diagnose.OwnerState{State: diagnose.OwnerUnknown, Owner: e.Owner, Found: &diagnose.WorkloadState{WorkloadRef: ref}, Error: err.Error()}
		}
		for _, f := range found {
			seen := &diagnose.WorkloadState{WorkloadRef: diagnose.WorkloadRef{Kind: w.Kind, Namespace: f.Namespace, Name: w.Name}, Ready: f.Ready, Want: f.Want}
			switch {
			case f.Ready > 0:
				i.keepOwnerPods(finalizer, f.Namespace, f.Selector)
				return diagnose.OwnerState{State: diagnose.OwnerRunningReady, Owner: e.Owner, Found: seen}
			case best.State == diagnose.OwnerNotFound:
				best = diagnose.OwnerState{State: diagnose.OwnerNotReady, Owner: e.Owner, Found: seen}
			}
		}
	}
	return best
}

// workloads finds a workload by name, of its kind: in its usual namespace
// first, else in any.
func (i *Inspector) workloads(ctx context.Context, w finalizers.Workload) ([]owners.Workload, error) {
	byName := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", w.Name).String()}
	apps := i.clients.Kube.AppsV1()
	var (
		out []owners.Workload
		err error
	)
	add := func(ws []owners.Workload) {
		for _, x := range ws {
			if x.Kind == w.Kind && x.Name == w.Name {
				out = append(out, x)
			}
		}
	}
	switch w.Kind {
	case "Deployment":
		var l *appsv1.DeploymentList
		if l, err = apps.Deployments("").List(ctx, byName); err == nil {
			for _, d := range l.Items {
				add([]owners.Workload{workloadOf("Deployment", d.ObjectMeta, d.Spec.Template.Spec, d.Status.ReadyReplicas, replicas(d.Spec.Replicas), d.Spec.Selector)})
			}
		}
	case "StatefulSet":
		var l *appsv1.StatefulSetList
		if l, err = apps.StatefulSets("").List(ctx, byName); err == nil {
			for _, s := range l.Items {
				add([]owners.Workload{workloadOf("StatefulSet", s.ObjectMeta, s.Spec.Template.Spec, s.Status.ReadyReplicas, replicas(s.Spec.Replicas), s.Spec.Selector)})
			}
		}
	case "DaemonSet":
		var l *appsv1.DaemonSetList
		if l, err = apps.DaemonSets("").List(ctx, byName); err == nil {
			for _, d := range l.Items {
				add([]owners.Workload{workloadOf("DaemonSet", d.ObjectMeta, d.Spec.Template.Spec, d.Status.NumberReady, d.Status.DesiredNumberScheduled, d.Spec.Selector)})
			}
		}
	}
	if err != nil {
		return nil, err
	}
	// The usual namespace first.
	slices.SortStableFunc(out, func(a, b owners.Workload) int {
		return boolRank(a.Namespace != w.Namespace) - boolRank(b.Namespace != w.Namespace)
	})
	return out, nil
}

func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// neverReadInFull are types whose objects explain never reads in full:
// their data is what users keep secret.
var neverReadInFull = map[schema.GroupResource]bool{{Resource: "secrets"}: true, {Resource: "configmaps"}: true}

// holderTarget is an object holding the namespace whose status is read.
type holderTarget struct {
	gvr  schema.GroupVersionResource
	name string
}

// holderTargets are a few objects per type that finalizers hold, at most
// maxHolderReads in all, one per type first, in the order of the snapshot.
func holderTargets(snap *deletion.Snapshot) []holderTarget {
	var perType [][]holderTarget
	for gvr, list := range snap.Listed() {
		if neverReadInFull[gvr.GroupResource()] || gvr == deletion.PodsGVR {
			continue
		}
		var held []holderTarget
		for _, item := range list.Items {
			if len(item.Finalizers) > 0 && len(held) < holdersPerType {
				held = append(held, holderTarget{gvr, item.Name})
			}
		}
		if len(held) > 0 {
			perType = append(perType, held)
		}
	}
	targets := roundRobin(perType, maxHolderReads)
	order := map[schema.GroupVersionResource]int{}
	for k, held := range perType {
		order[held[0].gvr] = k
	}
	slices.SortStableFunc(targets, func(a, b holderTarget) int { return order[a.gvr] - order[b.gvr] })
	return targets
}

// holder reads one holder's status conditions that say something is
// wrong; nil when none does, or it is gone.
func (i *Inspector) holder(ctx context.Context, namespace string, t holderTarget, ev *evidence) *diagnose.Holder {
	obj, err := i.clients.Dynamic.Resource(t.gvr).Namespace(namespace).Get(ctx, t.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		ev.unchecked(diagnose.UncheckedHolderStatus, deletion.ResourceName(t.gvr)+"/"+t.name, err)
	default:
		ev.wrote(deletion.ResourceName(t.gvr), t.name, obj.GetManagedFields())
		conds, said := notReady(obj), statusSays(obj)
		managed, refs := managedBy(obj.GetAnnotations()), specRefs(obj.Object["spec"], namespace)
		if len(conds) > 0 || len(said) > 0 || managed != nil || len(refs) > 0 {
			return &diagnose.Holder{Resource: deletion.ResourceName(t.gvr), Name: t.name, Conditions: conds, Fields: said, ManagedBy: managed, Refs: refs}
		}
	}
	return nil
}

// wrote records when each field manager last wrote a holder, whatever
// the operation or subresource: a controller acting on it writes its
// status as it goes.
func (ev *evidence) wrote(resource, name string, entries []metav1.ManagedFieldsEntry) {
	last := map[string]time.Time{}
	for _, e := range entries {
		if e.Time != nil && e.Time.After(last[e.Manager]) {
			last[e.Manager] = e.Time.UTC()
		}
	}
	if len(last) == 0 {
		return
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ev.Writes = append(ev.Writes, diagnose.HolderWrites{Resource: resource, Name: name, Last: last})
}

// roundRobin takes the first of each group, then the second, and so on,
// up to limit in all; the result keeps the groups' order within a round.
func roundRobin[T any](groups [][]T, limit int) []T {
	var out []T
	for round := 0; len(out) < limit; round++ {
		took := false
		for _, g := range groups {
			if round < len(g) && len(out) < limit {
				out = append(out, g[round])
				took = true
			}
		}
		if !took {
			break
		}
	}
	return out
}

// managedBy reads the annotations that Helm and Argo CD put on what they
// deploy: such a holder comes back, or its release keeps failing, until
// the release or application is removed too.
func managedBy(a map[string]string) *diagnose.Manager {
	if name := a["meta.helm.sh/release-name"]; name != "" {
		if ns := a["meta.helm.sh/release-namespace"]; ns != "" {
			name = ns + "/" + name
		}
		return &diagnose.Manager{Tool: diagnose.ManagerHelm, Name: name}
	}
	// The tracking id is APP:GROUP/KIND:NAMESPACE/NAME; the app may be
	// NAMESPACE_APP when apps live outside argocd's own namespace.
	if id := a["argocd.argoproj.io/tracking-id"]; id != "" {
		app, _, _ := strings.Cut(id, ":")
		return &diagnose.Manager{Tool: diagnose.ManagerArgoCD, Name: app}
	}
	return nil
}

// events reads the namespace's Warning events, latest first: in pages,
// keeping only the latest few, so 10,000 events cost one page of memory.
// A census that read them across the cluster has them already.
func (i *Inspector) events(ctx context.Context, ns *v1.Namespace, ev *evidence) []diagnose.Event {
	namespace := ns.Name
	if events, ok := i.Census().eventsOf(ns); ok {
		return events
	}
	latest := map[string][]diagnose.Event{}
	if i.cfg.Warnings != nil {
		if events, ok := i.cfg.Warnings(namespace); ok {
			for _, e := range events {
				keepLatest(latest, e)
			}
			return latest[namespace]
		}
	}
	if err := i.warnings(ctx, namespace, warningsOnly(), func(ns string) bool { return ns == namespace }, latest); err != nil {
		ev.unchecked(diagnose.UncheckedEvents, "", err)
	}
	return latest[namespace]
}

// warningsOnly selects Warning events.
func warningsOnly() fields.Selector { return fields.OneTermEqualSelector("type", v1.EventTypeWarning) }

// clusterEvents reads the Warning events of every namespace chosen, the
// latest few of each, in one paged list across the cluster; nil when it
// cannot (each namespace then reads its own).
func (i *Inspector) clusterEvents(ctx context.Context, chosen map[string]bool) map[string][]diagnose.Event {
	latest := map[string][]diagnose.Event{}
	selector := warningsOnly()
	if !chosen[metav1.NamespaceDefault] {
		// Events about cluster-scoped objects (the watch's own, about
		// namespaces) are filed in default, which is never terminating.
		selector = fields.AndSelectors(selector, fields.OneTermNotEqualSelector("metadata.namespace", metav1.NamespaceDefault))
	}
	if err := i.warnings(ctx, "", selector, func(ns string) bool { return chosen[ns] }, latest); err != nil {
		return nil
	}
	return latest
}

// warnings lists the Warning events of namespace ("": all) page by page
// and keeps in latest, for each namespace chosen, its maxEvents latest.
func (i *Inspector) warnings(ctx context.Context, namespace string, selector fields.Selector, chosen func(string) bool, latest map[string][]diagnose.Event) error {
	opts := metav1.ListOptions{FieldSelector: selector.String(), Limit: eventsPage}
	for {
		list, err := i.clients.Kube.CoreV1().Events(namespace).List(ctx, opts)
		if err != nil {
			return err
		}
		for _, e := range list.Items {
			if chosen(e.Namespace) {
				keepLatest(latest, e)
			}
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			return nil
		}
	}
}

// keepLatest adds e to its namespace's events, keeping the maxEvents
// latest, latest first.
func keepLatest(latest map[string][]diagnose.Event, e v1.Event) {
	out := append(latest[e.Namespace], eventOf(e))
	sort.Slice(out, func(a, b int) bool { return out[a].Last.After(out[b].Last) })
	latest[e.Namespace] = out[:min(len(out), maxEvents)]
}

// eventsPage is the page of the events' list.
const eventsPage = 500

func eventOf(e v1.Event) diagnose.Event {
	last := e.LastTimestamp.Time
	if last.IsZero() {
		last = e.EventTime.Time
	}
	if last.IsZero() {
		last = e.CreationTimestamp.Time
	}
	return diagnose.Event{Reason: e.Reason, Message: e.Message, Count: max(e.Count, 1), Last: last.UTC(), Missing: saysMissing(e.Message),
		Object: strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name}
}
