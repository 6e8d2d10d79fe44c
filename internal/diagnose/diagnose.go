package diagnose

import (
	"context"
	"slices"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/ns-doctor/ns-doctor/internal/apierror"
	"github.com/ns-doctor/ns-doctor/internal/compat"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/finalizers"
)

// DefaultGrace is how long a deletion step may take before ns-doctor calls
// it stuck: the controller looks at a namespace 5 s after deletion and
// re-checks content with finalizers every 8 s (15/2+1), and most finalizers'
// owners finish within seconds.
const DefaultGrace = 30 * time.Second

// MaxExamples bounds the names listed per resource type; a compact sweep
// keeps at least that many plain objects per type.
const MaxExamples = 3

// Observation is everything read from the cluster for one namespace.
type Observation struct {
	Namespace    *v1.Namespace
	Resources    []*metav1.APIResourceList
	DiscoveryErr error
	// Deletable, when set, is deletion.DeletableOf(Resources), shared by
	// the observations of one discovery.
	Deletable    *deletion.Deletable
	FailedGroups map[schema.GroupVersion]error
	Snapshot     *deletion.Snapshot
	APIServices  []apiregv1.APIService
	Webhooks     []Webhook
	CRDs         []CRD
	// Services are the backends referenced above, by namespace/name.
	Services map[string]ServiceState
	Now      time.Time
	// Grace is how long a step may take before it is called stuck: a
	// namespace with no conditions (no controller), content waiting for
	// finalizers. Zero reports them at once.
	Grace time.Duration
	// IfDeleted diagnoses an Active namespace as if it were deleted now.
	IfDeleted bool
	// Ordering is the deletion order of the cluster's controller.
	Ordering compat.Ordering
	// Earlier is an earlier read of the same namespace, when the caller
	// reads it again and again (explain --wait, watch): content whose
	// finalizers hold fewer objects than then is going, not stuck.
	Earlier *EarlierRead
	// Evidence is read for namespaces being deleted (or --if-deleted).
	Evidence Evidence
	// Unchecked is what could not be read (webhooks, CRDs, backends).
	Unchecked []Unchecked
	// RescueHold is the rescue hold's policy, read when the controller's
	// conditions quote it.
	RescueHold *RescueHold
	// Protection is protect's policy over the namespace, read for an
	// Active namespace diagnosed IfDeleted; nil when not read.
	Protection *Protection
	// Probes are the types listed across namespaces when the controller
	// says it failed to delete content whose lists here succeed.
	Probes []Probe
}

// Diagnose builds the report for one namespace.
func Diagnose(obs Observation) Report {
	ns := obs.Namespace
	r := Report{
		ObservedAt: obs.Now.UTC(),
		Namespace:  namespaceOf(ns),
		Discovery:  discoveryOf(obs),
		Ordering:   Ordering{Ordering: obs.Ordering},
		Content:    contentOf(obs.Snapshot),
		Blockers:   []Blocker{},
		Unchecked:  append(slices.Clone(obs.Unchecked), obs.Evidence.Unchecked...),
		Holders:    holdersOf(obs),
		Events:     obs.Evidence.Events,
		Notes:      notesOf(obs),
	}
	r.Finalizers = finalizersOf(r.Content, obs.Evidence.Owners)
	r.NamespaceFinalizers = namespaceFinalizersOf(r.Namespace, obs.Evidence.NamespaceOwners)
	if ns.DeletionTimestamp == nil {
		return diagnoseActive(obs, r)
	}
	result := predictPass(obs)
	r.Conditions = compareConditions(ns.Status.Conditions, result.Conditions)
	r.Ordering.OtherMatches = otherOrderingMatches(obs, r.Conditions)
	r.Ordering.PodsFirstEarlyReturn = podsFirstEarlyReturn(obs, r.Conditions)
	r.Pods = podsOf(obs, result)
	r.Blockers = findBlockers(obs, r, result)
	r.Blockers = append(r.Blockers, unexplainedBlockers(obs, r)...)
	markCannotFinish(r.Finalizers, r.Blockers)
	r.Verdict = verdictOf(r)
	r.Progress = progressOf(obs, r)
	return r
}

