package purge

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// maxPlanPasses bounds a plan: each escalation that acts needs one more
// pass, and a pass that changes nothing ends the plan.
const maxPlanPasses = 8

// plan plays the force run without changing anything: the controller's
// Delete pass after pass over a snapshot, with the escalations between
// passes, predicted (client) or with every write sent as a dry run so
// webhooks and RBAC answer (server).
func (r *run) plan(ctx context.Context, ns *v1.Namespace) error {
	server := r.Opts.DryRun == DryRunServer
	if ns.DeletionTimestamp == nil {
		r.planNamespaceDelete(ctx, server)
		ns = ns.DeepCopy()
		now := metav1.NewTime(r.now())
		ns.DeletionTimestamp = &now
	}
	obs, err := r.snapshot(ctx, ns)
	if err != nil {
		return err
	}
	if err := r.resolveBypass(ctx, obs); err != nil {
		return err
	}
	r.noteLeftovers(ctx)
	planOps, planNs := deletion.NewPlanOps(obs.Snapshot), deletion.NewPlanNamespaces(ns)
	var ops deletion.Operations = planOps
	var nsClient deletion.NamespaceClient = planNs
	if server {
		// The server answers for itself; a bypass, which a dry run cannot
		// apply, turns its webhooks' refusals into warnings.
		ops = &deletion.ServerDryRunOps{Server: &bypassFilter{Operations: kube.NewMetadataOps(r.Clients, true), r: r}, Plan: planOps}
		if !r.Opts.Orphans { // a former namespace's finalize is not a request
			nsClient = &deletion.ServerDryRunNamespaces{Server: &bypassFilterNs{NamespaceClient: r.Clients.Kube.CoreV1().Namespaces(), r: r}, Plan: planNs}
		}
	} else {
		r.rejections = diagnose.PredictRejections(obs, r.bypassedNames())
		planOps.DeleteErrs, planNs.FinalizeErr = r.rejections.Delete, r.rejections.Finalize
	}
	pods := map[string]*v1.Pod{}
	for i := range obs.Snapshot.Pods {
		pods[obs.Snapshot.Pods[i].Name] = &obs.Snapshot.Pods[i]
	}
	r.deleter = r.newDeleter(nsClient, nil, planOps)
	r.refused = map[string]bool{}
	for pass := 1; pass <= maxPlanPasses; pass++ {
		if !r.planPass(ctx, pass, ops, planOps, planNs, pods, server) {
			break
		}
	}
	if r.Opts.Orphans && len(r.report.Strips) > 0 {
		r.report.Warnings = appendNew(r.report.Warnings, fmt.Sprintf("the API server accepts finalizer removals only in a namespace that exists: --force creates namespace %s, deletes it again at once, and finishes its deletion", r.Opts.Namespace))
	}
	r.report.Outcome = OutcomePlanned
	return nil
}

// planPass plays one pass and the escalations after it; it tells whether
// another pass would change anything.
func (r *run) planPass(ctx context.Context, pass int, ops deletion.Operations, planOps *deletion.PlanOps, planNs *deletion.PlanNamespaces,
	pods map[string]*v1.Pod, server bool) bool {
	rep := r.report
	rec := newRecorder(ops, planOps.Count, false, StepPlanned, pass)
	r.deleter.Ops = rec
	res, err := r.deleter.Delete(ctx, r.Opts.Namespace)
	if res.Stage != deletion.StageGone {
		rep.Passes = pass
	}
	steps := rec.Steps()
	rep.Steps = append(rep.Steps, steps...)
	for _, st := range steps {
		if st.Status == StepFailed {
			rep.Errors = appendNew(rep.Errors, fmt.Sprintf("%s %s: %s", st.Verb, st.Resource, st.Error))
		}
	}
	if res.Content != nil {
		conditions := rep.Conditions
		r.recordContent(rec, res.Content)
		if pass > 1 {
			// The controller writes the first pass's conditions now.
			rep.Conditions = conditions
		}
	}
	switch res.Stage {
	case deletion.StageGone, deletion.StageNotDeleting:
		return false
	case deletion.StageAlreadyFinalized:
		return r.planNamespaceFinalizers(ctx, res.Namespace, planNs, server)
	case deletion.StageFinalized:
		if err != nil {
			rep.Finalize = Finalize{Cause: FinalizeRejected, Error: err.Error()}
			rep.Errors = appendNew(rep.Errors, "finalize: "+err.Error())
			return false
		}
		finalized(&rep.Finalize, res, pass)
		if len(rep.Finalize.Kept) > 0 {
			rep.Warnings = appendNew(rep.Warnings, fmt.Sprintf("spec.finalizers keeps %v after finalizing: add --remove-namespace-finalizers if their owner is gone", rep.Finalize.Kept))
			return false
		}
		return true
	}
	notFinalized(&rep.Finalize, res, err)
	played := 0
	if r.Opts.Escalations.strips() {
		played += r.planStrips(ctx, res.Content, planOps, server)
	}
	if r.Opts.Escalations.ForceDeletePods {
		played += r.planForcePods(ctx, planOps, pods, server)
	}
	return played > 0
}

