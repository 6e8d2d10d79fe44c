package printer

import (
	"strings"
	"testing"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// A next step past a hold is a command line that runs as printed: the
// run's own escalations repeated, the missing flag added, globs quoted for
// the shell; without a flag, the outside fix.
func TestHoldSteps(t *testing.T) {
	r := &purge.Report{Namespace: "team-a", Context: "prod cluster",
		Flags: []diagnose.Action{diagnose.PurgeAction("team-a", diagnose.FlagRemoveFinalizers, "example.com/*")}}
	webhook := diagnose.Blocker{Kind: diagnose.BlockerWebhook, Actions: []diagnose.Action{
		{Kind: diagnose.ActionRestoreService, Target: "policy/guard"},
		diagnose.PurgeAction("team-a", diagnose.FlagBypassWebhook, "policy-guard"),
		{Kind: diagnose.ActionDeleteWebhookConfiguration, Target: "validatingwebhookconfiguration/policy-guard"},
	}}
	step, _ := webhook.PurgeStep()
	got := HoldStep(r, purge.Hold{Blocker: webhook, Step: &step})
	want := "kubectl ns-doctor purge team-a --force --context='prod cluster' --remove-finalizers='example.com/*' --bypass-webhook=policy-guard"
	if got != want {
		t.Errorf("step past the webhook:\n got %s\nwant %s", got, want)
	}
	// The flag is in the run already: the outside fixes remain.
	got = HoldStep(r, purge.Hold{Blocker: webhook})
	if got != "this run has --bypass-webhook already; restore service policy/guard; or: kubectl delete validatingwebhookconfiguration policy-guard" {
		t.Errorf("outside fix: %s", got)
	}
	conversion := diagnose.Blocker{Kind: diagnose.BlockerConversionWebhook, Actions: []diagnose.Action{
		{Kind: diagnose.ActionRestoreService, Target: "conv/converter"}, {Kind: diagnose.ActionPatchCRDConversion, Target: "convs.example.com"}}}
	if got := HoldStep(r, purge.Hold{Blocker: conversion}); !strings.HasPrefix(got, "restore service conv/converter; or: kubectl patch crd convs.example.com --type=merge -p '{") {
		t.Errorf("conversion: %s", got)
	}
	if got := shellQuote("it's"); got != `'it'\''s'` {
		t.Errorf("quote: %s", got)
	}
}

// A refused request names who refused it, in the tables too, instead of
// the start of the API server's long error.
func TestRefusalWords(t *testing.T) {
	down := &diagnose.ServiceState{}
	for _, tc := range []struct {
		refusal diagnose.Refusal
		want    string
	}{
		{diagnose.Refusal{By: diagnose.RefusedByWebhook, Webhook: "deny.guard", Configuration: "policy-guard", ConfigurationKind: "validatingwebhookconfiguration", Service: "policy/guard", ServiceState: down},
			"refused by webhook deny.guard of validatingwebhookconfiguration/policy-guard, whose service policy/guard is not found"},
		{diagnose.Refusal{By: diagnose.RefusedByWebhook, Webhook: "deny.guard", Denied: true}, "denied by webhook deny.guard"},
		{diagnose.Refusal{By: diagnose.RefusedByConversion, CRD: "convs.example.com", Service: "conv/converter", ServiceState: down},
			"the conversion webhook of CRD convs.example.com cannot be called, whose service conv/converter is not found"},
		{diagnose.Refusal{By: diagnose.RefusedByRBAC, User: "alice", Verb: "patch", Resource: "widgets"}, `forbidden: user "alice" may not patch widgets`},
		{diagnose.Refusal{By: diagnose.RefusedByAPI, APIService: "v1.example.com", Service: "default/gadgets"}, "the aggregated API apiservice/v1.example.com fails, service default/gadgets"},
	} {
		if got := RefusalWords(&tc.refusal); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
	long := strings.Repeat("x", 300)
	step := StepResult(purge.Step{Status: purge.StepFailed, Error: long, Refusal: &diagnose.Refusal{By: diagnose.RefusedByWebhook, Webhook: "w", Configuration: "c", ConfigurationKind: "k"}})
	if step != "failed: refused by k/c" {
		t.Errorf("a table cell: %q", step)
	}
}

// The run's one error line names what holds the namespace first and the
// step past it, whether the run stopped early or at --timeout.
func TestStopLineNamesTheFirstHold(t *testing.T) {
	cut := diagnose.Blocker{Kind: diagnose.BlockerListFailed, Subject: "configmaps", Facts: &diagnose.ListFacts{Resource: "configmaps", Error: "unexpected EOF"}}
	r := &purge.Report{Namespace: "team-a", Outcome: purge.OutcomeRemaining, Stop: &purge.Stop{Reason: purge.StopTimeout, Timeout: "1m0s"}}
	if got := PurgeMessage(r); got != "namespace team-a still exists after --timeout=1m0s; re-run purge to continue where it stopped" {
		t.Errorf("no hold seen: %s", got)
	}
	r.Holding = []purge.Hold{{Blocker: cut}}
	got := PurgeMessage(r)
	if !strings.HasPrefix(got, "namespace team-a still exists after --timeout=1m0s; ListFailed: ") || !strings.Contains(got, "configmaps") ||
		!strings.HasSuffix(got, "; re-run purge to continue where it stopped") {
		t.Errorf("timeout: %s", got)
	}
	r.Stop = &purge.Stop{Reason: purge.StopBlocked, After: "3s"}
	if got := PurgeMessage(r); !strings.HasPrefix(got, "stopped after 3s: namespace team-a cannot finish, and waiting will not help; ListFailed: ") {
		t.Errorf("blocked: %s", got)
	}
}
