package diagnose

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
)

// findBlockers names every reason the namespace is still there.
func findBlockers(obs Observation, r Report, result deletion.ContentResult) []Blocker {
	var out []Blocker
	out = append(out, apiServiceBlockers(r)...)
	out = append(out, namespaceFinalizerBlockers(obs, r.Namespace)...)
	out = append(out, podBlockers(obs, r)...)
	out = append(out, contentBlockers(obs, r)...)
	out = append(out, webhookBlockers(obs, r)...)
	out = append(out, denialBlockers(obs, r)...)
	if b := controllerBlocker(obs, r, result); b != nil {
		out = append(out, *b)
	}
	return out
}

func apiServiceBlockers(r Report) []Blocker {
	var out []Blocker
	ns := r.Namespace.Name
	for _, f := range r.Discovery.Failures {
		facts := &APIServiceFacts{Failure: f}
		b := Blocker{Kind: BlockerAPIServiceUnavailable, Subject: f.GroupVersion, Facts: facts,
			Actions: []Action{{Kind: ActionGetAPIService, Namespace: ns, Target: apiServiceName(f.GroupVersion), Of: f.GroupVersion}}}
		if s := f.APIService; s != nil {
			facts.ReadOnly = readOnlyGroups[groupOf(f.GroupVersion)]
			b.Actions = []Action{
				{Kind: ActionRestoreService, Namespace: ns, Target: s.Service, Of: "apiservice/" + s.Name},
				PurgeAction(ns, FlagDeleteAPIService, s.Name),
			}
			b.Actions[0] = backendStep(ns, s.Service, s.Backend, b.Actions[0])
			switch {
			case s.Backend != nil && !s.Backend.Down() && s.PathFails():
				// Its backend is ready, and kube-apiserver's own check of
				// it fails: what lies between them is what fails.
				b.Actions[0] = Action{Kind: ActionCheckAPIServicePath, Namespace: ns, Target: s.Name, Of: s.Service}
			case s.Backend != nil && !s.Backend.Down():
				// Its Service is there and answers: the backend behind it
				// fails (no answer, or one that is not discovery).
				b.Actions[0] = Action{Kind: ActionCheckBackend, Namespace: ns, Target: s.Name, Of: s.Service}
			}
			if s.Service == "" {
				b.Actions = []Action{{Kind: ActionCheckAPIServer, Namespace: ns, Target: s.Name}}
			}
			if s.SelfHosted {
				b.Kind = BlockerSelfHostedAPIService
				b.Actions = []Action{PurgeAction(ns, FlagDeleteAPIService, s.Name)}
			} else if s.Backend != nil && s.Backend.Unrestorable() {
				// Its Service's namespace is being deleted: it accepts no
				// new content, so the Service cannot be restored there.
				b.Actions = []Action{PurgeAction(ns, FlagDeleteAPIService, s.Name), {Kind: ActionDeleteAPIService, Namespace: ns, Target: s.Name}}
			}
		}
		out = append(out, b)
	}
	return out
}

func namespaceFinalizerBlockers(obs Observation, ns Namespace) []Blocker {
	var out []Blocker
	for _, f := range ns.SpecFinalizers {
		if f == "kubernetes" {
			continue
		}
		facts := &NamespaceFinalizerFacts{Token: f, Spec: ns.SpecFinalizers, Owners: ownersOf(obs.Evidence.NamespaceOwners, []string{f})}
		purge := PurgeAction(ns.Name, FlagRemoveNamespaceFinalizers, "")
		actions := []Action{checkOwner(ns.Name, f, facts.Owners), purge}
		switch state := facts.Owners[f]; {
		case state.State == OwnerDeletedWithNamespace:
			actions = []Action{purge}
		case state.State == OwnerRunningReady && state.Workload() != nil:
			actions = []Action{ownerLogs(ns.Name, *state.Workload()), purge}
		}
		out = append(out, Blocker{Kind: BlockerNamespaceFinalizer, Subject: f, Facts: facts, Actions: actions})
	}
	if len(ns.MetadataFinalizers) > 0 {
		facts := &NamespaceFinalizerFacts{Metadata: ns.MetadataFinalizers, Owners: ownersOf(obs.Evidence.NamespaceOwners, ns.MetadataFinalizers)}
		facts.Released = releasedOf(facts.Owners, ns.MetadataFinalizers)
		actions := []Action{{Kind: ActionPatchNamespaceFinalizers, Namespace: ns.Name, Target: ns.Name},
			PurgeAction(ns.Name, FlagRemoveNamespaceFinalizers, "")}
		switch w := runningOwner(facts.Owners, ns.MetadataFinalizers); {
		case len(facts.Released) == len(ns.MetadataFinalizers):
			// Their writers run but will not remove them: waiting, or
			// their logs, will not help; purge strips them.
			actions = []Action{actions[1], actions[0]}
		case w != nil:
			actions = append([]Action{ownerLogs(ns.Name, *w)}, actions...)
		}
		out = append(out, Blocker{Kind: BlockerNamespaceFinalizer, Subject: strings.Join(ns.MetadataFinalizers, ","), Facts: facts, Actions: actions})
	}
	return out
}

