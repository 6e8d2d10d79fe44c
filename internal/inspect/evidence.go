package inspect

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/finalizers"
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
	ev := &evidence{Evidence: diagnose.Evidence{Owners: map[string]diagnose.OwnerState{}}, sem: make(chan struct{}, evidenceConcurrency)}
	var wg sync.WaitGroup
	for _, f := range holdingFinalizers(snap) {
		wg.Go(func() {
			ev.sem <- struct{}{}
			defer func() { <-ev.sem }()
			state := i.owner(ctx, f)
			ev.mu.Lock()
			ev.Owners[f] = state
			ev.mu.Unlock()
		})
	}
	wg.Go(func() { ev.Holders = i.holders(ctx, ns.Name, snap, ev) })
	wg.Go(func() { ev.Events = i.events(ctx, ns.Name, ev) })
	wg.Wait()
	slices.Sort(ev.Unchecked)
	return ev.Evidence
}

// evidenceConcurrency bounds the evidence's requests in flight, as the
// sweep bounds its lists.
const evidenceConcurrency = 48

// evidence is the Evidence being gathered by concurrent reads.
type evidence struct {
	diagnose.Evidence
	mu  sync.Mutex
	sem chan struct{}
}

func (ev *evidence) unchecked(format string, args ...any) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ev.Unchecked = append(ev.Unchecked, fmt.Sprintf(format, args...))
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
		return diagnose.OwnerState{State: diagnose.OwnerUnknown, Evidence: "unknown owner: not in ns-doctor's catalogue"}
	case e.Detect.Builtin:
		return diagnose.OwnerState{State: diagnose.OwnerControlPlane, Evidence: e.Owner + " (part of the control plane)"}
	case len(e.Detect.Workloads) == 0:
		return diagnose.OwnerState{State: diagnose.OwnerNotChecked, Evidence: "the catalogue names no workload to look for"}
	}
	var looked []string
	best := diagnose.OwnerState{State: diagnose.OwnerNotFound}
	for _, w := range e.Detect.Workloads {
		looked = append(looked, fmt.Sprintf("%s %s/%s", strings.ToLower(w.Kind), w.Namespace, w.Name))
		found, err := i.workloads(ctx, w)
		if err != nil {
			return diagnose.OwnerState{State: diagnose.OwnerUnknown, Evidence: fmt.Sprintf("%s could not be read: %v", looked[len(looked)-1], err)}
		}
		for _, f := range found {
			switch {
			case f.ready > 0:
				return diagnose.OwnerState{State: diagnose.OwnerRunningReady, Evidence: fmt.Sprintf("%s %s/%s: %d/%d ready", strings.ToLower(w.Kind), f.namespace, w.Name, f.ready, f.want)}
			case best.State == diagnose.OwnerNotFound:
				best = diagnose.OwnerState{State: diagnose.OwnerNotReady, Evidence: fmt.Sprintf("%s %s/%s: 0/%d ready", strings.ToLower(w.Kind), f.namespace, w.Name, f.want)}
			}
		}
	}
	if best.State == diagnose.OwnerNotFound {
		best.Evidence = "none of its usual workloads found: " + strings.Join(looked, ", ")
	}
	return best
}

type workload struct {
	namespace   string
	ready, want int32
}

