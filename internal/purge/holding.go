package purge

import (
	"context"
	"sort"

	"github.com/ns-doctor/ns-doctor/internal/apierror"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// holding says what holds the namespace when the run leaves it there (a
// plan that would not finalize, a force run that stopped): explain's
// diagnosis of what the run last saw, each blocker with the purge flag
// this run lacks that gets past it. Only the types the last pass could
// not recount are read again: no second sweep of the namespace.
func (r *passLoop) holding(ctx context.Context) {
	if r.rec == nil || !r.report.stays() {
		return
	}
	diag := r.insp.Diagnose(ctx, r.namespaceSeen(), r.lastSeen(ctx), r.disc, r.opts.inspectOptions())
	var holding []Hold
	for _, b := range diag.Blocking() {
		if b.Kind == diagnose.BlockerControllerNotRunning {
			continue // purge ran the controller's pass itself
		}
		holding = append(holding, hold(b, r.opts.Escalations))
	}
	for _, b := range denials(r.report.Failures, r.ns) {
		if !alreadyHeld(holding, b) {
			holding = append(holding, hold(b, r.opts.Escalations))
		}
	}
	// What a purge flag gets past comes first: it is the step to take.
	sort.SliceStable(holding, func(i, j int) bool { return holding[i].Step != nil && holding[j].Step == nil })
	r.l.update(func(rep *Report) { rep.Holding = holding })
}

// lastSeen is the namespace's content as the last pass left it: its
// recounts, the types it could not recount read again, and the pods in
// full when some remain.
func (r *passLoop) lastSeen(ctx context.Context) *deletion.Snapshot {
	snap := r.rec.seen()
	if c := r.lastContent; c != nil {
		for _, gvr := range c.Failed {
			if _, ok := snap.Lists[gvr]; ok {
				continue
			}
			if list, err := r.pre.w.list(ctx, gvr, r.ns); err == nil {
				snap.Lists[gvr] = list
			} else {
				snap.ListErrs[gvr] = err
			}
		}
	}
	snap.Pods = r.pre.tally.seenPods()
	return snap
}

// stays tells whether the run leaves the namespace there (or a plan says
// it would).
func (r *Report) stays() bool {
	switch r.Outcome {
	case OutcomeGone, OutcomeRefused:
		return false
	case OutcomePlanned:
		gone := r.Finalize.Cause == FinalizeNothingRemains || r.Finalize.Cause == FinalizeAfterEscalations || r.Finalize.Cause == FinalizeDespiteDiscovery
		return !r.Finalize.Would || !gone
	}
	return true
}

// hold is a blocker with the purge flag a run asked for these lacks to
// get past it.
func hold(b diagnose.Blocker, asked Asked) Hold {
	h := Hold{Blocker: b}
	if a, ok := b.PurgeStep(); ok && !asked.Gives(a) {
		h.Step = &a
	}
	return h
}

// denials are the webhooks that answered a run's requests (its failures)
// in namespace with a denial: no diagnosis sees those, only a request does.
func denials(failures []Failure, namespace string) []diagnose.Blocker {
	var out []diagnose.Blocker
	seen := map[string]bool{}
	for _, f := range failures {
		ref := f.Refusal
		if ref == nil || !ref.Denied || ref.By != diagnose.RefusedByWebhook && ref.By != diagnose.RefusedByPolicy {
			continue
		}
		_, message, _ := diagnose.DenialOf(f.Error)
		d := &diagnose.DenialFacts{Webhook: ref.Webhook, Configuration: ref.Configuration, ConfigurationKind: ref.ConfigurationKind,
			Message: message, Source: diagnose.DeniedPurge, Static: ref.Static}
		if ref.By == diagnose.RefusedByPolicy {
			d.Webhook, d.Policy, d.Binding = ref.Policy, true, ref.Binding
			if ps := apierror.PolicyDenials(f.Error); len(ps) > 0 {
				d.Message = ps[0].Denial
			}
		}
		if b := d.Blocker(namespace); !seen[b.Subject] {
			seen[b.Subject] = true
			out = append(out, b)
		}
	}
	return out
}

// alreadyHeld tells whether a hold of b's kind and subject is in list.
func alreadyHeld(list []Hold, b diagnose.Blocker) bool {
	for _, h := range list {
		if h.Blocker.Kind == b.Kind && h.Blocker.Subject == b.Subject {
			return true
		}
	}
	return false
}