// releasedOf are the finalizers whose writer runs, and whose pointed
// object is gone or no longer selects the namespace: nothing will remove
// them.
func releasedOf(states map[string]OwnerState, names []string) []string {
	var out []string
	for _, f := range names {
		if in := states[f].Inferred; in != nil && in.Pointed != nil && in.Pointed.Released() {
			out = append(out, f)
		}
	}
	return out
}

// ownersOf are the owners' states read of the finalizers named.
func ownersOf(states map[string]OwnerState, names []string) map[string]OwnerState {
	out := map[string]OwnerState{}
	for _, f := range names {
		if s, ok := states[f]; ok {
			out[f] = s
		}
	}
	return out
}

// runningOwner is the workload of the finalizers' owner when every one of
// them has an owner known to run: one that runs, yet has not removed them.
func runningOwner(states map[string]OwnerState, names []string) *WorkloadState {
	var w *WorkloadState
	for _, f := range names {
		s, ok := states[f]
		if !ok || s.State != OwnerRunningReady || s.Workload() == nil {
			return nil
		}
		if w == nil {
			w = s.Workload()
		}
	}
	return w
}

// ownerLogs is the step for an owner that runs and does not finish: its
// log says why.
func ownerLogs(namespace string, w WorkloadState) Action {
	return Action{Kind: ActionOwnerLogs, Namespace: namespace, Target: strings.ToLower(w.Kind) + "/" + w.Name, Of: w.Namespace}
}

// checkOwner is the step for an owner not known to run: its workload when
// one was found (not ready), else whoever removes them.
func checkOwner(namespace, target string, states map[string]OwnerState) Action {
	a := Action{Kind: ActionCheckOwner, Namespace: namespace, Target: target}
	for _, f := range slices.Sorted(maps.Keys(states)) {
		if s := states[f]; s.State == OwnerNotReady && s.Workload() != nil {
			w := s.Workload()
			a.Of = strings.ToLower(w.Kind) + " " + w.Namespace + "/" + w.Name
			break
		}
	}
	return a
}

// ownersGone are the finalizers of c whose owner was deleted with the
// namespace.
func ownersGone(obs Observation, c Content) []string {
	var out []string
	for _, f := range sortedKeys(c.Finalizers) {
		if obs.Evidence.Owners[f].State == OwnerDeletedWithNamespace {
			out = append(out, f)
		}
	}
	return out
}

func podBlockers(obs Observation, r Report) []Blocker {
	if r.Pods == nil {
		return nil
	}
	var stuck []StuckPod
	for _, pod := range obs.Snapshot.Pods {
		// A pod's deletionTimestamp is when its grace period ends.
		if dt := pod.DeletionTimestamp; dt != nil && obs.Now.After(dt.Time) {
			stuck = append(stuck, StuckPod{Name: pod.Name, Overdue: obs.Now.Sub(dt.Time).Round(time.Second)})
		}
	}
	if len(stuck) == 0 {
		return nil
	}
	sort.Slice(stuck, func(i, j int) bool { return stuck[i].Name < stuck[j].Name })
	lost := false
	for k := range stuck {
		for _, n := range obs.Evidence.PodNodes {
			if n.Pod == stuck[k].Name {
				stuck[k].Node, stuck[k].NodeState, stuck[k].NodeSince = n.Node, n.State, n.Since
				lost = lost || stuck[k].Lost()
			}
		}
	}
	ns := r.Namespace.Name
	actions := []Action{{Kind: ActionCheckNodes, Namespace: ns}, PurgeAction(ns, FlagForceDeletePods, "")}
	if lost {
		// A lost node confirms nothing, ever: the force-delete is the step.
		actions[0], actions[1] = actions[1], actions[0]
	}
	return []Blocker{{Kind: BlockerPods, Subject: "pods", Facts: &PodFacts{Stuck: stuck, Ordered: obs.Ordering.Ordered}, Actions: actions}}
}