// diagnoseActive reports an Active namespace; with IfDeleted, it lists
// what would block its deletion if it were deleted now.
func diagnoseActive(obs Observation, r Report) Report {
	r.Conditions = compareConditions(obs.Namespace.Status.Conditions, nil)
	r.Verdict = Verdict{State: StateActive, IfDeleted: obs.IfDeleted}
	if !obs.IfDeleted {
		return r
	}
	r.Protection = obs.Protection
	ns := obs.Namespace.DeepCopy()
	now := metav1.NewTime(obs.Now)
	ns.DeletionTimestamp = &now
	obs.Namespace = ns
	result := predictPass(obs)
	r.Pods = podsOf(obs, result)
	r.Blockers = findBlockers(obs, r, result)
	markCannotFinish(r.Finalizers, r.Blockers)
	return r
}

// predictPass runs the controller's Delete over the snapshot without
// sending anything, to get the conditions the controller would write.
func predictPass(obs Observation) deletion.ContentResult {
	ops := deletion.NewPlanOps(obs.Snapshot)
	deletable := obs.Deletable
	if deletable == nil {
		deletable = deletion.DeletableOf(obs.Resources)
	}
	// The pass is played over the types the snapshot holds something of
	// (or failed to list): over the others the plan deletes an empty
	// collection and lists nothing, which changes no condition, count or
	// estimate. Over ten thousand namespaces of fifty types each, that
	// was most of a diagnosis.
	snap := obs.Snapshot
	var holding []schema.GroupVersionResource
	for gvr, l := range snap.Lists {
		if l != nil && len(l.Items) > 0 || snap.Omitted[gvr] > 0 {
			holding = append(holding, gvr)
		}
	}
	for gvr := range snap.ListErrs {
		holding = append(holding, gvr)
	}
	deletable = deletable.Only(holding...)
	ops.DeleteErrs = WebhookRejections(obs)
	d := &deletion.NamespacedResourcesDeleter{
		NsClient: deletion.NewPlanNamespaces(obs.Namespace), Ops: ops, Pods: ops,
		DiscoverResourcesFn: func() ([]*metav1.APIResourceList, error) { return obs.Resources, obs.DiscoveryErr },
		FinalizerToken:      deletion.FinalizerToken, OrderedDeletion: obs.Ordering.Ordered,
		Now: func() time.Time { return obs.Now }, Deletable: deletable,
	}
	res, _ := d.Delete(context.Background(), obs.Namespace.Name)
	if res.Content == nil {
		// Already finalized: no content pass runs, nothing remains.
		return deletion.ContentResult{}
	}
	return *res.Content
}

// otherOrderingMatches tells whether the controller's conditions, which
// disagree with the prediction, are exactly those of the other deletion
// order: the cluster's controller then runs with OrderedNamespaceDeletion
// set otherwise than its version's default.
func otherOrderingMatches(obs Observation, conds []Condition) bool {
	if !disagree(conds) || obs.Ordering.Server.Known && obs.Ordering.Server.Has(compat.OrderingGateRemoved) {
		// 1.37+: no controller runs the other order, so never blame it.
		return false
	}
	obs.Ordering.Ordered = !obs.Ordering.Ordered
	for _, c := range compareConditions(obs.Namespace.Status.Conditions, predictPass(obs).Conditions) {
		if c.Controller != nil && !c.Agree {
			return false
		}
	}
	return true
}

func disagree(conds []Condition) bool {
	for _, c := range conds {
		if c.Controller != nil && !c.Agree {
			return true
		}
	}
	return false
}

// podsFirstEarlyReturn tells whether the controller's conditions disagree
// because its last pass stopped at pods: ordered, a pass that finds pods
// remaining returns before counting anything and writes
// NamespaceContentRemaining False ("All content successfully removed")
// however much remains (upstream issue 138208), while ns-doctor's pass,
// run later, counts what remains.
func podsFirstEarlyReturn(obs Observation, conds []Condition) bool {
	if !obs.Ordering.Ordered || !disagree(conds) {
		return false
	}
	for _, c := range conds {
		if c.Type == string(v1.NamespaceContentRemaining) && c.Controller != nil && c.Computed != nil {
			return c.Controller.Status == string(v1.ConditionFalse) && c.Computed.Status == string(v1.ConditionTrue)
		}
	}
	return false
}

