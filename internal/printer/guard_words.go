package printer

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/apierror"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/finalizers"
	"github.com/ns-doctor/ns-doctor/internal/guard"
	"github.com/ns-doctor/ns-doctor/internal/owners"
)

// GuardWords are the words of the deletion guard (guard.Words): the
// warnings kubectl prints under `kubectl delete namespace` as
// "Warning: ..." lines, and the message of a refusal. Each warning is one
// line, escaped (kube-apiserver drops a warning with a control character,
// and a terminal must never obey what the cluster wrote) and cut at
// MaxGuardWarning characters; at most MaxGuardWarnings are given. Both
// bounds keep under what kube-apiserver passes on (3,200 of its 4,096
// characters in all, past which it would cut every warning to 256).
type GuardWords struct{}

// Bounds of the guard's warnings.
const (
	MaxGuardWarning  = 400
	MaxGuardWarnings = 8
	maxGuardDenial   = 1000
	guardPrefix      = "ns-doctor: "
)

// Warnings are one line per predicted blocker, naming it and the step to
// take before deleting; then what let a deletion deny mode would refuse
// through, or why nothing was checked.
func (GuardWords) Warnings(v guard.Verdict) []string {
	if v.Outcome == guard.OutcomeFailedOpen {
		return []string{guardLine(failedOpenWords(v))}
	}
	what := targetWords(v)
	var out []string
	shown, more := limit(v.Findings, MaxGuardWarnings-1)
	for _, f := range shown {
		out = append(out, guardLine(fmt.Sprintf("%s would stick (%s): %s", what, f.Blocker.Kind, findingWords(v, f))))
	}
	if more > 0 {
		out = append(out, guardLine(fmt.Sprintf("and %d more predicted blocker(s): %s", more, detailsCommand(v))))
	}
	if exempt := exemptWords(v); exempt != "" {
		out = append(out, guardLine(exempt))
	}
	return out
}

// Denial is the message of a refusal, after kube-apiserver's "admission
// webhook ... denied the request: ": the sure blockers, and how to
// delete anyway.
func (GuardWords) Denial(v guard.Verdict) string {
	var sure []string
	for _, f := range v.Findings {
		if f.Sure {
			sure = append(sure, Cut(subjectWords(f.Blocker), 100))
		}
	}
	shown, more := limit(sure, 5)
	allow := fmt.Sprintf("kubectl annotate %s %s %s=true", strings.ToLower(string(v.Target)), v.Name, guard.AllowAnnotation)
	msg := fmt.Sprintf("ns-doctor guard refuses to delete %s: it would stick in Terminating (the warnings say why, and what to do first; details: %s). To delete it anyway: %s.",
		targetWords(v), detailsCommand(v), allow)
	if len(shown) > 0 {
		msg += fmt.Sprintf(" Sure to hold it: %s%s", strings.Join(shown, "; "), moreWords(more))
	}
	return Cut(Escape(msg), maxGuardDenial)
}

// GuardLine is the watch's log line for one verdict.
func GuardLine(at time.Time, v guard.Verdict) string {
	stamp := at.UTC().Format(time.RFC3339)
	dry := ""
	if v.DryRun {
		dry = " (dry run)"
	}
	who := v.User
	if who == "" {
		who = "an unknown user"
	}
	head := fmt.Sprintf("%s guard (%s): DELETE %s by %s%s: %s", stamp, v.Mode, strings.ToLower(string(v.Target))+" "+v.Name, who, dry, v.Outcome)
	switch {
	case v.Outcome == guard.OutcomeFailedOpen:
		return clean(head + " after " + v.Took.Round(time.Millisecond).String() + ": " + failedOpenWords(v))
	case len(v.Findings) == 0:
		return clean(head + " in " + v.Took.Round(time.Millisecond).String())
	}
	var subjects []string
	for _, f := range v.Findings {
		s := subjectWords(f.Blocker)
		if f.Sure {
			s += " (sure)"
		}
		subjects = append(subjects, s)
	}
	line := fmt.Sprintf("%s in %s: %d predicted blocker(s): %s", head, v.Took.Round(time.Millisecond), len(v.Findings), strings.Join(subjects, "; "))
	if e := exemptWords(v); e != "" {
		line += "; " + e
	}
	return clean(line)
}

func guardLine(s string) string { return Cut(Escape(guardPrefix+s), MaxGuardWarning) }

func targetWords(v guard.Verdict) string {
	if v.Target == guard.TargetCRD {
		return "customresourcedefinition " + v.Name
	}
	return "namespace " + v.Name
}

// detailsCommand is where the full prediction is: explain --if-deleted
// for a namespace.
func detailsCommand(v guard.Verdict) string {
	if v.Target == guard.TargetCRD {
		return "kubectl get " + v.Name + " -A"
	}
	return "kubectl ns-doctor explain " + v.Name + " --if-deleted"
}