func contentBlockers(obs Observation, r Report) []Blocker {
	var out []Blocker
	ns := r.Namespace.Name
	for _, c := range r.Content {
		gvr := schema.GroupVersionResource{Group: c.Group, Version: c.Version, Resource: c.Resource}
		switch {
		case c.Error != "":
			if b, ok := listErrorBlocker(obs, c, gvr, ns); ok {
				out = append(out, b)
			}
		case len(c.Finalizers) > 0 && c.Resource != "pods" &&
			(waitedLongEnough(obs, c) && !going(obs, c) || len(cannotFinishOf(obs, gvr)) > 0 || len(ownersGone(obs, c)) > 0):
			// An owner that cannot finish, or that went with the
			// namespace, is named at once: waiting for the grace period
			// would not change it. One whose objects go since an earlier
			// read is making progress, whatever the grace.
			out = append(out, finalizerBlocker(obs, c, gvr, ns))
		}
	}
	return out
}

// listErrorBlocker is the blocker of a type whose list failed (the error
// in obs.Snapshot.ListErrs): none for one the controller skips (404, 405).
func listErrorBlocker(obs Observation, c Content, gvr schema.GroupVersionResource, ns string) (Blocker, bool) {
	res := resourceName(gvr)
	err := obs.Snapshot.ListErrs[gvr]
	switch {
	case notSupported(err):
		// The controller skips resources answering 404/405 to list.
		return Blocker{}, false
	case isForbidden(err):
		return Blocker{Kind: BlockerForbidden, Subject: res, Facts: &ListFacts{Resource: res, Error: c.Error},
			Actions: []Action{{Kind: ActionCheckAccess, Namespace: ns, Target: res}}}, true
	case conversionDown(obs, gvr) != nil:
		crd, state := findCRD(obs.CRDs, gvr), conversionDown(obs, gvr)
		restore := Action{Kind: ActionRestoreService, Namespace: ns, Target: crd.ConversionService.Key(), Of: "customresourcedefinition/" + crd.Name}
		actions := []Action{backendStep(ns, crd.ConversionService.Key(), state, restore), {Kind: ActionPatchCRDConversion, Namespace: ns, Target: crd.Name}}
		if state.Unrestorable() {
			actions = actions[1:]
		}
		return Blocker{Kind: BlockerConversionWebhook, Subject: crd.Name,
			Facts:   &ListFacts{Resource: res, Error: c.Error, CRD: crd, Conversion: state},
			Actions: actions,
		}, true
	}
	return listFailedBlocker(obs, c, gvr, ns), true
}

// listFailedBlocker names the aggregated API behind a type when there is
// one: it answered discovery, so its backend broke afterwards or fails only
// some requests.
func listFailedBlocker(obs Observation, c Content, gvr schema.GroupVersionResource, namespace string) Blocker {
	res := resourceName(gvr)
	facts := &ListFacts{Resource: res, Error: c.Error}
	b := Blocker{Kind: BlockerListFailed, Subject: res, Facts: facts,
		Actions: []Action{{Kind: ActionGetResource, Namespace: namespace, Target: res}}}
	svc := findAPIService(obs.APIServices, gvr.GroupVersion())
	crd := findCRD(obs.CRDs, gvr)
	served := (svc == nil || svc.Spec.Service == nil) && (crd == nil || crd.ConversionService == nil)
	if facts.Corrupt = corruptOf(obs.Snapshot.ListErrs[gvr], gvr, namespace, served); facts.Corrupt != nil {
		b.Actions = corruptActions(namespace, facts.Corrupt)
		return b
	}
	if svc == nil || svc.Spec.Service == nil {
		return b
	}
	facts.APIService = apiServiceOf(svc, namespace)
	if state, ok := obs.Services[facts.APIService.Service]; ok {
		facts.Backend = &state
	}
	b.Actions = []Action{{Kind: ActionCheckBackend, Namespace: namespace, Target: facts.APIService.Name, Of: facts.APIService.Service},
		{Kind: ActionDeleteAPIService, Namespace: namespace, Target: facts.APIService.Name}}
	if facts.Backend != nil && facts.Backend.Unrestorable() {
		b.Actions = b.Actions[1:]
	}
	return b
}