func namespaceOf(ns *v1.Namespace) Namespace {
	out := Namespace{
		Name: ns.Name, UID: string(ns.UID), Phase: string(ns.Status.Phase),
		CreationTimestamp:  ns.CreationTimestamp.UTC(),
		SpecFinalizers:     []string{},
		MetadataFinalizers: append([]string{}, ns.Finalizers...),
	}
	if ns.DeletionTimestamp != nil {
		t := ns.DeletionTimestamp.UTC()
		out.DeletionTimestamp = &t
	}
	for _, f := range ns.Spec.Finalizers {
		out.SpecFinalizers = append(out.SpecFinalizers, string(f))
	}
	return out
}

func discoveryOf(obs Observation) Discovery {
	d := Discovery{Failures: []DiscoveryFailure{}}
	for _, rl := range obs.Resources {
		d.Resources += len(rl.APIResources)
	}
	for gv, err := range obs.FailedGroups {
		f := DiscoveryFailure{GroupVersion: gv.String(), Error: err.Error()}
		if svc := findAPIService(obs.APIServices, gv); svc != nil {
			f.APIService = apiServiceOf(svc, obs.Namespace.Name)
			if f.APIService.Service != "" {
				state := obs.Services[f.APIService.Service]
				f.APIService.Backend = &state
			}
		}
		d.Failures = append(d.Failures, f)
	}
	sort.Slice(d.Failures, func(i, j int) bool { return d.Failures[i].GroupVersion < d.Failures[j].GroupVersion })
	return d
}

func findAPIService(services []apiregv1.APIService, gv schema.GroupVersion) *apiregv1.APIService {
	for i := range services {
		if services[i].Spec.Group == gv.Group && services[i].Spec.Version == gv.Version {
			return &services[i]
		}
	}
	return nil
}

func apiServiceOf(svc *apiregv1.APIService, namespace string) *APIService {
	out := &APIService{Name: svc.Name, Available: "Unknown"}
	if ref := svc.Spec.Service; ref != nil {
		out.Service = ref.Namespace + "/" + ref.Name
		out.SelfHosted = ref.Namespace == namespace
	}
	for _, c := range svc.Status.Conditions {
		if c.Type == apiregv1.Available {
			out.Available, out.Reason, out.Message = string(c.Status), c.Reason, c.Message
		}
	}
	return out
}

func contentOf(snap *deletion.Snapshot) []Content {
	out := []Content{}
	for gvr := range snap.GVRs() {
		c := Content{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource}
		if err := snap.ListErrs[gvr]; err != nil {
			c.Error = err.Error()
			out = append(out, c)
			continue
		}
		list := snap.Lists[gvr]
		if len(list.Items) == 0 {
			continue
		}
		summarise(&c, list.Items)
		c.Count += snap.Omitted[gvr]
		out = append(out, c)
	}
	return out
}

func summarise(c *Content, items []metav1.PartialObjectMetadata) {
	c.Count = len(items)
	for i := range items {
		m := &items[i]
		if m.DeletionTimestamp != nil {
			c.Terminating++
			if c.OldestDeletion == nil || m.DeletionTimestamp.Time.Before(*c.OldestDeletion) {
				t := m.DeletionTimestamp.UTC()
				c.OldestDeletion = &t
			}
		}
		for _, f := range m.Finalizers {
			if c.Finalizers == nil {
				c.Finalizers = map[string]int{}
			}
			c.Finalizers[f]++
		}
		if len(c.Examples) < MaxExamples {
			c.Examples = append(c.Examples, m.Name)
		}
	}
}

func podsOf(obs Observation, result deletion.ContentResult) *PodsSummary {
	pods := obs.Snapshot.Lists[deletion.PodsGVR]
	if pods == nil || len(pods.Items) == 0 {
		return nil
	}
	return &PodsSummary{
		Remaining:           len(pods.Items),
		EstimateSeconds:     deletion.EstimatePodGracePeriod(obs.Snapshot.Pods),
		HoldingOtherContent: result.PodsBlocked,
	}
}

