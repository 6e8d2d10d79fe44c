package printer

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/guard"
	"github.com/ns-doctor/ns-doctor/internal/owners"
)

// hostile is what a tenant or an operator may name things: escapes,
// newlines, bidirectional overrides, and length.
const hostile = "evil\x1b]0;pwned\x07\n\u202etxt.exe" + "-long-long-long-long-long-long-long-long-long-long-long-long-long-long-long"

func hostileVerdict(n int) guard.Verdict {
	v := guard.Verdict{Mode: guard.ModeDeny, Target: guard.TargetNamespace, Name: "team-a", User: hostile, Outcome: guard.OutcomeDenied}
	for range n {
		v.Findings = append(v.Findings,
			guard.Finding{Sure: true, Blocker: diagnose.Blocker{Kind: diagnose.BlockerFinalizers, Subject: hostile, Facts: &diagnose.FinalizerFacts{
				Content: diagnose.Content{Resource: "configmaps", Count: 3, Finalizers: map[string]int{hostile: 3}}, Held: []string{hostile},
				Owners: map[string]diagnose.OwnerState{hostile: {State: diagnose.OwnerNotFound, Owner: hostile, Looked: []diagnose.WorkloadRef{{Kind: "Deployment", Namespace: hostile, Name: hostile}}}}}}},
			guard.Finding{Sure: true, Blocker: diagnose.Blocker{Kind: diagnose.BlockerAPIServiceUnavailable, Subject: hostile, Facts: &diagnose.APIServiceFacts{Failure: diagnose.DiscoveryFailure{
				GroupVersion: hostile, Error: hostile, APIService: &diagnose.APIService{Name: hostile, Service: hostile, Backend: &diagnose.ServiceState{}}}}}},
			guard.Finding{Blocker: diagnose.Blocker{Kind: diagnose.BlockerListFailed, Subject: hostile, Facts: &diagnose.ListFacts{Resource: hostile, Error: hostile}}},
			guard.Finding{Sure: true, Blocker: diagnose.Blocker{Kind: diagnose.BlockerWebhook, Subject: hostile, Facts: &diagnose.WebhookFacts{
				Webhook: diagnose.Webhook{Configuration: hostile, Name: hostile, Type: "Validating", Service: &diagnose.ServiceRef{Namespace: hostile, Name: hostile}}}}},
		)
	}
	return v
}

// The warnings pass kube-apiserver untouched (no control character, or it
// drops them; within its 4,096 characters in all, or it cuts each to 256)
// and drive no terminal.
func TestGuardWarningsAreBoundedAndEscaped(t *testing.T) {
	for _, n := range []int{1, 3} {
		v := hostileVerdict(n)
		warnings := GuardWords{}.Warnings(v)
		if len(warnings) > MaxGuardWarnings {
			t.Errorf("%d warnings, want at most %d", len(warnings), MaxGuardWarnings)
		}
		total := 0
		for _, w := range warnings {
			total += utf8.RuneCountInString(w)
			if utf8.RuneCountInString(w) > MaxGuardWarning || strings.ContainsFunc(w, unicode.IsControl) || strings.ContainsFunc(w, unsafeRune) {
				t.Errorf("warning %q: too long or unescaped", w)
			}
			if !strings.HasPrefix(w, "ns-doctor: ") {
				t.Errorf("warning %q does not say who warns", w)
			}
		}
		if total > 3200 {
			t.Errorf("%d characters of warnings, want at most 3200", total)
		}
		denial := GuardWords{}.Denial(v)
		if strings.ContainsFunc(denial, unicode.IsControl) || strings.ContainsFunc(denial, unsafeRune) || utf8.RuneCountInString(denial) > maxGuardDenial {
			t.Errorf("denial %q", denial)
		}
		if !strings.Contains(denial, "kubectl annotate namespace team-a ns-doctor.io/allow-stuck-deletion=true") {
			t.Errorf("the denial does not say how to delete anyway: %q", denial)
		}
		if line := GuardLine(time.Time{}, v); strings.ContainsFunc(line, unicode.IsControl) {
			t.Errorf("log line %q", line)
		}
	}
	if w := (GuardWords{}).Warnings(hostileVerdict(3)); !strings.Contains(w[len(w)-1], "more predicted blocker(s): kubectl ns-doctor explain team-a --if-deleted") {
		t.Errorf("the last warning %q does not say where the rest are", w[len(w)-1])
	}
}

