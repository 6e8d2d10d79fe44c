package printer

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// Whatever a tenant, an operator or a webhook writes into the cluster, the
// human view (and the live progress) shows it without one byte that could
// drive a terminal: no control character but the printer's own newlines,
// no C1 control, no invalid UTF-8, no bidirectional override, and no
// escape sequence but the printer's own colours (none at all without
// colour).
func FuzzHumanPrinter(f *testing.F) {
	f.Add("innocent \x1b]0;pwned\a\x1b[2J\x1b[31mFAKE all clear\x1b[0m")
	f.Add("line\nSTUCK no blockers\r\x00\x7f\u009b31m\u202eevil")
	f.Add("\xff\xfe\x9b[1m")
	f.Add(strings.Repeat("x", 5000))
	f.Fuzz(func(t *testing.T, s string) {
		for _, colour := range []bool{false, true} {
			h := Human{Color: colour, Now: now}
			var out bytes.Buffer
			if err := h.Diagnosis(&out, hostileDiagnosis(s)); err != nil {
				t.Fatal(err)
			}
			if err := h.Summaries(&out, []diagnose.Report{hostileDiagnosis(s)}); err != nil {
				t.Fatal(err)
			}
			if err := h.Purge(&out, hostilePurge(s)); err != nil {
				t.Fatal(err)
			}
			if err := h.Purges(&out, []*purge.Report{hostilePurge(s)}); err != nil {
				t.Fatal(err)
			}
			if err := h.Orphans(&out, diagnose.OrphanReport{Namespaces: []diagnose.FormerNamespace{{Name: s, Content: []diagnose.Content{{Resource: s, Examples: []string{s}, Finalizers: map[string]int{s: 1}}}}},
				Unchecked: []diagnose.Unchecked{{Subject: diagnose.UncheckedResource, Name: s, Error: s}}}); err != nil {
				t.Fatal(err)
			}
			out.WriteString(StatusLine(hostileDiagnosis(s)) + "\n")
			progress := NewProgress(&out, false, true)
			for _, e := range hostileEvents(s) {
				progress.Show(e)
			}
			progress.Close()
			assertSafe(t, out.String(), colour)
		}
	})
}

// sgr is the only escape sequence the printer writes: its colours.
var sgr = regexp.MustCompile(`\x1b\[[0-9;]*m`)

func assertSafe(t *testing.T, out string, colour bool) {
	t.Helper()
	if colour {
		out = sgr.ReplaceAllString(out, "")
	}
	if !utf8.ValidString(out) {
		t.Fatalf("invalid UTF-8 reaches the terminal: %q", out)
	}
	for i, r := range out {
		if r != '\n' && unsafeRune(r) {
			t.Fatalf("%U at byte %d reaches the terminal: %q", r, i, context(out, i))
		}
	}
}

func context(s string, i int) string {
	return s[max(i-40, 0):min(i+40, len(s))]
}

