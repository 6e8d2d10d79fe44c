package printer

import (
	"fmt"
	"strings"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// PurgeWords fills the report's words (message, step and strip results,
// the finalize reason) from its typed fields: the human view prints them,
// and the JSON keeps them for people and older consumers.
func PurgeWords(r *purge.Report) {
	// Lists are [] in JSON, never null.
	r.ForcedPods = nonNil(r.ForcedPods)
	r.Bypassed = nonNil(r.Bypassed)
	r.Message = purgeMessage(r)
	for i := range r.Steps {
		r.Steps[i].Result = stepWords(r.Steps[i])
	}
	for i := range r.Strips {
		r.Strips[i].Result = stripWords(r.Strips[i])
	}
	r.Finalize.Reason = finalizeWords(r.Finalize)
	for i := range r.ForcedPods {
		r.ForcedPods[i].Result = forcedWords(r.ForcedPods[i])
	}
	for i := range r.Bypassed {
		r.Bypassed[i].Result = bypassWords(r.Bypassed[i])
	}
}

func forcedWords(f purge.ForcedPod) string {
	switch f.Status {
	case purge.ForcePlanned:
		if f.AfterSeconds > 0 {
			return fmt.Sprintf("would delete, once its grace period ends (%ds)", f.AfterSeconds)
		}
		return "would delete"
	case purge.ForceDeleted:
		return "deleted"
	case purge.ForceGone:
		return "gone before its turn"
	case purge.ForceFailed:
		return "failed: " + f.Error
	}
	return string(f.Status)
}

func bypassWords(b purge.Bypass) string {
	switch b.Status {
	case purge.BypassPlanned:
		return "would exclude the namespace during the run, then restore"
	case purge.BypassRestored:
		return "excluded during the run, restored"
	case purge.BypassLeftover:
		return "left excluding the namespace by a killed run: restored first"
	case purge.BypassFailed:
		return "failed: " + b.Error
	case purge.BypassRestoreFailed:
		return "NOT restored: " + b.RestoreCommand
	}
	return string(b.Status)
}

func purgeMessage(r *purge.Report) string {
	switch r.Outcome {
	case purge.OutcomePlanned:
		return fmt.Sprintf("dry run (%s): nothing was changed", r.Mode)
	case purge.OutcomeGone:
		if r.Orphans {
			return "they are gone"
		}
		return fmt.Sprintf("namespace %s is gone", r.Namespace)
	case purge.OutcomeRefused:
		return "permissions missing: nothing was changed"
	}
	stop := r.Stop
	if stop == nil {
		return ""
	}
	switch stop.Reason {
	case purge.StopInterrupted:
		return "interrupted; everything changed so far is listed below and saved in the backup; re-run purge to continue"
	case purge.StopTimeout:
		return fmt.Sprintf("namespace %s still exists after --timeout=%s; re-run purge to continue where it stopped", r.Namespace, stop.Timeout)
	case purge.StopRecreated:
		who := "a controller"
		if len(stop.CreatedBy) > 0 {
			who = "a controller (field manager " + strings.Join(stop.CreatedBy, ", ") + ")"
		}
		return fmt.Sprintf("%s kept coming back in namespace %s in %d passes: %s still creates it and its API admits creates in a terminating namespace; stop that controller, then re-run purge",
			strings.Join(stop.Recreated, ", "), r.Namespace, purge.RecreationPasses, who)
	}
	return fmt.Sprintf("stopped: %s; re-run purge to continue where it stopped", stop.Error)
}

func stepWords(s purge.Step) string {
	switch s.Status {
	case purge.StepFailed:
		return "failed: " + s.Error
	case purge.StepSkipped:
		return "not sent: nothing to delete"
	}
	switch {
	case s.Resource == "namespaces" && s.Verb == "delete":
		if s.Status == purge.StepPlanned {
			return "would delete the namespace first (--delete-namespace)"
		}
		return "deleted the namespace first (--delete-namespace)"
	case s.Resource == "namespaces" && s.Verb == "patch":
		return "would remove its metadata.finalizers (--remove-namespace-finalizers)"
	}
	words := s.Verb
	if s.Name != "" {
		words += " " + s.Name
	}
	if s.Status == purge.StepPlanned {
		return "would " + words
	}
	return words
}

func stripWords(s purge.Strip) string {
	switch s.Status {
	case purge.StripPlanned:
		return "would remove"
	case purge.StripRemoved:
		return "removed"
	case purge.StripFailed:
		return "failed: " + s.Error
	case purge.StripGone:
		return "gone before its finalizers were removed"
	case purge.StripNothingLeft:
		return "no matching finalizer left"
	case purge.StripLeftAlone:
		return "left alone: put back by a live controller"
	}
	return string(s.Status)
}

func finalizeWords(f purge.Finalize) string {
	switch f.Cause {
	case purge.FinalizeNothingRemains:
		return "nothing remains"
	case purge.FinalizeAfterEscalations:
		return "once the escalations above have acted, a later pass finds nothing left"
	case purge.FinalizeDespiteDiscovery:
		return "discovery failed for some groups; finalizing anyway as asked (their content stays orphaned in storage)"
	case purge.FinalizeContentRemains:
		words := fmt.Sprintf("content remains (estimate %ds)", f.Estimate)
		if f.PodsFirst {
			words += "; pods go first, so what else remains shows only once they are gone"
		}
		return words
	case purge.FinalizeDiscoveryFailed:
		return "discovery failed for some groups: the controller never finalizes then (add --finalize-despite-discovery-failure to do it anyway)"
	case purge.FinalizeDeletionErrors:
		return "deletion errors: " + f.Error
	case purge.FinalizeRejected:
		return "the server rejects finalizing: " + f.Error
	case purge.FinalizeOtherTokens:
		return fmt.Sprintf("spec.finalizers keeps %v, which only their owner removes (add --remove-namespace-finalizers if it is gone)", f.Kept)
	case purge.FinalizeNamespaceHeld:
		return fmt.Sprintf("the namespace's own metadata.finalizers hold it: %v (add --remove-namespace-finalizers if their owner is gone)", f.Kept)
	}
	return ""
}

// orderingWords says which deletion order ns-doctor followed, and why.
func orderingWords(o deletion.Ordering) string {
	order := "unordered deletion (pods with everything else)"
	if o.Ordered {
		order = "ordered deletion (pods first)"
	}
	version := o.ServerVersion
	if version == "" {
		version = "version unknown"
	}
	switch o.Source {
	case deletion.FromFlag:
		return fmt.Sprintf("cluster %s; %s, as --ordered-deletion says", version, order)
	case deletion.FromUnknownVersion:
		return fmt.Sprintf("cluster %s; %s assumed, as from 1.33 (--ordered-deletion=on|off to choose)", version, order)
	}
	return fmt.Sprintf("cluster %s; %s, its namespace controller's default", version, order)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// ProgressLine is a force run's progress in a line, for a live display.
func ProgressLine(p purge.Progress, now time.Time) string {
	line := fmt.Sprintf("%s: pass %d, %d of %d types done, %d objects deleted", p.Namespace, p.Pass, p.TypesDone, p.Types, p.Deleted)
	if p.Done {
		line = fmt.Sprintf("%s: %d passes, %d objects deleted", p.Namespace, p.Pass, p.Deleted)
	}
	if len(p.Remaining) > 0 {
		var parts []string
		for i, rem := range p.Remaining {
			if i == 3 {
				parts = append(parts, fmt.Sprintf("+%d types", len(p.Remaining)-3))
				break
			}
			parts = append(parts, fmt.Sprintf("%s %d", rem.Resource, rem.Count))
		}
		line += "; left: " + strings.Join(parts, ", ")
	}
	if !p.Until.IsZero() && !p.Done {
		line += fmt.Sprintf("; waiting for %s until %s (%s)", p.For, p.Until.Format("15:04:05"), p.Until.Sub(now).Round(time.Second))
	}
	return line
}