func TestGuardWordsSayWhatToDoFirst(t *testing.T) {
	v := guard.Verdict{Mode: guard.ModeWarn, Target: guard.TargetNamespace, Name: "team-a", Outcome: guard.OutcomeWarned, Findings: []guard.Finding{
		{Sure: true, Blocker: diagnose.Blocker{Kind: diagnose.BlockerAPIServiceUnavailable, Facts: &diagnose.APIServiceFacts{Failure: diagnose.DiscoveryFailure{
			GroupVersion: "metrics.k8s.io/v1beta1", APIService: &diagnose.APIService{Name: "v1beta1.metrics.k8s.io", Service: "kube-system/metrics-server", Backend: &diagnose.ServiceState{}}}}}},
	}}
	w := GuardWords{}.Warnings(v)
	want := "ns-doctor: namespace team-a would stick (APIServiceUnavailable): API metrics.k8s.io/v1beta1 is down (apiservice v1beta1.metrics.k8s.io, service kube-system/metrics-server: not found), and no namespace finishes deleting meanwhile; restore the service first, or: kubectl delete apiservice v1beta1.metrics.k8s.io"
	if len(w) != 1 || w[0] != want {
		t.Errorf("warnings %q\nwant %q", w, want)
	}
	v.Exempt, v.User, v.ExemptGroup = guard.ExemptGroup, "alice", "platform-admins"
	if w := (GuardWords{}).Warnings(v); !strings.Contains(w[len(w)-1], "alice is in the exempt group platform-admins") {
		t.Errorf("exemption: %q", w)
	}
	failed := guard.Verdict{Target: guard.TargetNamespace, Name: "team-a", Outcome: guard.OutcomeFailedOpen, Failure: guard.FailureError, Budget: 2e9,
		Err: errors.New(`Get "https://10.0.0.1:443/api": dial tcp 10.0.0.1:443: connect: connection refused`)}
	if w := (GuardWords{}).Warnings(failed); len(w) != 1 || !strings.Contains(w[0], "cannot reach the API server: connection refused") || !strings.Contains(w[0], "allowed unchecked") {
		t.Errorf("failing open: %q", w)
	}
	failed.Failure = guard.FailureTimeout
	if w := (GuardWords{}).Warnings(failed); !strings.Contains(w[0], "no prediction within the guard's 2s (--guard-timeout)") {
		t.Errorf("timing out: %q", w)
	}
}

// An owner read from the cluster is named in the guard's words, with how
// sure that is; one that runs in the namespace being deleted is said to
// go with it (the most common teardown-order mistake), not "make sure it
// runs".
func TestGuardWordsNameOwnersFromTheCluster(t *testing.T) {
	w := &owners.Workload{Kind: "Deployment", Namespace: "team-a", Name: "widget-operator", Ready: 1, Want: 1}
	finding := func(state diagnose.OwnerState) guard.Verdict {
		return guard.Verdict{Mode: guard.ModeWarn, Target: guard.TargetNamespace, Name: "team-a", Outcome: guard.OutcomeWarned, Findings: []guard.Finding{{Blocker: diagnose.Blocker{
			Kind: diagnose.BlockerOwnerDeleted, Subject: "widgets.example.com/cleanup", Facts: &diagnose.FinalizerFacts{
				Content: diagnose.Content{Resource: "widgets.example.com", Count: 2, Finalizers: map[string]int{"widgets.example.com/cleanup": 2}},
				Owners:  map[string]diagnose.OwnerState{"widgets.example.com/cleanup": state}}}}}}
	}
	for _, tc := range []struct {
		state diagnose.OwnerState
		want  string
	}{
		{diagnose.OwnerState{State: diagnose.OwnerDeletedWithNamespace, Inferred: &owners.Inference{Confidence: owners.Certain, Workload: w, InNamespace: true}},
			"wait for widgets.example.com/cleanup; its owner deployment team-a/widget-operator (certain, from the cluster) runs in this namespace and would be deleted with it"},
		{diagnose.OwnerState{State: diagnose.OwnerDeletedWithNamespace, Owner: "Widget operator", Found: &diagnose.WorkloadState{WorkloadRef: diagnose.WorkloadRef{Kind: "Deployment", Namespace: "team-a", Name: "widget-operator"}}},
			"its owner Widget operator runs in this namespace and would be deleted with it, leaving them to nobody: delete them first"},
		{diagnose.OwnerState{State: diagnose.OwnerNotReady, Inferred: &owners.Inference{Confidence: owners.Likely, Workload: &owners.Workload{Kind: "Deployment", Namespace: "ops", Name: "widget-operator"}}},
			"its owner deployment ops/widget-operator (likely, from the cluster) is not ready: make it ready first"},
		{diagnose.OwnerState{State: diagnose.OwnerUnknown, Inferred: &owners.Inference{Confidence: owners.None}},
			"its owner is not one ns-doctor knows, nor one the cluster names: make sure it runs"},
	} {
		got := GuardWords{}.Warnings(finding(tc.state))
		if len(got) != 1 || !strings.Contains(got[0], tc.want) {
			t.Errorf("%s: %q\nwant it to say %q", tc.state.State, got, tc.want)
		}
	}
}