func subjectWords(b diagnose.Blocker) string {
	if b.Subject == "" {
		return string(b.Kind)
	}
	return string(b.Kind) + " " + b.Subject
}

func failedOpenWords(v guard.Verdict) string {
	what := targetWords(v)
	if v.Failure == guard.FailureTimeout {
		return fmt.Sprintf("the deletion of %s was not checked: no prediction within the guard's %s (--guard-timeout); allowed unchecked, as the guard fails open", what, v.Budget)
	}
	return fmt.Sprintf("the deletion of %s was not checked: the guard could not predict it (%s); allowed unchecked, as the guard fails open", what, Cut(errorWords(v.Err), 120))
}

// errorWords names an error the guard met, the unreachable API server
// first (its own reads go there).
func errorWords(err error) string {
	if err == nil {
		return "unknown error"
	}
	msg := err.Error()
	if e := apierror.Classify(err); e.Kind == apierror.Unreachable || e.Kind == apierror.Timeout {
		return "cannot reach the API server: " + lastPart(msg)
	}
	return msg
}

// lastPart is what follows the last ": " of an error chain (its cause).
func lastPart(msg string) string {
	if i := strings.LastIndex(msg, ": "); i >= 0 && i+2 < len(msg) {
		return msg[i+2:]
	}
	return msg
}

func exemptWords(v guard.Verdict) string {
	switch v.Exempt {
	case guard.ExemptAnnotation:
		return fmt.Sprintf("allowed in deny mode anyway: %s carries %s=true", targetWords(v), guard.AllowAnnotation)
	case guard.ExemptGroup:
		return fmt.Sprintf("allowed in deny mode anyway: %s is in the exempt group %s (--guard-exempt-groups)", v.User, v.ExemptGroup)
	}
	return ""
}

// findingWords says one predicted blocker and what to do before
// deleting: the object is not deleted yet, so the steps are those that
// keep it from sticking, not those that unstick it.
func findingWords(v guard.Verdict, f guard.Finding) string {
	b := f.Blocker
	switch facts := b.Facts.(type) {
	case *diagnose.APIServiceFacts:
		return apiServiceGuardWords(b, facts)
	case *diagnose.FinalizerFacts:
		return finalizerGuardWords(b, facts)
	case *diagnose.WebhookFacts:
		wh := facts.Webhook
		return fmt.Sprintf("webhook %s fails closed and its service %s is %s: it would refuse the namespace controller's deletes; restore the service first, or: kubectl delete %swebhookconfiguration %s",
			name(wh.Name), name(wh.Service.Key()), serviceWords(facts.Service), strings.ToLower(wh.Type), name(wh.Configuration))
	case *diagnose.ListFacts:
		return listGuardWords(v, b, facts)
	case *diagnose.PodFacts:
		names := make([]string, 0, len(facts.Stuck))
		for _, p := range facts.Stuck {
			names = append(names, p.Name)
		}
		shown, more := limit(names, 2)
		which := ""
		if len(shown) > 0 {
			which = " (" + strings.Join(shown, ", ") + moreWords(more) + ")"
		}
		return fmt.Sprintf("%d pod(s)%s already outlived their grace period, and the namespace cannot go while they remain; check their nodes first: kubectl get pods -n %s -o wide",
			len(facts.Stuck), which, v.Name)
	case *diagnose.NamespaceFinalizerFacts:
		return fmt.Sprintf("the namespace's own finalizer %s is removed only by whatever added it; make sure that runs", b.Subject)
	case *diagnose.DenialFacts:
		return fmt.Sprintf("admission webhook %s denies the deletes the namespace controller would send: %s", facts.Webhook, facts.Message)
	}
	return WordsOf(b).Summary
}

func apiServiceGuardWords(b diagnose.Blocker, f *diagnose.APIServiceFacts) string {
	gv := f.Failure.GroupVersion
	s := f.Failure.APIService
	switch {
	case s == nil:
		return fmt.Sprintf("API %s cannot be discovered, and no namespace finishes deleting while it cannot; first: kubectl get apiservice %s", gv, apiServiceOf(gv))
	case b.Kind == diagnose.BlockerSelfHostedAPIService:
		return fmt.Sprintf("apiservice %s is served from this namespace and already down; first: kubectl delete apiservice %s", s.Name, s.Name)
	case s.Service == "":
		return fmt.Sprintf("API %s (apiservice %s, served by kube-apiserver itself) cannot be discovered; see kube-apiserver's logs first", gv, s.Name)
	}
	state := "failing"
	if s.Backend != nil && s.Backend.Down() {
		state = serviceWords(*s.Backend)
	}
	return fmt.Sprintf("API %s is down (apiservice %s, service %s: %s), and no namespace finishes deleting meanwhile; restore the service first, or: kubectl delete apiservice %s",
		name(gv), name(s.Name), name(s.Service), state, name(s.Name))
}

