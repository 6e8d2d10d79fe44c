package printer

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/guard"
	"github.com/ns-doctor/ns-doctor/internal/owners"
	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// emptyList is what a sentence looks like when a list it names is empty:
// a colon followed by nothing (": ;", ": .", ": ,", ": )", or the end of
// the line), empty brackets or parentheses, "e.g." with no example.
var emptyList = regexp.MustCompile(`:[ \t]*([;.,)]|\n|$)|\[\]|\(\)|\(\s*[,;]|e\.g\.[ \t]*(\n|$)`)

// endsOpen is a line that ends where a list should follow.
var endsOpen = regexp.MustCompile(`(:|e\.g\.)[ \t]*$`)

// assertNoEmptyList fails on a sentence that says an empty list. A line
// of the human view that ends open but goes on in the next, more
// indented, is a sentence wrapped (the printer continues one deeper),
// not one cut short.
func assertNoEmptyList(t *testing.T, what, text string) {
	t.Helper()
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		wrapped := i+1 < len(lines) && indent(lines[i+1]) > indent(line) && strings.TrimSpace(lines[i+1]) != "" &&
			endsOpen.MatchString(line) && !strings.HasSuffix(line, " ")
		if m := emptyList.FindString(line + "\n"); m != "" && !wrapped {
			t.Errorf("%s says an empty list (%q) in %q", what, m, line)
		}
	}
}

func indent(line string) int { return len(line) - len(strings.TrimLeft(line, " ")) }

// inferredRunning is an inference that found the operator that set the
// finalizer running, certain.
func inferredRunning() owners.Inference {
	sa := owners.Subject{Kind: "ServiceAccount", Namespace: "cnpg-system", Name: "cnpg-manager"}
	return owners.Inference{Confidence: owners.Certain, RBACRead: true, WorkloadsRead: true,
		SetBy:    []owners.Manager{{Name: "cnpg-manager", Operation: "Update"}},
		Identity: &sa, Grant: &owners.Grant{Subject: sa, Verb: "update", Role: owners.Ref{Kind: "ClusterRole", Name: "cnpg-manager"}, Binding: owners.Ref{Kind: "ClusterRoleBinding", Name: "cnpg-manager"}},
		Workload: &owners.Workload{Kind: "Deployment", Namespace: "cnpg-system", Name: "cnpg-manager", ServiceAccount: "cnpg-manager", Ready: 1, Want: 1}}
}

