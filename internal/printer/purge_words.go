package printer

import (
	"fmt"
	"strings"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/apierror"
	"github.com/ns-doctor/ns-doctor/internal/compat"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// The words of a purge report: everything purge says in English is said
// here, from the typed report internal/purge returns.

// PurgeMessage is a run's headline.
func PurgeMessage(r *purge.Report) string {
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
		return fmt.Sprintf("namespace %s still exists after --timeout=%s%s; re-run purge to continue where it stopped", r.Namespace, stop.Timeout, firstHold(r))
	case purge.StopRecreated:
		who := "a controller"
		if len(stop.CreatedBy) > 0 {
			who = "a controller (field manager " + strings.Join(stop.CreatedBy, ", ") + ")"
		}
		return fmt.Sprintf("%s kept coming back in namespace %s in %d passes: %s still creates it and its API admits creates in a terminating namespace; stop that controller, then re-run purge",
			listed(stop.Recreated, ", ", "content"), r.Namespace, purge.RecreationPasses, who)
	}
	if stop.Reason == purge.StopBlocked {
		return blockedMessage(r)
	}
	return fmt.Sprintf("stopped: %s; re-run purge to continue where it stopped", stop.Error)
}

// blockedMessage says why a run stopped early, and the step past it.
func blockedMessage(r *purge.Report) string {
	words := fmt.Sprintf("namespace %s cannot finish, and waiting will not help: only an outside action or another flag clears what holds it", r.Namespace)
	if r.Stop.After != "" {
		words = fmt.Sprintf("stopped after %s: namespace %s cannot finish, and waiting will not help", r.Stop.After, r.Namespace)
	}
	return words + firstHold(r)
}

// firstHold is what holds the namespace first, and the step past it, for
// the run's one error line; nothing when the run saw no blocker.
func firstHold(r *purge.Report) string {
	if len(r.Holding) == 0 {
		return ""
	}
	h := r.Holding[0]
	return fmt.Sprintf("; %s: %s; next: %s", h.Blocker.Kind, WordsOf(h.Blocker).Summary, HoldStep(r, h))
}