func (r *run) planNamespaceDelete(ctx context.Context, server bool) {
	step := Step{Verb: "delete", Resource: "namespaces", Name: r.Opts.Namespace, Objects: 1, Status: StepPlanned}
	if server {
		err := r.Clients.Kube.CoreV1().Namespaces().Delete(ctx, r.Opts.Namespace, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			step.Status, step.Error = StepFailed, err.Error()
			r.report.Errors = append(r.report.Errors, "delete namespace: "+err.Error())
		}
	}
	r.report.Steps = append(r.report.Steps, step)
}

// planNamespaceFinalizers plays the escalation that empties the
// namespace's own metadata.finalizers; without it the plan ends there.
func (r *run) planNamespaceFinalizers(ctx context.Context, ns *v1.Namespace, planNs *deletion.PlanNamespaces, server bool) bool {
	if len(ns.Finalizers) == 0 {
		return false
	}
	if !r.Opts.Escalations.RemoveNamespaceFinalizers {
		r.report.Finalize.Cause = FinalizeNamespaceHeld
		r.report.Finalize.Kept = ns.Finalizers
		return false
	}
	step := Step{Verb: "patch", Resource: "namespaces", Name: ns.Name, Objects: 1, Status: StepPlanned}
	if server {
		if err := r.patchNamespaceFinalizers(ctx, ns, true); err != nil {
			step.Status, step.Error = StepFailed, err.Error()
			r.report.Errors = appendNew(r.report.Errors, "patch namespace metadata.finalizers: "+err.Error())
		}
	}
	r.report.Steps = append(r.report.Steps, step)
	if step.Status == StepFailed {
		return false
	}
	planNs.RemoveMetadataFinalizers()
	return true
}

// planStrips lists the finalizer removals the escalation flags ask for on
// what the pass left, sends them as dry-run patches in server mode, and
// plays the accepted ones on the plan. It returns how many it played.
func (r *run) planStrips(ctx context.Context, content *deletion.ContentResult, planOps *deletion.PlanOps, server bool) int {
	played := 0
	for _, gvr := range stripCandidates(content) {
		list, err := planOps.List(ctx, gvr, r.Opts.Namespace)
		if err != nil {
			continue
		}
		for _, item := range list.Items {
			strip := r.Opts.Escalations.match(item.Finalizers)
			if len(strip) == 0 || r.refused[deletion.ResourceName(gvr)+"/"+item.Name] {
				continue
			}
			s := Strip{Resource: deletion.ResourceName(gvr), Name: item.Name, Finalizers: strip, Status: StripPlanned}
			err := r.rejections.Update[gvr]
			if server && !r.Opts.Orphans { // no namespace to send a patch to yet
				err = r.patchFinalizers(ctx, gvr, item.Name, item.ResourceVersion, without(item.Finalizers, strip), true)
				err = r.unlessBypassed(err, "strip "+s.Resource+"/"+item.Name)
			}
			if err != nil {
				s.Status, s.Error = StripFailed, err.Error()
				r.report.Errors = appendNew(r.report.Errors, fmt.Sprintf("strip %s/%s: %v", s.Resource, item.Name, err))
			}
			r.report.Strips = appendStrip(r.report.Strips, s)
			if s.Status == StripFailed {
				r.refused[s.Resource+"/"+s.Name] = true
			}
			if s.Status == StripPlanned {
				planOps.RemoveFinalizers(gvr, item.Name, strip)
				played++
			}
		}
	}
	return played
}

// patchFinalizers sets an object's finalizers with a merge patch that
// carries the resourceVersion it was computed from: if anyone changed the
// object since, the server answers Conflict instead of clobbering it.
func (r *run) patchFinalizers(ctx context.Context, gvr schemaGVR, name, rv string, keep []string, dryRun bool) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": rv, "finalizers": keep}})
	if err != nil {
		return err
	}
	opts := metav1.PatchOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err = r.Clients.Metadata.Resource(gvr).Namespace(r.Opts.Namespace).Patch(ctx, name, types.MergePatchType, patch, opts)
	return err
}

// patchNamespaceFinalizers empties the namespace's metadata.finalizers,
// guarded by its resourceVersion.
func (r *run) patchNamespaceFinalizers(ctx context.Context, ns *v1.Namespace, dryRun bool) error {
	patch := fmt.Sprintf(`{"metadata":{"resourceVersion":%q,"finalizers":null}}`, ns.ResourceVersion)
	opts := metav1.PatchOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err := r.Clients.Kube.CoreV1().Namespaces().Patch(ctx, ns.Name, types.MergePatchType, []byte(patch), opts)
	return err
}

// appendStrip adds s unless the same result for the same object is already
// listed (later passes meet it again).
func appendStrip(list []Strip, s Strip) []Strip {
	for _, x := range list {
		if x.Resource == s.Resource && x.Name == s.Name && x.Status == s.Status {
			return list
		}
	}
	return append(list, s)
}

func sortedGVRs(m map[schemaGVR]int) []schemaGVR {
	out := make([]schemaGVR, 0, len(m))
	for gvr := range m {
		out = append(out, gvr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