// emptyDiagnosis is a report in which every list that can be empty is:
// the namespace's finalizers, examples, the workloads looked for, the
// candidates an inference names, a condition's reason, an event's message,
// each blocker's lists and steps (none, or fewer than its kind's sentence
// names).
func emptyDiagnosis() diagnose.Report {
	at := now.Add(-time.Minute)
	none := owners.Inference{Confidence: owners.None, RBACRead: true, WorkloadsRead: true, CandidateCount: 3}
	likelyOfNothing := owners.Inference{Confidence: owners.Likely, RBACRead: true}
	notChecked := diagnose.OwnerState{State: diagnose.OwnerNotChecked, Owner: "Some operator"}
	catalogueThenInferred := diagnose.WithInference(notChecked, inferredRunning())
	content := diagnose.Content{Group: "example.com", Resource: "widgets", Count: 2, Terminating: 2, Finalizers: map[string]int{}}
	owned := diagnose.Content{Group: "example.com", Resource: "widgets", Count: 2, Terminating: 2, Finalizers: map[string]int{"a.example.com/x": 2}}
	states := map[string]diagnose.OwnerState{"a.example.com/x": catalogueThenInferred}
	one := []diagnose.Action{{Kind: diagnose.ActionCheckOwner, Namespace: "demo", Target: "a.example.com/x"}}
	r := diagnose.Report{
		ObservedAt: now, Verdict: diagnose.Verdict{State: diagnose.StateStuck},
		Namespace: diagnose.Namespace{Name: "demo", UID: "u", Phase: "Terminating", CreationTimestamp: at, DeletionTimestamp: &at},
		Content:   []diagnose.Content{content, {Resource: "configmaps", Count: 1}},
		Finalizers: []diagnose.FinalizerInfo{
			{Name: "a.example.com/x", Objects: 2, Known: true, Owner: "Some operator", OwnerSource: diagnose.SourceCatalogue, Guards: "g", Leak: "l", Source: "https://example.com/x", OwnerState: catalogueThenInferred},
			{Name: "b.example.com/x", Objects: 1, Known: true, Owner: "Other operator", OwnerSource: diagnose.SourceCatalogue, Guards: "g", Leak: "l", Source: "https://example.com/x",
				OwnerState: diagnose.OwnerState{State: diagnose.OwnerNotFound, Owner: "Other operator"}},
			{Name: "c.example.com/x", Objects: 1, OwnerState: diagnose.WithInference(diagnose.OwnerState{State: diagnose.OwnerUnknown}, none)},
			{Name: "d.example.com/x", Objects: 1, OwnerState: diagnose.WithInference(diagnose.OwnerState{State: diagnose.OwnerUnknown}, likelyOfNothing)},
		},
		Holders: []diagnose.Holder{{Resource: "widgets.example.com", Name: "w", Conditions: []diagnose.HolderCondition{{Type: "Ready", Status: "False"}}}},
		Events:  []diagnose.Event{{Reason: "Failed", Object: "widget/w", Count: 1, Last: at}},
		Notes:   []diagnose.Note{{Kind: diagnose.NoteOlderContent, Namespace: "demo", Older: 1}},
		Progress: []diagnose.Progress{{Kind: diagnose.ProgressFinalizersInGrace, Resource: "widgets.example.com", Objects: 2},
			{Kind: diagnose.ProgressFinalizersGoing, Resource: "widgets.example.com", Objects: 2, Went: 1}},
	}
	r.Blockers = []diagnose.Blocker{
		{Kind: diagnose.BlockerNamespaceFinalizer, Facts: &diagnose.NamespaceFinalizerFacts{Owners: map[string]diagnose.OwnerState{}}},
		{Kind: diagnose.BlockerNamespaceFinalizer, Facts: &diagnose.NamespaceFinalizerFacts{Token: "t.example.com/x"},
			Actions: []diagnose.Action{{Kind: diagnose.ActionPatchNamespaceFinalizers, Namespace: "demo", Target: "t.example.com/x"}}},
		{Kind: diagnose.BlockerPods, Facts: &diagnose.PodFacts{}, Actions: []diagnose.Action{diagnose.PurgeAction("demo", diagnose.FlagForceDeletePods, "")}},
		{Kind: diagnose.BlockerFinalizers, Facts: &diagnose.FinalizerFacts{Content: content, Owners: map[string]diagnose.OwnerState{}}, Actions: one},
		{Kind: diagnose.BlockerFinalizers, Facts: &diagnose.FinalizerFacts{Content: owned, Owners: states, DeletingCRD: "widgets.example.com"},
			Actions: []diagnose.Action{{Kind: diagnose.ActionOwnerLogs, Namespace: "demo", Target: "deployment/cnpg-manager", Of: "cnpg-system"}}},
		{Kind: diagnose.BlockerOwnerCannotFinish, Facts: &diagnose.FinalizerFacts{Content: content}, Actions: one},
		{Kind: diagnose.BlockerOwnerDeleted, Facts: &diagnose.FinalizerFacts{Content: content}, Actions: one},
		{Kind: diagnose.BlockerWebhook, Facts: &diagnose.WebhookFacts{Webhook: diagnose.Webhook{Configuration: "c", Name: "w", Type: "Validating", Service: &diagnose.ServiceRef{Namespace: "s", Name: "s"}},
			Caught: []diagnose.Caught{{Resource: "widgets"}}}},
		{Kind: diagnose.BlockerSelfHostedWebhook, Facts: &diagnose.WebhookFacts{Webhook: diagnose.Webhook{Configuration: "c", Name: "w", Type: "Validating", Service: &diagnose.ServiceRef{Namespace: "demo", Name: "s"}}},
			Actions: []diagnose.Action{diagnose.PurgeAction("demo", diagnose.FlagBypassWebhook, "c")}},
		{Kind: diagnose.BlockerControllerNotRunning, Facts: &diagnose.ControllerFacts{}, Actions: []diagnose.Action{{Kind: diagnose.ActionCheckController}}},
		{Kind: diagnose.BlockerListFailed, Facts: &diagnose.ListFacts{Resource: "widgets.example.com", Error: "e", Corrupt: &diagnose.Corrupt{}},
			Actions: []diagnose.Action{{Kind: diagnose.ActionEnableUnsafeDelete, Target: "widgets.example.com"}}},
		{Kind: diagnose.BlockerConversionWebhook, Facts: &diagnose.ListFacts{Resource: "widgets.example.com", Error: "e", CRD: &diagnose.CRD{Name: "widgets.example.com",
			ConversionService: &diagnose.ServiceRef{Namespace: "s", Name: "s"}}, Conversion: &diagnose.ServiceState{}},
			Actions: []diagnose.Action{{Kind: diagnose.ActionCheckBackend, Target: "s/s"}}},
	}
	return r
}