// StepResult says what became of one request.
func StepResult(s purge.Step) string {
	switch s.Status {
	case purge.StepFailed:
		return "failed: " + refusalCell(s.Refusal, s.Error)
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
		if s.Status == purge.StepPlanned {
			return "would remove its metadata.finalizers (--remove-namespace-finalizers)"
		}
		return "removed its metadata.finalizers (--remove-namespace-finalizers)"
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

// RowResult says what became of one row, in its shape's words; a failure
// with who refused it.
func RowResult(row purge.Row) string {
	if sh, ok := purge.ShapeOf(row.Kind); ok {
		if words := sh.Result(row); words != "" {
			return words
		}
	}
	if row.Status == purge.RowFailed {
		return "failed: " + refusalCell(row.Refusal, row.Error)
	}
	return string(row.Status)
}

// FinalizeReason says why the namespace is, or is not, finalized.
func FinalizeReason(f purge.Finalize) string {
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
		return fmt.Sprintf("spec.finalizers keeps %s, which only their owner removes (add --remove-namespace-finalizers if it is gone)", listed(f.Kept, ", ", "tokens other than kubernetes"))
	case purge.FinalizeNamespaceHeld:
		return fmt.Sprintf("the namespace's own metadata.finalizers hold it: %s (add --remove-namespace-finalizers if their owner is gone)", listed(f.Kept, ", ", "its finalizers"))
	}
	return ""
}

// ChangeWords says a change made to the cluster.
func ChangeWords(c purge.Change, namespace string) string {
	if words, ok := purge.ChangeWords(c, namespace); ok {
		return words // an escalation's: its entry words it
	}
	switch c.Kind {
	case purge.ChangeDeletedContent:
		return fmt.Sprintf("%s %s: %d objects, saved first", c.Verb, c.Resource, c.Objects)
	case purge.ChangeFinalized:
		if len(c.Finalizers) == 0 {
			return fmt.Sprintf("finalized namespace %s", c.Name)
		}
		return fmt.Sprintf("finalized namespace %s (removed spec.finalizers %s)", c.Name, strings.Join(c.Finalizers, ", "))
	case purge.ChangeNoLeftovers:
		return fmt.Sprintf("no leftovers of former namespace %s remain", c.Name)
	case purge.ChangeCreatedNamespace:
		return fmt.Sprintf("created namespace %s: the API server accepts finalizer removals only in a namespace that exists", c.Name)
	case purge.ChangeDeletedNamespaceAgain:
		return fmt.Sprintf("deleted namespace %s again: purge finishes its deletion", c.Name)
	}
	return string(c.Kind)
}

// EscalationsWords names the escalations a run was asked for, as flags.
func EscalationsWords(used []purge.Used) string {
	out := make([]string, 0, len(used))
	for _, u := range used {
		out = append(out, flagArg(diagnose.Action{Flag: u.Flag, Value: strings.Join(u.Values, ",")}))
	}
	return strings.Join(out, " ")
}

// WarningWords says a warning.
func WarningWords(w purge.Warning, r *purge.Report) string {
	if words, ok := purge.WarningWords(w); ok {
		return words // an escalation's: its entry words it
	}
	kind := strings.ToLower(w.Resource)
	switch w.Kind {
	case purge.WarnUnreadableProven:
		return fmt.Sprintf("%s/%s cannot be read from storage, proven: the API server accepted the unsafe DELETE as a dry run; for real it removes the object skipping its finalizers and admission: kubectl delete --raw '%s?ignoreStoreReadErrorWithClusterBreakingPotential=true'", kind, w.Name, w.Request)
	case purge.WarnUnreadableDecodable:
		return fmt.Sprintf("%s/%s is decodable now (the unsafe DELETE's dry run answered 409): it was read since the list failed; no unsafe delete is needed, run purge again", kind, w.Name)
	case purge.WarnRevivalNeeded:
		if r.Mode == purge.DryRunNone {
			return fmt.Sprintf("the API server accepts finalizer removals only in a namespace that exists: purge created namespace %s and deleted it again at once", w.Name)
		}
		return fmt.Sprintf("the API server accepts finalizer removals only in a namespace that exists: --force creates namespace %s, deletes it again at once, and finishes its deletion", w.Name)
	case purge.WarnTokensKept:
		return fmt.Sprintf("spec.finalizers keeps %s after finalizing: add --remove-namespace-finalizers if their owner is gone", listed(w.Finalizers, ", ", "tokens other than kubernetes"))
	case purge.WarnServerRetried:
		return "the API server was unavailable for a while; purge retried"
	case purge.WarnRecreated:
		return fmt.Sprintf("%s/%s was created anew while the namespace was terminating: a controller still creates it", w.Resource, w.Name)
	case purge.WarnConflict:
		return fmt.Sprintf("%s/%s changed while purge worked on it; re-read and retried", w.Resource, w.Name)
	case purge.WarnPutBack:
		which := "a finalizer"
		if len(w.Finalizers) > 0 {
			which = "finalizer " + strings.Join(w.Finalizers, ", ")
		}
		return fmt.Sprintf("%s/%s: %s was put back by a live controller after purge removed it; purge does not fight it: stop that controller or let it finish",
			w.Resource, w.Name, which)
	case purge.WarnBypassLeftover:
		if w.Restored {
			return fmt.Sprintf("%s %s still excluded namespace %s after an earlier run was killed: restored first", kind, w.Name, r.Namespace)
		}
		return fmt.Sprintf("%s %s still excludes namespace %s: an earlier run was killed before restoring it; purge --force restores it first", kind, w.Name, r.Namespace)
	case purge.WarnBypassedRefusal:
		return fmt.Sprintf("%s: refused now by a webhook --bypass-webhook excludes the namespace from during the run (%s)", w.Request, w.Text)
	case purge.WarnAPIServer:
		return w.Text
	}
	return string(w.Kind)
}

// FailureWords says a refused request, and how often it was refused.
func FailureWords(f purge.Failure, r *purge.Report) string {
	var words string
	switch {
	case f.Verb == "restore":
		words = fmt.Sprintf("%s %s still excludes namespace %s: re-run purge --force on it, which restores it first", strings.ToLower(f.Resource), f.Name, r.Namespace)
		if f.Path != "" {
			words = fmt.Sprintf("%s %s still excludes namespace %s: restore it with: %s", strings.ToLower(f.Resource), f.Name, r.Namespace, purge.RestoreCommand(f.Path))
		}
		return words
	case f.Verb == "finalize":
		words = "finalize: " + f.Error
	case f.Verb == "discover":
		words = fmt.Sprintf("discover %s: %s", f.Resource, f.Error)
	case f.Verb == "pass":
		words = fmt.Sprintf("%s: %s", f.Resource, f.Error)
	case f.Resource == "namespaces" && f.Verb == "delete":
		words = "delete namespace: " + f.Error
	case f.Resource == "namespaces" && f.Verb == "patch":
		words = "patch namespace metadata.finalizers: " + f.Error
	case f.Verb == "strip":
		words = fmt.Sprintf("strip %s/%s: %s", f.Resource, f.Name, f.Error)
	case f.Verb == "force-delete":
		words = fmt.Sprintf("force-delete pod %s: %s", f.Name, f.Error)
	default:
		words = fmt.Sprintf("%s %s: %s", f.Verb, f.Resource, f.Error)
	}
	if f.Refusal != nil {
		words = strings.Replace(words, ": ", ": "+RefusalWords(f.Refusal)+": ", 1)
	}
	if f.Count > 1 {
		words += fmt.Sprintf(" (%d times, %s to %s)", f.Count, f.First.Format("15:04:05"), f.Last.Format("15:04:05"))
	}
	return words
}

func changesWords(r *purge.Report) []string {
	out := make([]string, 0, len(r.Changes))
	for _, c := range r.Changes {
		out = append(out, ChangeWords(c, r.Namespace))
	}
	return out
}

// changesUntold are the words of the changes no row tells, and whether
// rows told some.
func changesUntold(r *purge.Report) ([]string, bool) {
	out := []string{}
	told := false
	for _, c := range r.Changes {
		if _, ok := purge.RowOf(c.Kind); ok {
			told = true
			continue
		}
		out = append(out, ChangeWords(c, r.Namespace))
	}
	return out, told
}

func warningsWords(r *purge.Report) []string {
	out := make([]string, 0, len(r.Warnings))
	for _, w := range r.Warnings {
		out = append(out, WarningWords(w, r))
	}
	return out
}

func failuresWords(r *purge.Report) []string {
	out := make([]string, 0, len(r.Failures))
	for _, f := range r.Failures {
		out = append(out, FailureWords(f, r))
	}
	return out
}

// orderingWords says which deletion order ns-doctor followed, and why.
func orderingWords(o compat.Ordering) string {
	order := "unordered deletion (pods with everything else)"
	if o.Ordered {
		order = "ordered deletion (pods first)"
	}
	version := o.ServerVersion
	if version == "" {
		version = o.Server.Version
	}
	if version == "" {
		version = "version unknown"
	}
	switch {
	case o.Server.Known && o.Server.Has(compat.OrderingGateRemoved):
		return fmt.Sprintf("cluster %s; %s, the only order from 1.37", version, order)
	case o.Source == compat.FromFlag:
		return fmt.Sprintf("cluster %s; %s, as --ordered-deletion says", version, order)
	case o.Source == compat.FromUnknownVersion:
		return fmt.Sprintf("cluster %s; %s assumed, as from 1.33 (--ordered-deletion=on|off to choose)", version, order)
	}
	return fmt.Sprintf("cluster %s; %s, its namespace controller's default", version, order)
}

// serverWords names what else ns-doctor assumed of the server's version,
// "" when nothing newer than 1.36 is assumed.
func serverWords(o compat.Ordering) string {
	s := serverOf(o)
	if !strings.Contains(s.Words(), ": ") {
		return ""
	}
	return "assumed of " + s.Words()
}

// progressLine is a force run's progress in a line, for a live display.
func progressLine(p *runState, now time.Time) string {
	line := fmt.Sprintf("%s: pass %d, %d of %d types done, %d objects deleted", p.namespace, p.pass, p.typesDone, p.types, p.deleted)
	if p.done {
		line = fmt.Sprintf("%s: %d passes, %d objects deleted", p.namespace, p.pass, p.deleted)
	}
	if len(p.remaining) > 0 {
		var parts []string
		for i, rem := range p.remaining {
			if i == 3 {
				parts = append(parts, fmt.Sprintf("+%d types", len(p.remaining)-3))
				break
			}
			parts = append(parts, fmt.Sprintf("%s %d", rem.Resource, rem.Count))
		}
		line += "; left: " + strings.Join(parts, ", ")
	}
	if len(p.failures) > 0 && !p.done {
		line += "; " + refusedWords(p.failures)
	}
	if !p.until.IsZero() && !p.done {
		line += fmt.Sprintf("; waiting for %s until %s (%s)", waitWords(p.waitFor), p.until.Format("15:04:05"), p.until.Sub(now).Round(time.Second))
	}
	return line
}

func waitWords(w purge.WaitReason) string {
	switch w {
	case purge.WaitPods:
		return "pods to terminate"
	case purge.WaitFinalizers:
		return "finalizers"
	case purge.WaitRetry:
		return "a retry of failed deletions"
	case purge.WaitAPIServer:
		return "the API server"
	}
	return "the next pass"
}

// RefusalWords says who refused a request.
func RefusalWords(r *diagnose.Refusal) string {
	service := func() string {
		if r.Service == "" {
			return ""
		}
		if r.ServiceState == nil {
			return ", service " + r.Service
		}
		return fmt.Sprintf(", whose service %s is %s", r.Service, serviceWords(*r.ServiceState))
	}
	switch r.By {
	case diagnose.RefusedByPolicy:
		words := "denied by ValidatingAdmissionPolicy " + r.Policy
		if r.Binding != "" {
			words += " (binding " + r.Binding + ")"
		}
		if r.Static {
			words += ", loaded from kube-apiserver's disk"
		}
		return words
	case diagnose.RefusedByWebhook:
		config := ""
		if r.Configuration != "" {
			config = fmt.Sprintf(" of %s/%s", r.ConfigurationKind, r.Configuration)
		}
		if r.Static {
			config = ", loaded from kube-apiserver's disk"
		}
		if r.NamespaceGone {
			return fmt.Sprintf("webhook %s%s selects namespaces by label, and this one is gone: kube-apiserver answers its 404 instead of calling the webhook (purge re-creates the namespace for the strips)", r.Webhook, config)
		}
		if r.Denied {
			return fmt.Sprintf("denied by webhook %s%s", r.Webhook, config)
		}
		return fmt.Sprintf("refused by webhook %s%s%s", r.Webhook, config, service())
	case diagnose.RefusedByConversion:
		return fmt.Sprintf("the conversion webhook of CRD %s cannot be called%s", r.CRD, service())
	case diagnose.RefusedByRBAC:
		if r.User == "" {
			return "forbidden"
		}
		return fmt.Sprintf("forbidden: user %q may not %s %s", r.User, r.Verb, r.Resource)
	case diagnose.RefusedByAPI:
		return fmt.Sprintf("the aggregated API apiservice/%s fails%s", r.APIService, service())
	}
	return string(r.By)
}

// refusedOr says who refused, when known, else the API server's answer;
// a webhook's denial with its own words, which say what the policy wants.
func refusedOr(r *diagnose.Refusal, err string) string {
	if r == nil {
		return err
	}
	if _, msg, ok := diagnose.DenialOf(err); ok && r.Denied && msg != "" {
		return RefusalWords(r) + ": " + Cut(msg, 200)
	}
	if ps := apierror.PolicyDenials(err); len(ps) > 0 && r.By == diagnose.RefusedByPolicy && ps[0].Denial != "" {
		return RefusalWords(r) + ": " + Cut(ps[0].Denial, 200)
	}
	return RefusalWords(r)
}

// refusalCell says who refused in a few words, for a table cell and a
// report's result: the name a next step needs, never cut (the errors list
// says the rest).
func refusalCell(r *diagnose.Refusal, err string) string {
	switch {
	case r == nil:
		return err
	case r.By == diagnose.RefusedByWebhook && r.Configuration != "":
		return "refused by " + r.ConfigurationKind + "/" + r.Configuration
	case r.By == diagnose.RefusedByConversion:
		return "conversion webhook of CRD " + r.CRD + " unreachable"
	case r.By == diagnose.RefusedByAPI:
		return "apiservice/" + r.APIService + " fails"
	}
	return RefusalWords(r)
}

// cell is a result in a table: cut to n characters, unless it names who
// refused (refusalCell keeps that short).
func cell(result string, refusal *diagnose.Refusal, n int) string {
	if refusal != nil {
		return result
	}
	return truncate(result, n)
}

// PurgeStepCommand is the purge command line that gets past a hold: the
// run's own escalations, and the step's flag.
func PurgeStepCommand(r *purge.Report, step diagnose.Action) string {
	args := []string{"kubectl ns-doctor purge", r.Namespace, "--force"}
	if r.Context != "" {
		args = append(args, "--context="+shellQuote(r.Context))
	}
	for _, f := range r.Flags {
		args = append(args, flagArg(f))
	}
	if step.Flag != "" {
		args = append(args, flagArg(step))
	}
	return strings.Join(args, " ")
}

func flagArg(a diagnose.Action) string {
	if a.Value == "" {
		return a.Flag
	}
	return a.Flag + "=" + shellQuote(a.Value)
}

// shellQuote quotes a value for a POSIX shell when it holds anything but
// plain characters (a glob's '*' would otherwise expand).
func shellQuote(s string) string {
	safe := func(c rune) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._/:=,@%+-", c)
	}
	plain := s != "" && strings.IndexFunc(s, func(c rune) bool { return !safe(c) }) < 0
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// HoldStep says the step past one hold: the purge command line with the
// flag this run lacks, or the outside fix.
func HoldStep(r *purge.Report, h purge.Hold) string {
	if h.Step != nil {
		return PurgeStepCommand(r, *h.Step)
	}
	var outside []string
	given := ""
	for _, a := range h.Blocker.Actions {
		switch {
		case a.Kind == diagnose.ActionPurge && a.Flag != "":
			given = fmt.Sprintf("this run has %s already; ", a.Flag)
		case a.Kind != diagnose.ActionPurge:
			outside = append(outside, ActionWords(a))
		}
	}
	if len(outside) == 0 {
		return strings.TrimSuffix(given, "; ")
	}
	return given + strings.Join(outside, "; or: ")
}