// workloads finds a workload by name: in its usual namespace, else in any.
func (i *Inspector) workloads(ctx context.Context, w finalizers.Workload) ([]workload, error) {
	apps := i.Clients.Kube.AppsV1()
	byName := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", w.Name).String()}
	var out []workload
	switch w.Kind {
	case "Deployment":
		list, err := apps.Deployments("").List(ctx, byName)
		if err != nil {
			return nil, err
		}
		for _, d := range list.Items {
			out = append(out, workload{d.Namespace, d.Status.ReadyReplicas, replicas(d.Spec.Replicas)})
		}
	case "StatefulSet":
		list, err := apps.StatefulSets("").List(ctx, byName)
		if err != nil {
			return nil, err
		}
		for _, s := range list.Items {
			out = append(out, workload{s.Namespace, s.Status.ReadyReplicas, replicas(s.Spec.Replicas)})
		}
	case "DaemonSet":
		list, err := apps.DaemonSets("").List(ctx, byName)
		if err != nil {
			return nil, err
		}
		for _, d := range list.Items {
			out = append(out, workload{d.Namespace, d.Status.NumberReady, d.Status.DesiredNumberScheduled})
		}
	}
	// The usual namespace first.
	slices.SortStableFunc(out, func(a, b workload) int {
		return boolRank(a.namespace != w.Namespace) - boolRank(b.namespace != w.Namespace)
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

// holders reads the status conditions of a few objects per type that
// finalizers hold, at most maxHolderReads in all, in the order of the
// snapshot.
func (i *Inspector) holders(ctx context.Context, namespace string, snap *deletion.Snapshot, ev *evidence) []diagnose.Holder {
	type target struct {
		gvr  schema.GroupVersionResource
		name string
	}
	var perType [][]target
	for _, gvr := range snap.SortedGVRs() {
		list := snap.Lists[gvr]
		if list == nil || neverReadInFull[gvr.GroupResource()] || gvr == deletion.PodsGVR {
			continue
		}
		var held []target
		for _, item := range list.Items {
			if len(item.Finalizers) > 0 && len(held) < holdersPerType {
				held = append(held, target{gvr, item.Name})
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
	slices.SortStableFunc(targets, func(a, b target) int { return order[a.gvr] - order[b.gvr] })
	found := make([]*diagnose.Holder, len(targets))
	var wg sync.WaitGroup
	for k, t := range targets {
		wg.Go(func() {
			ev.sem <- struct{}{}
			defer func() { <-ev.sem }()
			obj, err := i.Clients.Dynamic.Resource(t.gvr).Namespace(namespace).Get(ctx, t.name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				ev.unchecked("status of %s/%s: %v", deletion.ResourceName(t.gvr), t.name, err)
			default:
				if conds := notReady(obj); len(conds) > 0 {
					found[k] = &diagnose.Holder{Resource: deletion.ResourceName(t.gvr), Name: t.name, Conditions: conds}
				}
			}
		})
	}
	wg.Wait()
	var out []diagnose.Holder
	for _, h := range found {
		if h != nil {
			out = append(out, *h)
		}
	}
	return out
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

// negativeConditions are condition types whose True means trouble.
var negativeConditions = map[string]bool{"Failed": true, "Failure": true, "Error": true, "Degraded": true, "Stalled": true, "Blocked": true}

// notReady keeps an object's status conditions that say something is
// wrong: a condition False (Ready, Synced, Available, ...), Unknown, or a
// trouble condition True.
func notReady(obj *unstructured.Unstructured) []diagnose.HolderCondition {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	var out []diagnose.HolderCondition
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		typ, _ := m["type"].(string)
		status, _ := m["status"].(string)
		bad := status == "Unknown" || (status == "False" && !negativeConditions[typ]) || (status == "True" && negativeConditions[typ])
		if !bad {
			continue
		}
		hc := diagnose.HolderCondition{Type: typ, Status: status}
		hc.Reason, _ = m["reason"].(string)
		hc.Message, _ = m["message"].(string)
		if s, _ := m["lastTransitionTime"].(string); s != "" {
			if t, err := time.Parse(time.RFC3339, s); err == nil {
				t = t.UTC()
				hc.LastTransitionTime = &t
			}
		}
		out = append(out, hc)
	}
	return out
}

// events reads the namespace's Warning events, latest first.
func (i *Inspector) events(ctx context.Context, namespace string, ev *evidence) []diagnose.Event {
	list, err := i.Clients.Kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("type", v1.EventTypeWarning).String()})
	if err != nil {
		ev.unchecked("events: %v", err)
		return nil
	}
	var out []diagnose.Event
	for _, e := range list.Items {
		last := e.LastTimestamp.Time
		if last.IsZero() {
			last = e.EventTime.Time
		}
		if last.IsZero() {
			last = e.CreationTimestamp.Time
		}
		out = append(out, diagnose.Event{Reason: e.Reason, Message: e.Message, Count: max(e.Count, 1), Last: last.UTC(),
			Object: strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Last.After(out[b].Last) })
	if len(out) > maxEvents {
		out = out[:maxEvents]
	}
	return out
}