// emptyPurge is a purge report whose lists are empty where a sentence
// names them.
func emptyPurge() *purge.Report {
	return &purge.Report{
		Namespace: "demo", Mode: purge.DryRunNone, Outcome: purge.OutcomeRemaining,
		Stop:     &purge.Stop{Reason: purge.StopRecreated},
		Finalize: purge.Finalize{Done: true, Cause: purge.FinalizeOtherTokens},
		Changes:  []purge.Change{{Kind: purge.ChangeFinalized, Name: "demo"}},
		Warnings: []purge.Warning{{Kind: purge.WarnTokensKept}, {Kind: purge.WarnPutBack, Resource: "widgets", Name: "w"}},
	}
}

// No sentence ns-doctor prints names an empty list: a clause is left out,
// or says what there is in other words ("none"). The human views, the
// blockers' and owners' words, the documents' words, the watch's events,
// the guard's warnings and the agents' summaries.
func TestNoSentenceSaysAnEmptyList(t *testing.T) {
	r := emptyDiagnosis()
	var out bytes.Buffer
	h := Human{Now: now}
	if err := h.Diagnosis(&out, r); err != nil {
		t.Fatal(err)
	}
	if err := h.Summaries(&out, []diagnose.Report{r}); err != nil {
		t.Fatal(err)
	}
	assertNoEmptyList(t, "explain's human view", out.String())

	for _, b := range r.Blockers {
		w := WordsOf(b)
		for _, s := range append([]string{w.Summary, w.NextStep}, w.Evidence...) {
			assertNoEmptyList(t, string(b.Kind), s)
		}
		assertNoEmptyList(t, string(b.Kind)+" (guard)", findingWords(guard.Verdict{Name: "demo", Target: guard.TargetNamespace}, guard.Finding{Blocker: b}))
	}
	for _, f := range r.Finalizers {
		assertNoEmptyList(t, f.Name, OwnerEvidence(f.OwnerState))
		assertNoEmptyList(t, f.Name+" (table)", OwnerCell(f)+" "+RunningCell(f))
	}
	d := Diagnosis(r)
	assertNoEmptyList(t, "the verdict", d.Verdict.Summary)
	for _, n := range d.Notes {
		assertNoEmptyList(t, "a note", n.Summary+"\n"+n.NextStep)
	}
	assertNoEmptyList(t, "the watch's event", WatchWords{}.Stuck(diagnose.Report{Namespace: r.Namespace}))
	assertNoEmptyList(t, "the janitor's event", WatchWords{}.Janitor(&purge.Report{Outcome: purge.OutcomeRefused}, errString("refused")))
	assertNoEmptyList(t, "the guard's denial", GuardWords{}.Denial(guard.Verdict{Name: "demo", Target: guard.TargetNamespace, Outcome: guard.OutcomeDenied}))
	assertNoEmptyList(t, "the agents' plan", AgentPlan(&purge.Report{Namespace: "demo", Escalations: []purge.Used{{Flag: "--no-such-flag"}}}, "demo"))

	out.Reset()
	p := emptyPurge()
	if err := h.Purge(&out, p); err != nil {
		t.Fatal(err)
	}
	assertNoEmptyList(t, "purge's human view", out.String())
	for _, f := range []purge.Finalize{{Cause: purge.FinalizeOtherTokens}, {Cause: purge.FinalizeNamespaceHeld}} {
		assertNoEmptyList(t, "finalize", FinalizeReason(f))
	}
	for _, w := range p.Warnings {
		assertNoEmptyList(t, "a warning", WarningWords(w, p))
	}
	assertNoEmptyList(t, "a change", ChangeWords(p.Changes[0], "demo"))
	assertNoEmptyList(t, "the stop", PurgeMessage(p))
}

type errString string

func (e errString) Error() string { return string(e) }

// The check itself: each way a list is said empty is caught.
func TestEmptyListPatterns(t *testing.T) {
	for _, s := range []string{"none of its usual workloads found: ; certain owner", "found: .", "spec [], metadata []", "objects left ()",
		"identities may remove it, none set it: ", "next: ", "e.g. ", "owner (, 1m ago)"} {
		if !emptyList.MatchString(s + "\n") {
			t.Errorf("%q is not caught", s)
		}
	}
	for _, s := range []string{"none of its usual workloads found: statefulset argocd/x", "spec [kubernetes], metadata none", "e.g. w", "Ready=False (DeleteFailed, 1m ago): bucket"} {
		if emptyList.MatchString(s + "\n") {
			t.Errorf("%q is caught", s)
		}
	}
}