// hostileDiagnosis carries s in every field that comes from the cluster.
func hostileDiagnosis(s string) diagnose.Report {
	at := now.Add(-time.Minute)
	down := diagnose.ServiceState{}
	behind := diagnose.ServiceState{Exists: true, Behind: &diagnose.ServiceBackend{Selector: s, Pods: 1,
		Workloads: []diagnose.WorkloadState{{WorkloadRef: diagnose.WorkloadRef{Kind: s, Namespace: s, Name: s}}},
		NotReady:  []diagnose.PodNotReady{{Name: s, Phase: s, Why: s}}}}
	said := diagnose.Saying{Object: s, Source: s, Message: s, Error: true, Missing: true}
	r := diagnose.Report{
		ObservedAt: now, Verdict: diagnose.Verdict{State: diagnose.StateStuck},
		Namespace: diagnose.Namespace{Name: s, UID: s, Phase: s, CreationTimestamp: at, DeletionTimestamp: &at, SpecFinalizers: []string{s}, MetadataFinalizers: []string{s}},
		Conditions: []diagnose.Condition{{Type: s, Controller: &diagnose.ConditionValue{Status: "True", Reason: s, Message: s, LastTransitionTime: &at},
			Computed: &diagnose.ConditionValue{Status: s, Reason: s, Message: s}}},
		Discovery: diagnose.Discovery{Failures: []diagnose.DiscoveryFailure{{GroupVersion: s, Error: s,
			APIService: &diagnose.APIService{Name: s, Service: s, Available: s, Reason: s, Message: s}}}},
		Content: []diagnose.Content{{Group: s, Resource: s, Count: 1, Finalizers: map[string]int{s: 1}, Examples: []string{s}, OldestDeletion: &at},
			{Group: s, Resource: s, Error: s}},
		Finalizers: []diagnose.FinalizerInfo{{Name: s, Known: true, Owner: s, Guards: s, Leak: s, Source: s,
			OwnerState: diagnose.OwnerState{State: diagnose.OwnerUnknown, Found: &diagnose.WorkloadState{WorkloadRef: diagnose.WorkloadRef{Kind: s, Namespace: s, Name: s}}, Error: s}}},
		Holders: []diagnose.Holder{{Resource: s, Name: s, Conditions: []diagnose.HolderCondition{{Type: s, Status: s, Reason: s, Message: s, LastTransitionTime: &at}},
			Fields: []diagnose.HolderField{{Field: s, Value: s}}, ManagedBy: &diagnose.Manager{Tool: diagnose.ManagerTool(s), Name: s}}},
		Events:    []diagnose.Event{{Reason: s, Message: s, Object: s, Count: 2, Last: at}},
		Notes:     []diagnose.Note{{Kind: diagnose.NoteOlderContent, Older: 1, Examples: []diagnose.OlderObject{{Resource: s, Name: s}}, Actions: []diagnose.Action{{Kind: diagnose.ActionExplainOrphans, Namespace: s}}}},
		Unchecked: []diagnose.Unchecked{{Subject: diagnose.UncheckedService, Name: s, Error: s}},
		Pods:      &diagnose.PodsSummary{Remaining: 1, HoldingOtherContent: true},
	}
	act := []diagnose.Action{{Kind: diagnose.ActionRestoreService, Namespace: s, Target: s, Of: s}, diagnose.PurgeAction(s, diagnose.FlagBypassWebhook, s),
		{Kind: diagnose.ActionDeleteWebhookConfiguration, Target: s}, {Kind: diagnose.ActionMakeBackendReady, Target: s, Value: s, Of: s},
		{Kind: diagnose.ActionRestoreMissing, Target: s, Of: s}}
	r.Blockers = []diagnose.Blocker{
		{Kind: diagnose.BlockerAPIServiceUnavailable, Subject: s, Facts: &diagnose.APIServiceFacts{Failure: r.Discovery.Failures[0]}, Actions: act},
		{Kind: diagnose.BlockerNamespaceFinalizer, Subject: s, Facts: &diagnose.NamespaceFinalizerFacts{Token: s, Spec: []string{s}}, Actions: act},
		{Kind: diagnose.BlockerPods, Facts: &diagnose.PodFacts{Stuck: []diagnose.StuckPod{{Name: s}}}, Actions: act},
		{Kind: diagnose.BlockerListFailed, Facts: &diagnose.ListFacts{Resource: s, Error: s, APIService: &diagnose.APIService{Name: s, Service: s}, Backend: &behind}, Actions: act},
		{Kind: diagnose.BlockerConversionWebhook, Facts: &diagnose.ListFacts{Resource: s, Error: s, CRD: &diagnose.CRD{Name: s, ConversionService: &diagnose.ServiceRef{Namespace: s, Name: s}}, Conversion: &down}, Actions: act},
		{Kind: diagnose.BlockerFinalizers, Facts: &diagnose.FinalizerFacts{Content: r.Content[0], Owners: map[string]diagnose.OwnerState{s: r.Finalizers[0].OwnerState},
			Foreground: []diagnose.ForegroundWait{{Owner: s, Dependent: s}}, DeletingCRD: s}, Actions: act},
		{Kind: diagnose.BlockerWebhook, Facts: &diagnose.WebhookFacts{Webhook: diagnose.Webhook{Configuration: s, Name: s, Type: s, Service: &diagnose.ServiceRef{Namespace: s, Name: s}},
			Caught: []diagnose.Caught{{Resource: s, Operations: []string{s}}}}, Actions: act},
		{Kind: diagnose.BlockerControllerNotRunning, Facts: &diagnose.ControllerFacts{Deletable: []string{s}}, Actions: act},
		{Kind: diagnose.BlockerFinalizers, Facts: &diagnose.FinalizerFacts{Content: r.Content[0], Said: []diagnose.Saying{said},
			Stall: &diagnose.Stall{Cause: diagnose.StallWaitsOnMissing, Said: &said}}, Actions: act},
	}
	return r
}