// backendStep is the step for a Service (namespace/name) that is down:
// restoring it (restore) when it is missing; when it is there and selects
// a workload that is not ready, making that workload ready, since there
// is no Service to restore.
func backendStep(namespace, service string, state *ServiceState, restore Action) Action {
	if state == nil || !state.Exists || !state.Down() {
		return restore
	}
	// The Service is there, with no ready endpoint: there is nothing to
	// restore, what runs behind it is what to bring back.
	a := Action{Kind: ActionMakeBackendReady, Namespace: namespace, Value: refNamespace(service), Of: restore.Of}
	_, name, _ := strings.Cut(service, "/")
	a.Target = "service/" + name
	if behind := state.Behind; behind != nil && len(behind.Workloads) > 0 {
		w := behind.Workloads[0]
		a.Target = strings.ToLower(w.Kind) + "/" + w.Name
	}
	return a
}

// refNamespace is the namespace of a namespace/name reference.
func refNamespace(ref string) string {
	ns, _, _ := strings.Cut(ref, "/")
	return ns
}

func finalizerBlocker(obs Observation, c Content, gvr schema.GroupVersionResource, namespace string) Blocker {
	names := sortedKeys(c.Finalizers)
	facts := &FinalizerFacts{Content: c, Owners: map[string]OwnerState{}}
	for _, f := range names {
		if state, ok := obs.Evidence.Owners[f]; ok {
			facts.Owners[f] = state
		}
	}
	if c.Finalizers["foregroundDeletion"] > 0 {
		facts.Foreground, facts.ForegroundMore = foregroundWaits(obs.Snapshot, gvr)
	}
	facts.Waiting = waitingOwners(obs, gvr)
	facts.CannotFinish = cannotFinishOf(obs, gvr)
	facts.GoneRefs = goneRefsOf(holdersOf(obs), resourceName(gvr))
	facts.Held = heldBy(obs.Snapshot.Lists[gvr])
	facts.OwnersGone = ownersGone(obs, c)
	if c.OldestDeletion != nil && !obs.IfDeleted {
		facts.Waited = obs.Now.Sub(*c.OldestDeletion).Round(time.Second)
	}
	subject := strings.Join(names, ",")
	b := Blocker{Kind: BlockerFinalizers, Subject: subject, Facts: facts,
		Actions: []Action{checkOwner(namespace, subject, facts.Owners), PurgeAction(namespace, FlagRemoveFinalizers, subject)}}
	switch crd := findCRD(obs.CRDs, gvr); {
	case crd != nil && crd.Deleting:
		b.Kind, facts.DeletingCRD = BlockerCRDDeleting, crd.Name
	case len(facts.CannotFinish) > 0:
		b.Kind, b.Actions = BlockerOwnerCannotFinish, cannotFinishActions(namespace, subject, facts.CannotFinish)
	case len(facts.OwnersGone) > 0:
		// Nothing will remove them: stripping them is the step, and what
		// their owner was to clean up is left to do by hand.
		gone := strings.Join(facts.OwnersGone, ",")
		b.Kind, b.Actions = BlockerOwnerDeleted, []Action{PurgeAction(namespace, FlagRemoveFinalizers, gone),
			{Kind: ActionCleanUpByHand, Namespace: namespace, Target: gone}}
	default:
		// What the holders say tells why they are not released, whether
		// or not their owner is known to run.
		facts.Said = saidOf(obs, gvr)
		if w := runningOwner(facts.Owners, names); w != nil {
			// Known to run: "check that it runs" would send the reader
			// to what is known. What the holders say, and its log, tell
			// why it does not finish.
			b.Actions[0] = ownerLogs(namespace, *w)
			if facts.Stall = stallOf(obs, gvr, facts); facts.Stall != nil {
				b.Actions = stallActions(namespace, subject, facts.Stall, b.Actions[0])
			}
		}
	}
	return b
}