func listGuardWords(v guard.Verdict, b diagnose.Blocker, f *diagnose.ListFacts) string {
	if b.Kind == diagnose.BlockerConversionWebhook && f.CRD != nil && f.CRD.ConversionService != nil {
		return fmt.Sprintf("the conversion webhook of CRD %s is down (service %s), so its objects can be neither listed nor deleted; restore that service first, or set its spec.conversion.strategy to None",
			f.CRD.Name, f.CRD.ConversionService.Key())
	}
	where := " -A"
	if v.Target == guard.TargetNamespace {
		where = " -n " + v.Name
	}
	return fmt.Sprintf("%s cannot be listed (%s), so it cannot be deleted; first: kubectl get %s%s", f.Resource, Cut(f.Error, 60), f.Resource, where)
}

// finalizerGuardWords names the content held, the finalizers and their
// owners: the owner to start again before deleting.
func finalizerGuardWords(b diagnose.Blocker, f *diagnose.FinalizerFacts) string {
	c := f.Content
	if b.Kind == diagnose.BlockerOwnerCannotFinish && len(f.CannotFinish) > 0 {
		return fmt.Sprintf("%d %s%s wait for %s, whose owner runs but cannot finish: %s", c.Count, c.Name(), heldWords(f.Held), b.Subject, cannotFinishWhy(f.CannotFinish[0]))
	}
	states := guard.OwnerStates(b)
	names := make([]string, 0, len(states))
	for n := range states {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		s := states[n]
		if s.State == diagnose.OwnerRunningReady || s.State == diagnose.OwnerControlPlane {
			continue
		}
		parts = append(parts, fmt.Sprintf("%d %s%s wait for %s; %s", c.Finalizers[n], name(c.Name()), heldWords(f.Held), name(n), guardOwnerWords(n, s)))
	}
	if len(parts) == 0 {
		return WordsOf(b).Summary
	}
	return strings.Join(parts, "; ")
}

func heldWords(held []string) string {
	if len(held) == 0 {
		return ""
	}
	cut := make([]string, 0, len(held))
	for _, h := range held {
		cut = append(cut, name(h))
	}
	return " (" + strings.Join(cut, ", ") + ")"
}

// guardOwnerWords says a finalizer's owner (its project, from the
// catalogue, or who the cluster says it is), that it is not running, and
// the step before deleting.
func guardOwnerWords(finalizer string, s diagnose.OwnerState) string {
	owner := ownerName(finalizer, s)
	if e := finalizers.Lookup(finalizer); e != nil && e.Project != "" {
		owner = e.Project
	}
	if s.Owner == "" && s.Inferred != nil && s.Inferred.Confidence != owners.None {
		owner += " (" + strings.ToLower(string(s.Inferred.Confidence)) + ", from the cluster)"
	}
	switch s.State {
	case diagnose.OwnerDeletedWithNamespace:
		return fmt.Sprintf("its owner %s runs in this namespace and would be deleted with it, leaving them to nobody: delete them first and let it finish, or move it out", owner)
	case diagnose.OwnerNotFound:
		if len(s.Looked) > 0 {
			w := s.Looked[0]
			return fmt.Sprintf("its owner %s is not running (no %s %s/%s): start it first", owner, strings.ToLower(w.Kind), w.Namespace, w.Name)
		}
		return fmt.Sprintf("its owner %s is not running: start it first", owner)
	case diagnose.OwnerNotReady:
		return fmt.Sprintf("its owner %s is not ready: make it ready first", owner)
	case diagnose.OwnerNotChecked:
		return fmt.Sprintf("its owner %s was not checked: make sure it runs", owner)
	case diagnose.OwnerRunningCannotFinish:
		return fmt.Sprintf("its owner %s runs but cannot finish", owner)
	case diagnose.OwnerUnknown:
		if s.Found != nil {
			return fmt.Sprintf("its owner %s could not be checked: make sure it runs", owner)
		}
	}
	return "its owner is not one ns-doctor knows, nor one the cluster names: make sure it runs"
}

func apiServiceOf(groupVersion string) string {
	if i := strings.LastIndex(groupVersion, "/"); i >= 0 {
		return groupVersion[i+1:] + "." + groupVersion[:i]
	}
	return groupVersion
}

// name bounds a name from the cluster within a warning (a webhook's may
// be 253 characters long), so that the step after it stays.
func name(s string) string { return Cut(s, 80) }

func moreWords(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" and %d more", n)
}

var _ guard.Words = GuardWords{}
