package purge

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// plan runs one pass without changing anything: predicted from a snapshot
// (client), or with every deletion, patch and finalize sent as a dry run so
// webhooks and RBAC answer (server).
func (p *Purger) plan(ctx context.Context, r *Report, ns *v1.Namespace) error {
	server := p.Opts.Mode == ModeServer
	if ns.DeletionTimestamp == nil {
		if err := p.planNamespaceDelete(ctx, r, server); err != nil {
			return err
		}
		ns = ns.DeepCopy()
		now := metav1.NewTime(p.now())
		ns.DeletionTimestamp = &now
	}
	disc, obs, err := p.snapshot(ctx, ns)
	if err != nil {
		return err
	}
	snap := obs.Snapshot
	planOps := deletion.NewPlanOps(snap)
	if !server {
		// The server answers for itself in a server dry run.
		planOps.DeleteErrs = diagnose.WebhookRejections(obs)
	}
	var ops deletion.Operations = planOps
	if server {
		ops = &deletion.ServerDryRunOps{Server: &deletion.MetadataOps{Client: p.Clients.Metadata, DryRun: true}, Plan: planOps}
	}
	rec := newRecorder(ops, snapshotCounter(snap), true)
	result := p.contentDeleter(disc, rec, planOps).DeleteAllContent(ctx, ns)
	r.Passes = 1
	first := r.Steps // the namespace DELETE, if planned
	recordPass(r, rec, result)
	r.Steps = append(first, r.Steps...)
	for _, st := range rec.steps {
		if strings.HasPrefix(st.Result, "failed: ") {
			r.Errors = append(r.Errors, fmt.Sprintf("%s %s: %s", st.Verb, st.Resource, strings.TrimPrefix(st.Result, "failed: ")))
		}
	}
	left := p.planStrips(ctx, r, planOps, result, ns.Name, server)

	would, reason := p.finalizeDecision(result, disc)
	if !would && len(r.Strips) > 0 && left == 0 && !result.PodsBlocked {
		// Stripping leaves nothing: the next pass would find the namespace
		// empty, unless the pass failed for another reason.
		if after, why := p.finalizeDecision(deletion.Result{Err: result.Err}, disc); after {
			would, reason = true, "on the next pass, once the finalizers above are removed nothing remains"
		} else {
			reason = why
		}
	} else if would && left > 0 {
		would, reason = false, fmt.Sprintf("%d object(s) would still remain after the pass", left)
	}
	if result.PodsBlocked && len(r.Strips) > 0 {
		reason += "; pods go first, so what else remains shows only once they are gone"
	}
	sort.Slice(r.Strips, func(i, j int) bool {
		return r.Strips[i].Resource+"/"+r.Strips[i].Name < r.Strips[j].Resource+"/"+r.Strips[j].Name
	})
	drop := dropTokens(ns, p.Opts.RemoveNamespaceFinalizers)
	r.Finalize = Finalize{Would: would, Remove: tokenNames(drop, ns), Reason: reason}
	if kept := deletion.KeptFinalizers(ns, drop); would && len(kept) > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("spec.finalizers keeps %v after finalizing: add --remove-namespace-finalizers if their owner is gone", kept))
	}
	if would && server {
		_, err := deletion.FinalizeFunc(p.Clients.Kube.CoreV1().Namespaces(), drop, true)(ctx, ns)
		if err != nil {
			r.Finalize.Would, r.Finalize.Reason = false, "the server rejects finalizing: "+err.Error()
			r.Errors = append(r.Errors, "finalize: "+err.Error())
		}
	}
	r.Outcome = OutcomePlanned
	r.Message = fmt.Sprintf("dry run (%s): nothing was changed", p.Opts.Mode)
	return nil
}

func (p *Purger) planNamespaceDelete(ctx context.Context, r *Report, server bool) error {
	step := Step{Verb: "delete", Resource: "namespaces", Objects: 1, Result: "would delete the namespace first (--delete-namespace)"}
	if server {
		err := p.Clients.Kube.CoreV1().Namespaces().Delete(ctx, r.Namespace, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			step.Result = "failed: " + err.Error()
			r.Errors = append(r.Errors, "delete namespace: "+err.Error())
		}
	}
	r.Steps = append(r.Steps, step)
	return nil
}

// planStrips lists the finalizer removals the escalation flags ask for on
// what the pass would leave, sending them as dry-run patches in server mode.
// It returns how many objects would still remain afterwards.
func (p *Purger) planStrips(ctx context.Context, r *Report, plan *deletion.PlanOps, result deletion.Result, ns string, server bool) int {
	left := 0
	for gvr := range result.Totals.GVRToNumRemaining {
		list, err := plan.List(ctx, gvr, ns)
		if err != nil {
			continue
		}
		for _, item := range list.Items {
			strip := matchFinalizers(item.Finalizers, p.Opts.RemoveFinalizers, p.Opts.RemoveAllFinalizers)
			if len(strip) == 0 || len(strip) < len(item.Finalizers) {
				left++
			}
			if len(strip) == 0 {
				continue
			}
			s := Strip{Resource: resourceName(gvr), Name: item.Name, Finalizers: strip, Result: "would remove"}
			if server {
				if err := p.patchFinalizers(ctx, gvr, ns, item.Name, item.ResourceVersion, without(item.Finalizers, strip), true); err != nil {
					s.Result = "failed: " + err.Error()
					r.Errors = append(r.Errors, fmt.Sprintf("strip %s/%s: %v", resourceName(gvr), item.Name, err))
				}
			}
			r.Strips = append(r.Strips, s)
		}
	}
	return left
}

// patchFinalizers sets an object's finalizers with a merge patch that
// carries the resourceVersion it was computed from: if anyone changed the
// object since, the server answers Conflict instead of clobbering it.
func (p *Purger) patchFinalizers(ctx context.Context, gvr schema.GroupVersionResource, ns, name, rv string, keep []string, dryRun bool) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": rv, "finalizers": keep}})
	if err != nil {
		return err
	}
	opts := metav1.PatchOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err = p.Clients.Metadata.Resource(gvr).Namespace(ns).Patch(ctx, name, types.MergePatchType, patch, opts)
	return err
}

// snapshotCounter counts a resource's items in the snapshot.
func snapshotCounter(snap *deletion.Snapshot) func(schema.GroupVersionResource) int {
	return func(gvr schema.GroupVersionResource) int {
		if l := snap.Lists[gvr]; l != nil {
			return len(l.Items)
		}
		return 0
	}
}
