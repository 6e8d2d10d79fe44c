package purge

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/inspect"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

type schemaGVR = schema.GroupVersionResource

// run is one purge run's state: the report it fills, the controller's
// deleter it drives pass after pass, and what a force run remembers
// between passes.
type run struct {
	*Purger
	report  *Report
	deleter *deletion.NamespacedResourcesDeleter
	disc    *kube.Discovery

	// Plans only: the strips and force-deletions refused, not sent again;
	// a client plan's predicted webhook rejections.
	refused    map[string]bool
	rejections diagnose.Rejections
	// nodes caches the state of the pods' nodes.
	nodes map[string]NodeState

	// Force runs only.
	bk *backup.Writer
	// reported remembers the resources whose deletion is already listed
	// among the changes: later passes re-send the same request.
	reported map[string]bool
	// rc notices content created anew while purge deletes it.
	rc *recreations
	// stripped remembers the finalizers purge removed per object, so one
	// a live controller puts back is reported, not removed again.
	stripped map[string][]string
	// revived: a former namespace was re-created (and deleted again) so
	// its leftovers' finalizers could be removed.
	revived bool
	// live is where the run is, for Options.Observer.
	progressMu sync.Mutex
	live       Progress
}

// snapshot discovers the API and reads what the namespace holds, the same
// way explain does (shared discovery, metadata sweep, webhooks, backends).
func (r *run) snapshot(ctx context.Context, ns *v1.Namespace) (diagnose.Observation, error) {
	in := r.inspector()
	obs, err := in.Observe(ctx, ns)
	if err != nil {
		return obs, err
	}
	obs.Ordering = r.Opts.Ordering
	r.disc = in.Discovery()
	r.discoveries.seed(r.disc)
	// explain reads pods as metadata only; purge reads them as the
	// controller does (spec and status, never printed), so a plan knows
	// which pods a kubelet holds and which go at once.
	if pods, err := (kube.PodLister{Client: r.Clients.Kube}).ListPods(ctx, ns.Name); err == nil {
		obs.Snapshot.Pods, obs.Snapshot.PodSpecsUnknown = pods, false
	}
	return obs, nil
}

// needsSnapshot tells whether a force run needs the snapshot before its
// first pass: the strips' permission check and the bypass read it. Else
// the first pass's own lists are the only reads, as for the controller.
func (r *run) needsSnapshot() bool {
	return r.Opts.Escalations.strips() || len(r.Opts.Escalations.BypassWebhooks) > 0
}

// discoverOnly is the first read of a force run that needs no snapshot:
// discovery.
func (r *run) discoverOnly(ctx context.Context) error {
	disc, err := r.inspector().Discover(ctx)
	if err != nil {
		return err
	}
	r.disc = disc
	r.discoveries.seed(disc)
	return nil
}

// inspector is the run's reader, shared with the other namespaces' runs.
// Plain objects are counted, not kept: a pass deletes them at once, and a
// 100k-object namespace fits in tens of MiB.
func (r *run) inspector() *inspect.Inspector {
	if r.Inspector == nil {
		r.Inspector = inspect.New(r.Clients)
		r.Inspector.Compact = true
	}
	return r.Inspector
}

// newDeleter is upstream's NewNamespacedResourcesDeleter with this run's
// clients, discovery and escalations.
func (r *run) newDeleter(nsClient deletion.NamespaceClient, ops deletion.Operations, pods deletion.PodLister) *deletion.NamespacedResourcesDeleter {
	esc := r.Opts.Escalations
	return &deletion.NamespacedResourcesDeleter{
		NsClient: nsClient, Ops: ops, Pods: pods,
		DiscoverResourcesFn: func() ([]*metav1.APIResourceList, error) { return r.disc.Resources, r.disc.Err },
		FinalizerToken:      deletion.FinalizerToken, OrderedDeletion: r.Opts.Ordering.Ordered,
		Workers: r.Opts.Workers, Now: r.now,
		FinalizeDespiteDiscoveryFailure: esc.FinalizeDespiteDiscoveryFailure,
		RemoveAllSpecFinalizers:         esc.RemoveNamespaceFinalizers,
	}
}

// recordContent fills the report's remaining content and conditions from
// one content pass.
func (r *run) recordContent(rec *recorder, content *deletion.ContentResult) {
	r.report.Remaining = []Remaining{}
	if content == nil {
		return
	}
	for gvr, n := range content.Totals.GVRToNumRemaining {
		r.report.Remaining = append(r.report.Remaining, Remaining{Resource: deletion.ResourceName(gvr), Count: n, Finalizers: rec.finalizersOf(gvr)})
	}
	sort.Slice(r.report.Remaining, func(i, j int) bool { return r.report.Remaining[i].Resource < r.report.Remaining[j].Resource })
	r.report.Conditions = conditionsOf(content.Conditions)
}

func conditionsOf(conds []v1.NamespaceCondition) []Condition {
	out := []Condition{}
	for _, c := range conds {
		out = append(out, Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return out
}

// notFinalized records why a pass did not finalize.
func notFinalized(f *Finalize, res deletion.Result, err error) {
	f.Would = false
	c := res.Content
	switch {
	case c == nil:
	case c.Err != nil && deletion.OnlyDiscoveryFailed(c.Err) && c.Estimate == 0:
		f.Cause = FinalizeDiscoveryFailed
	case c.Err != nil:
		f.Cause, f.Error = FinalizeDeletionErrors, c.Err.Error()
	case c.Estimate > 0:
		f.Cause, f.Estimate, f.PodsFirst = FinalizeContentRemains, c.Estimate, c.PodsBlocked
	}
	var rre *deletion.ResourcesRemainingError
	if c != nil && c.Err == nil && errors.As(err, &rre) {
		f.Estimate = rre.Estimate
	}
}

// finalized records a pass that finalized the namespace (or would).
func finalized(f *Finalize, res deletion.Result, pass int) {
	f.Would = true
	f.Remove = tokens(res.Dropped)
	f.Kept = nil
	for _, t := range res.Namespace.Spec.Finalizers {
		if !slices.Contains(res.Dropped, t) {
			f.Kept = append(f.Kept, string(t))
		}
	}
	switch {
	case res.Content != nil && res.Content.Err != nil:
		f.Cause = FinalizeDespiteDiscovery
	case pass > 1:
		f.Cause = FinalizeAfterEscalations
	default:
		f.Cause = FinalizeNothingRemains
	}
}

func tokens(names []v1.FinalizerName) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, string(n))
	}
	return out
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

func without(list, drop []string) []string {
	out := []string{}
	for _, x := range list {
		if !slices.Contains(drop, x) {
			out = append(out, x)
		}
	}
	return out
}

// stripCandidates are the resources whose objects an escalation may strip:
// what the pass left, and what it failed to delete (a webhook refusing the
// DELETE may refuse the finalizer removal too, which the report then says).
func stripCandidates(c *deletion.ContentResult) []schemaGVR {
	set := map[schemaGVR]int{}
	for gvr, n := range c.Totals.GVRToNumRemaining {
		set[gvr] = n
	}
	for _, gvr := range c.Failed {
		set[gvr]++
	}
	return sortedGVRs(set)
}