func compareConditions(observed, computed []v1.NamespaceCondition) []Condition {
	var out []Condition
	for _, t := range deletion.ConditionTypes {
		c := Condition{Type: string(t)}
		c.Controller = valueOf(deletion.GetCondition(observed, t), true)
		c.Computed = valueOf(deletion.GetCondition(computed, t), false)
		c.Agree = c.Controller != nil && c.Computed != nil && c.Controller.Status == c.Computed.Status &&
			c.Controller.Reason == c.Computed.Reason && c.Controller.Message == c.Computed.Message
		out = append(out, c)
	}
	return out
}

func valueOf(c *v1.NamespaceCondition, withTime bool) *ConditionValue {
	if c == nil {
		return nil
	}
	v := &ConditionValue{Status: string(c.Status), Reason: c.Reason, Message: c.Message}
	if withTime && !c.LastTransitionTime.IsZero() {
		t := c.LastTransitionTime.UTC()
		v.LastTransitionTime = &t
	}
	return v
}

func verdictOf(r Report) Verdict {
	if len(r.Blocking()) == 0 {
		return Verdict{State: StateTerminating}
	}
	return Verdict{State: StateStuck}
}

func isForbidden(err error) bool { return apierror.Classify(err).Kind == apierror.Forbidden }

// finalizersOf lists the finalizers holding content, with their catalogue
// entries and their owners' state.
func finalizersOf(content []Content, owners map[string]OwnerState) []FinalizerInfo {
	counts := map[string]int{}
	for _, c := range content {
		for f, n := range c.Finalizers {
			counts[f] += n
		}
	}
	var out []FinalizerInfo
	for _, f := range sortedKeys(counts) {
		info := FinalizerInfo{Name: f, Objects: counts[f], OwnerState: owners[f]}
		catalogued(&info)
		if info.OwnerState.State == "" {
			// No evidence was read: an Active namespace.
			info.OwnerState = OwnerState{State: OwnerUnknown, Owner: info.Owner, NotChecked: info.Known}
		}
		named(&info)
		out = append(out, info)
	}
	return out
}

// catalogued fills a finalizer's catalogue entry, when it has one.
func catalogued(info *FinalizerInfo) {
	if e := finalizers.Lookup(info.Name); e != nil {
		info.Known, info.Owner, info.Project, info.Guards, info.Leak, info.Source = true, e.Owner, e.Project, e.Guards, e.Leak, e.Source
	}
}

// named says who removes a finalizer and where that comes from: the
// catalogue's owner where it has one, else the owner the inference names
// (never one it does not: an inference of confidence None names nobody).
func named(info *FinalizerInfo) {
	switch {
	case info.Known:
		info.OwnerSource = SourceCatalogue
	case info.OwnerState.InferredOwner() != "":
		info.Owner, info.OwnerSource = info.OwnerState.InferredOwner(), SourceInferred
	}
}

// namespaceFinalizersOf lists the namespace's own finalizers whose owners
// were read, with their catalogue entries.
func namespaceFinalizersOf(ns Namespace, owners map[string]OwnerState) []FinalizerInfo {
	var out []FinalizerInfo
	for _, f := range append(slices.Clone(ns.SpecFinalizers), ns.MetadataFinalizers...) {
		state, ok := owners[f]
		if !ok || f == "kubernetes" {
			continue
		}
		info := FinalizerInfo{Name: f, OwnerState: state}
		catalogued(&info)
		named(&info)
		out = append(out, info)
	}
	return out
}

// notesOf notes content older than the namespace: a forced deletion left
// it in storage, and a namespace of the same name brought it back.
func notesOf(obs Observation) []Note {
	created := obs.Namespace.CreationTimestamp.Time
	note := Note{Kind: NoteOlderContent, Namespace: obs.Namespace.Name, Created: created.UTC(),
		Actions: []Action{{Kind: ActionExplainOrphans, Namespace: obs.Namespace.Name}}}
	for gvr, list := range obs.Snapshot.Listed() {
		for _, item := range list.Items {
			if item.CreationTimestamp.Time.Before(created) {
				note.Older++
				if len(note.Examples) < MaxExamples {
					note.Examples = append(note.Examples, OlderObject{Resource: resourceName(gvr), Name: item.Name, Created: item.CreationTimestamp.UTC()})
				}
			}
		}
	}
	if note.Older == 0 {
		return nil
	}
	return []Note{note}
}