// The OWNER and RUNNING cells say what the evidence says: the
// catalogue's owner where it has one, else the owner the inference names
// with its source and confidence, and its workload's readiness; nobody
// where the evidence names nobody.
func TestOwnerAndRunningCells(t *testing.T) {
	cnpg := diagnose.WithInference(diagnose.OwnerState{State: diagnose.OwnerUnknown}, inferredRunning())
	notReady := inferredRunning()
	notReady.Workload = &owners.Workload{Kind: "Deployment", Namespace: "cnpg-system", Name: "cnpg-manager", Ready: 0, Want: 2}
	likely := inferredRunning()
	likely.Confidence, likely.SetBy = owners.Likely, nil
	sa := owners.Subject{Kind: "ServiceAccount", Namespace: "a", Name: "a"}
	tied := owners.Inference{Confidence: owners.None, RBACRead: true, WorkloadsRead: true,
		Candidates: []owners.Subject{sa, {Kind: "ServiceAccount", Namespace: "b", Name: "b"}}, CandidateCount: 2}
	catalogued := func(s diagnose.OwnerState) diagnose.FinalizerInfo {
		return diagnose.FinalizerInfo{Name: "x", Known: true, Owner: "Some operator", OwnerSource: diagnose.SourceCatalogue, OwnerState: s}
	}
	inferred := func(s diagnose.OwnerState) diagnose.FinalizerInfo {
		f := diagnose.FinalizerInfo{Name: "x", OwnerState: s}
		if o := s.InferredOwner(); o != "" {
			f.Owner, f.OwnerSource = o, diagnose.SourceInferred
		}
		return f
	}
	for _, tc := range []struct {
		name           string
		info           diagnose.FinalizerInfo
		owner, running string
	}{
		{"not catalogued, certain, running", inferred(cnpg), "deployment cnpg-system/cnpg-manager (inferred, certain)", "Running 1/1"},
		{"not catalogued, certain, not ready", inferred(diagnose.WithInference(diagnose.OwnerState{State: diagnose.OwnerUnknown}, notReady)),
			"deployment cnpg-system/cnpg-manager (inferred, certain)", "NotReady 0/2"},
		{"not catalogued, nothing found", inferred(diagnose.WithInference(diagnose.OwnerState{State: diagnose.OwnerUnknown}, owners.Inference{Confidence: owners.None})),
			"unknown owner", "Unknown"},
		{"not catalogued, two candidates alike", inferred(diagnose.WithInference(diagnose.OwnerState{State: diagnose.OwnerUnknown}, tied)), "unknown owner", "Unknown"},
		{"catalogued, no workload named, the inference found it running",
			catalogued(diagnose.WithInference(diagnose.OwnerState{State: diagnose.OwnerNotChecked, Owner: "Some operator"}, likely)),
			"Some operator", "Running 1/1 (inferred, likely)"},
		{"catalogued, no workload named, nobody inferred",
			catalogued(diagnose.WithInference(diagnose.OwnerState{State: diagnose.OwnerNotChecked, Owner: "Some operator"}, tied)), "Some operator", "NotChecked"},
		{"catalogued, found running", catalogued(diagnose.OwnerState{State: diagnose.OwnerRunningReady, Owner: "Some operator",
			Found: &diagnose.WorkloadState{WorkloadRef: diagnose.WorkloadRef{Kind: "Deployment", Namespace: "o", Name: "o"}, Ready: 1, Want: 1}}), "Some operator", "Running"},
		{"catalogued, running but cannot finish, inferred", catalogued(func() diagnose.OwnerState {
			s := diagnose.WithInference(diagnose.OwnerState{State: diagnose.OwnerNotChecked, Owner: "Some operator"}, likely)
			s.State = diagnose.OwnerRunningCannotFinish
			return s
		}()), "Some operator", "Running, but cannot finish 1/1 (inferred, likely)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := OwnerCell(tc.info); got != tc.owner {
				t.Errorf("OWNER %q, want %q", got, tc.owner)
			}
			if got := RunningCell(tc.info); got != tc.running {
				t.Errorf("RUNNING %q, want %q", got, tc.running)
			}
			var out bytes.Buffer
			if err := (Human{Now: now}).Diagnosis(&out, diagnose.Report{Namespace: diagnose.Namespace{Name: "demo"}, Finalizers: []diagnose.FinalizerInfo{tc.info}}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), tc.owner) || !strings.Contains(out.String(), tc.running) {
				t.Errorf("the table lacks %q or %q:\n%s", tc.owner, tc.running, out.String())
			}
			doc := finalizerDocument(tc.info)
			if doc.OwnerState.Source != tc.info.OwnerState.Source() || doc.Owner != tc.info.Owner {
				t.Errorf("document owner %q, state source %q", doc.Owner, doc.OwnerState.Source)
			}
		})
	}
}