// heldBy names the first objects of a list that carry finalizers.
func heldBy(list *metav1.PartialObjectMetadataList) []string {
	var out []string
	if list == nil {
		return nil
	}
	for _, item := range list.Items {
		if len(item.Finalizers) > 0 && len(out) < MaxExamples {
			out = append(out, item.Name)
		}
	}
	return out
}

// maxSaid bounds what the holders said that a blocker repeats.
const maxSaid = 3

// saidOf is what the holders of a type last said: their conditions that
// carry an error (notReady kept only those) and the events about them,
// latest first.
func saidOf(obs Observation, gvr schema.GroupVersionResource) []Saying {
	res := resourceName(gvr)
	var out []Saying
	for _, h := range obs.Evidence.Holders {
		if h.Resource != res {
			continue
		}
		for _, c := range h.Conditions {
			if c.Message == "" && c.Reason == "" {
				continue
			}
			source := "condition " + c.Named()
			if c.Reason != "" {
				source += " (" + c.Reason + ")"
			}
			out = append(out, Saying{Object: res + "/" + h.Name, Source: source, Message: c.Message, At: c.LastTransitionTime, Error: c.Error, Missing: c.Missing})
		}
		for _, f := range h.Fields {
			out = append(out, Saying{Object: res + "/" + h.Name, Source: f.Field, Message: f.Value, Error: true, Missing: f.Missing})
		}
	}
	held := heldNames(obs.Snapshot, gvr)
	for _, e := range obs.Evidence.Events {
		if _, name, _ := strings.Cut(e.Object, "/"); held[name] {
			at := e.Last
			out = append(out, Saying{Object: res + "/" + name, Source: "event " + e.Reason, Message: e.Message, At: &at, Missing: e.Missing})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].At, out[j].At
		return a != nil && (b == nil || a.After(*b))
	})
	out, _ = firstN(out, maxSaid)
	return out
}

// waitedLongEnough tells whether content waiting for finalizers has waited
// past the grace period (or the namespace is only imagined deleted).
func waitedLongEnough(obs Observation, c Content) bool {
	if obs.IfDeleted {
		return true
	}
	return c.OldestDeletion != nil && obs.Now.Sub(*c.OldestDeletion) >= obs.Grace
}

// controllerBlocker suspects a missing or stalled namespace controller: no
// conditions long after deletion, or content it would delete still there.
func controllerBlocker(obs Observation, r Report, result deletion.ContentResult) *Blocker {
	if r.Namespace.DeletionTimestamp == nil {
		return nil
	}
	since := obs.Now.Sub(*r.Namespace.DeletionTimestamp)
	if since < obs.Grace {
		return nil
	}
	ns := r.Namespace.Name
	facts := &ControllerFacts{Since: since.Round(time.Second)}
	b := &Blocker{Kind: BlockerControllerNotRunning, Facts: facts,
		Actions: []Action{{Kind: ActionCheckController, Namespace: ns}, PurgeAction(ns, "", "")}}
	if len(obs.Namespace.Status.Conditions) == 0 {
		facts.NoConditions = true
		return b
	}
	if deletable := deletableLeft(obs, result, WebhookRejections(obs)); len(deletable) > 0 {
		facts.Deletable, facts.DeletableMore = firstN(deletable, 5)
		return b
	}
	return nil
}

// deletableLeft names items a pass would delete outright (no finalizers,
// not terminating), unless pods legitimately hold them back: the first of
// each type.
func deletableLeft(obs Observation, result deletion.ContentResult, rejected map[schema.GroupVersionResource]error) []string {
	if result.PodsBlocked {
		return nil
	}
	var out []string
	for gvr, list := range obs.Snapshot.Listed() {
		// A webhook rejecting the DELETE explains it better.
		if rejected[gvr] != nil {
			continue
		}
		for _, item := range list.Items {
			if item.DeletionTimestamp == nil && len(item.Finalizers) == 0 {
				out = append(out, resourceName(gvr)+"/"+item.Name)
				break
			}
		}
	}
	return out
}

func resourceName(gvr schema.GroupVersionResource) string { return deletion.ResourceName(gvr) }

// firstN keeps the first n of s, and says how many more there were.
func firstN[T any](s []T, n int) ([]T, int) {
	if len(s) > n {
		return s[:n:n], len(s) - n
	}
	return s, 0
}