// hostilePurge carries s in every field of a purge report that comes from
// the cluster.
func hostilePurge(s string) *purge.Report {
	refusal := &diagnose.Refusal{By: diagnose.RefusedByWebhook, Webhook: s, Configuration: s, ConfigurationKind: s, Service: s, User: s}
	d := hostileDiagnosis(s)
	return &purge.Report{
		Namespace: s, Context: s, Cluster: s, Mode: purge.DryRunNone, Outcome: purge.OutcomeRemaining, Orphans: false,
		Stop:  &purge.Stop{Reason: purge.StopRecreated, Error: s, Recreated: []string{s}, CreatedBy: []string{s}},
		Steps: []purge.Step{{Pass: 1, Verb: s, Resource: s, Name: s, Objects: 1, Status: purge.StepFailed, Error: s, Refusal: refusal}, {Pass: 2, Verb: s, Resource: s, Objects: 1, Status: purge.StepFailed, Error: s}},
		Rows: []purge.Row{
			{Kind: purge.RowStrip, Resource: s, Name: s, Status: purge.RowFailed, Error: s, Extra: purge.Strip{Finalizers: []string{s}}},
			{Kind: purge.RowForcedPod, Resource: "pods", Name: s, Status: purge.RowFailed, Error: s, Extra: purge.ForcedPod{Node: s, NodeState: purge.NodeState(s)}},
			{Kind: purge.RowBypass, Resource: s, Name: s, Status: purge.RowFailed, Why: purge.BypassRestoreFailed, Error: s, Extra: purge.Bypass{Kind: s, Catches: []string{s}, RestorePath: s, RestoreCommand: s}},
		},
		Leaks:              []purge.Leak{{Finalizer: s, Owner: s, Leak: s}, {Finalizer: s}},
		Remaining:          []purge.Remaining{{Resource: s, Count: 1, Finalizers: map[string]int{s: 1}}},
		Conditions:         []purge.Condition{{Type: s, Status: "True", Reason: s, Message: s}},
		Finalize:           purge.Finalize{Cause: purge.FinalizeOtherTokens, Kept: []string{s}, Remove: []string{s}, Error: s},
		MissingPermissions: []access.Permission{{Verb: s, Resource: s, Name: s, Namespace: s}},
		BackupDir:          s,
		Recreated:          []purge.Recreated{{Resource: s, Name: s, CreatedBy: s}},
		Changes:            []purge.Change{{Kind: purge.ChangeStrippedFinalizers, Resource: s, Name: s, Finalizers: []string{s}}},
		Warnings:           []purge.Warning{{Kind: purge.WarnAPIServer, Text: s}, {Kind: purge.WarnPutBack, Resource: s, Name: s, Finalizers: []string{s}}},
		Failures:           []purge.Failure{{Verb: s, Resource: s, Name: s, Error: s, Refusal: refusal, Count: 2}},
		Holding:            []purge.Hold{{Blocker: d.Blockers[6], Step: &d.Blockers[6].Actions[1]}, {Blocker: d.Blockers[0]}},
		Flags:              []diagnose.Action{diagnose.PurgeAction(s, diagnose.FlagRemoveFinalizers, s)},
	}
}

func hostileEvents(s string) []purge.Event {
	fail := []purge.Failure{{Verb: s, Resource: s, Name: s, Error: s, Count: 2}}
	return []purge.Event{
		{Namespace: s, Kind: purge.EventBackup, Dir: s},
		{Namespace: s, Kind: purge.EventPassEnded, Pass: 1, Remaining: []purge.Remaining{{Resource: s, Count: 1}}, Failures: fail},
		{Namespace: s, Kind: purge.EventRetrying, Err: s},
		{Namespace: s, Kind: purge.EventWarning, Err: s},
	}
}