func findCRD(crds []CRD, gvr schema.GroupVersionResource) *CRD {
	for i := range crds {
		if crds[i].Group == gvr.Group && crds[i].Plural == gvr.Resource {
			return &crds[i]
		}
	}
	return nil
}

// conversionDown returns the state of a CRD's conversion webhook backend
// when it is down.
func conversionDown(obs Observation, gvr schema.GroupVersionResource) *ServiceState {
	crd := findCRD(obs.CRDs, gvr)
	if crd == nil || crd.ConversionService == nil {
		return nil
	}
	state, ok := obs.Services[crd.ConversionService.Key()]
	if !ok || !state.Down() {
		return nil
	}
	return &state
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// readOnlyGroups are well-known aggregated APIs that serve no deletable
// namespaced content: deleting their broken APIService loses nothing.
var readOnlyGroups = map[string]bool{"metrics.k8s.io": true, "custom.metrics.k8s.io": true, "external.metrics.k8s.io": true}

// apiServiceName is the name an APIService for a group-version has.
func apiServiceName(groupVersion string) string {
	if i := strings.LastIndex(groupVersion, "/"); i >= 0 {
		return groupVersion[i+1:] + "." + groupVersion[:i]
	}
	return groupVersion
}

func groupOf(groupVersion string) string {
	if i := strings.LastIndex(groupVersion, "/"); i >= 0 {
		return groupVersion[:i]
	}
	return ""
}

// foregroundWaits names the dependents that keep an owner with the
// foregroundDeletion finalizer (the first few, and how many more): the
// garbage collector removes it only once every dependent with
// blockOwnerDeletion is gone.
func foregroundWaits(snap *deletion.Snapshot, owner schema.GroupVersionResource) ([]ForegroundWait, int) {
	owners := map[string]string{}
	if list := snap.Lists[owner]; list != nil {
		for _, item := range list.Items {
			for _, f := range item.Finalizers {
				if f == "foregroundDeletion" {
					owners[string(item.UID)] = item.Name
				}
			}
		}
	}
	var out []ForegroundWait
	for gvr, list := range snap.Listed() {
		for _, item := range list.Items {
			for _, ref := range item.OwnerReferences {
				name, ok := owners[string(ref.UID)]
				if ok && ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
					out = append(out, ForegroundWait{Owner: resourceName(owner) + "/" + name, Dependent: resourceName(gvr) + "/" + item.Name})
				}
			}
		}
	}
	return firstN(out, 5)
}

// waitingOwners are the owners being deleted in the foreground, of
// another type of the namespace or cluster-scoped, that held objects of
// gvr block (blockOwnerDeletion): the first few.
func waitingOwners(obs Observation, gvr schema.GroupVersionResource) []WaitingOwner {
	res := resourceName(gvr)
	held := heldNames(obs.Snapshot, gvr)
	var out []WaitingOwner
	for owner, list := range obs.Snapshot.Listed() {
		if owner == gvr {
			// An owner of the same type names its dependents in its own
			// blocker (foregroundWaits).
			continue
		}
		for _, o := range list.Items {
			if o.DeletionTimestamp == nil || !slices.Contains(o.Finalizers, metav1.FinalizerDeleteDependents) {
				continue
			}
			for _, d := range blockingDependents(obs.Snapshot.Lists[gvr], o.UID) {
				out = append(out, WaitingOwner{Owner: resourceName(owner) + "/" + o.Name, Dependent: res + "/" + d})
			}
		}
	}
	for _, w := range obs.Evidence.ForegroundOwners {
		if name, ok := strings.CutPrefix(w.Dependent, res+"/"); ok && held[name] {
			out = append(out, w)
		}
	}
	out, _ = firstN(out, MaxExamples)
	return out
}

// blockingDependents are the held objects of list whose owner reference
// to uid blocks its deletion.
func blockingDependents(list *metav1.PartialObjectMetadataList, uid types.UID) []string {
	var out []string
	if list == nil {
		return nil
	}
	for _, item := range list.Items {
		if len(item.Finalizers) == 0 {
			continue
		}
		for _, ref := range item.OwnerReferences {
			if ref.UID == uid && ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
				out = append(out, item.Name)
			}
		}
	}
	return out
}

func notSupported(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err)
}
