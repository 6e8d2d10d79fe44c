package printer

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/compat"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/purge"
	"github.com/ns-doctor/ns-doctor/internal/version"
)

// Every typed value the engines return has words of its own: none falls
// through to its bare name, so a new kind cannot ship unsaid.
func TestEveryKindHasWords(t *testing.T) {
	r := &purge.Report{Namespace: "ns", Mode: purge.DryRunNone}
	plan := &purge.Report{Namespace: "ns", Mode: purge.DryRunClient}
	for _, k := range []purge.ChangeKind{purge.ChangeDeletedActiveNamespace, purge.ChangeDeletedContent, purge.ChangeStrippedFinalizers,
		purge.ChangeForceDeletedPod, purge.ChangeExcludedFromWebhook, purge.ChangeRestoredWebhook, purge.ChangeFinalized, purge.ChangeNoLeftovers,
		purge.ChangeRemovedNamespaceFinalizers, purge.ChangeCreatedNamespace, purge.ChangeDeletedNamespaceAgain} {
		said(t, string(k), ChangeWords(purge.Change{Kind: k, Verb: "deletecollection", Resource: "widgets", Name: "w1", Objects: 2, Finalizers: []string{"f"}}, "ns"))
	}
	for _, k := range []purge.WarningKind{purge.WarnRevivalNeeded, purge.WarnTokensKept, purge.WarnServerRetried, purge.WarnRecreated, purge.WarnConflict,
		purge.WarnPutBack, purge.WarnNodeReady, purge.WarnBypassLeftover, purge.WarnBypassedRefusal, purge.WarnAPIServer} {
		for _, rep := range []*purge.Report{r, plan} {
			said(t, string(k), WarningWords(purge.Warning{Kind: k, Resource: "ValidatingWebhookConfiguration", Name: "w", Finalizers: []string{"f"}, Node: "n", Request: "delete x", Text: "the server says"}, rep))
		}
	}
	if WarningWords(purge.Warning{Kind: purge.WarnBypassLeftover, Name: "g", Resource: "k", Restored: true}, r) == WarningWords(purge.Warning{Kind: purge.WarnBypassLeftover, Name: "g", Resource: "k"}, r) {
		t.Error("a restored leftover reads as one only found")
	}
	for _, verb := range []string{"deletecollection", "delete", "list", "pass", "strip", "force-delete", "finalize", "discover", "restore", "patch"} {
		resource := "widgets"
		if verb == "patch" {
			resource = "namespaces"
		}
		f := purge.Failure{Verb: verb, Resource: resource, Name: "w1", Error: "refused", Count: 3, First: time.Now(), Last: time.Now(), Path: "/backup/x.yaml"}
		w := FailureWords(f, r)
		if verb != "restore" && (!strings.Contains(w, "refused") || !strings.Contains(w, "3 times")) {
			t.Errorf("%s: %q", verb, w)
		}
	}
	if w := FailureWords(purge.Failure{Verb: "restore", Resource: "ValidatingWebhookConfiguration", Name: "g", Error: "x"}, r); !strings.Contains(w, "re-run purge --force") {
		t.Errorf("restore without a copy: %q", w)
	}
	for _, s := range []purge.StepStatus{purge.StepPlanned, purge.StepSent, purge.StepFailed, purge.StepSkipped} {
		for _, step := range []purge.Step{{Verb: "deletecollection", Resource: "widgets", Status: s}, {Verb: "delete", Resource: "namespaces", Status: s}, {Verb: "patch", Resource: "namespaces", Status: s}} {
			said(t, string(s), StepResult(step))
		}
	}
	// Every shape words every status, and the whys of its kind.
	whys := map[purge.RowKind][]string{purge.RowStrip: {purge.StripNothingLeft, purge.StripLeftAlone}, purge.RowBypass: {purge.BypassRestoreFailed, purge.BypassLeftover}}
	for _, sh := range purge.Shapes() {
		for _, s := range []purge.RowStatus{purge.RowPlanned, purge.RowDone, purge.RowFailed, purge.RowGone, purge.RowSkipped} {
			said(t, string(sh.Kind)+"/"+string(s), RowResult(purge.Row{Kind: sh.Kind, Status: s, Error: "e"}))
		}
		for _, why := range whys[sh.Kind] {
			said(t, string(sh.Kind)+"/"+why, RowResult(purge.Row{Kind: sh.Kind, Status: purge.RowSkipped, Why: why, Error: "e"}))
		}
	}
	for _, c := range []purge.FinalizeCause{purge.FinalizeNothingRemains, purge.FinalizeAfterEscalations, purge.FinalizeDespiteDiscovery, purge.FinalizeContentRemains,
		purge.FinalizeDiscoveryFailed, purge.FinalizeDeletionErrors, purge.FinalizeRejected, purge.FinalizeOtherTokens, purge.FinalizeNamespaceHeld} {
		said(t, string(c), FinalizeReason(purge.Finalize{Cause: c, PodsFirst: true, Kept: []string{"x"}}))
	}
	for _, o := range []purge.Outcome{purge.OutcomePlanned, purge.OutcomeGone, purge.OutcomeRefused} {
		said(t, string(o), PurgeMessage(&purge.Report{Namespace: "ns", Outcome: o}))
	}
	for _, s := range []purge.StopReason{purge.StopTimeout, purge.StopInterrupted, purge.StopRecreated, purge.StopBlocked, purge.StopError} {
		said(t, string(s), PurgeMessage(&purge.Report{Namespace: "ns", Outcome: purge.OutcomeRemaining, Stop: &purge.Stop{Reason: s, After: "12s", Error: "boom", Recreated: []string{"x"}}}))
	}
	for _, w := range []purge.WaitReason{purge.WaitPods, purge.WaitFinalizers, purge.WaitRetry, purge.WaitNextPass, purge.WaitAPIServer} {
		said(t, string(w), waitWords(w))
	}
	for _, s := range []diagnose.UncheckedSubject{diagnose.UncheckedAPIServices, diagnose.UncheckedMutatingWebhooks, diagnose.UncheckedValidatingWebhooks,
		diagnose.UncheckedCRDs, diagnose.UncheckedService, diagnose.UncheckedEndpointSlices, diagnose.UncheckedHolderStatus, diagnose.UncheckedEvents, diagnose.UncheckedResource} {
		if w := UncheckedWords([]diagnose.Unchecked{{Subject: s, Name: "a/b", Error: "forbidden"}}); len(w) != 1 || strings.HasPrefix(w[0], ":") {
			t.Errorf("%s: %q", s, w)
		}
	}
	for _, s := range []diagnose.OwnerState{
		{State: diagnose.OwnerRunningReady, Found: &diagnose.WorkloadState{WorkloadRef: diagnose.WorkloadRef{Kind: "Deployment", Namespace: "a", Name: "b"}, Ready: 1, Want: 1}},
		{State: diagnose.OwnerRunningCannotFinish, Found: &diagnose.WorkloadState{WorkloadRef: diagnose.WorkloadRef{Kind: "Deployment", Namespace: "a", Name: "b"}, Ready: 1, Want: 1}},
		{State: diagnose.OwnerNotReady, Found: &diagnose.WorkloadState{WorkloadRef: diagnose.WorkloadRef{Kind: "Deployment", Namespace: "a", Name: "b"}, Want: 1}},
		{State: diagnose.OwnerNotFound, Looked: []diagnose.WorkloadRef{{Kind: "Deployment", Namespace: "a", Name: "b"}}},
		{State: diagnose.OwnerControlPlane, Owner: "kube-controller-manager"},
		{State: diagnose.OwnerNotChecked},
		{State: diagnose.OwnerUnknown},
		{State: diagnose.OwnerUnknown, Found: &diagnose.WorkloadState{WorkloadRef: diagnose.WorkloadRef{Kind: "Deployment", Namespace: "a", Name: "b"}}, Error: "forbidden"},
		{State: diagnose.OwnerUnknown, NotChecked: true},
	} {
		said(t, string(s.State), OwnerEvidence(s))
		said(t, string(s.State), ownerWords(s))
	}
}

// said fails when words are empty or only repeat the kind's name.
func said(t *testing.T, kind, words string) {
	t.Helper()
	if words == "" || words == kind {
		t.Errorf("%s has no words: %q", kind, words)
	}
}

// Every blocker kind's facts have their summary, evidence and next step.
func TestEveryBlockerHasWords(t *testing.T) {
	down := diagnose.ServiceState{}
	wh := diagnose.Webhook{Configuration: "guard", Name: "deny.guard", Type: "Validating", Service: &diagnose.ServiceRef{Namespace: "policy", Name: "guard"}}
	crd := &diagnose.CRD{Name: "convs.example.com", ConversionService: &diagnose.ServiceRef{Namespace: "conv", Name: "converter"}}
	content := diagnose.Content{Group: "example.com", Resource: "widgets", Count: 2, Finalizers: map[string]int{"example.com/cleanup": 2, "kubernetes.io/pvc-protection": 1}, Examples: []string{"w1"}}
	for _, tc := range []struct {
		b    diagnose.Blocker
		want []string
	}{
		{diagnose.Blocker{Kind: diagnose.BlockerAPIServiceUnavailable, Facts: &diagnose.APIServiceFacts{Failure: diagnose.DiscoveryFailure{GroupVersion: "custom.metrics.k8s.io/v1", Error: "stale",
			APIService: &diagnose.APIService{Name: "v1.custom.metrics.k8s.io"}}, ReadOnly: true}, Actions: []diagnose.Action{{Kind: diagnose.ActionCheckAPIServer, Target: "v1.custom.metrics.k8s.io"}}},
			[]string{"custom.metrics.k8s.io serves read-only metrics", "served by kube-apiserver itself"}},
		{diagnose.Blocker{Kind: diagnose.BlockerAPIServiceUnavailable, Facts: &diagnose.APIServiceFacts{Failure: diagnose.DiscoveryFailure{GroupVersion: "example.com/v1", Error: "stale"}},
			Actions: []diagnose.Action{{Kind: diagnose.ActionGetAPIService, Target: "v1.example.com", Of: "example.com/v1"}}}, []string{"kubectl get apiservice v1.example.com  # the aggregated API behind example.com/v1"}},
		{diagnose.Blocker{Kind: diagnose.BlockerSelfHostedAPIService, Facts: &diagnose.APIServiceFacts{Failure: diagnose.DiscoveryFailure{GroupVersion: "example.com/v1",
			APIService: &diagnose.APIService{Name: "v1.example.com", Service: "ns/api", Backend: &down}}}, Actions: []diagnose.Action{{Kind: diagnose.ActionDeleteAPIService, Target: "v1.example.com"}}},
			[]string{"served from this very namespace", "deleting the APIService orphans", "being deleted with the namespace anyway"}},
		{diagnose.Blocker{Kind: diagnose.BlockerNamespaceFinalizer, Facts: &diagnose.NamespaceFinalizerFacts{Token: "example.com/ns", Spec: []string{"kubernetes", "example.com/ns"}},
			Actions: []diagnose.Action{{Kind: diagnose.ActionCheckOwner, Target: "example.com/ns"}, diagnose.PurgeAction("ns", diagnose.FlagRemoveNamespaceFinalizers, "")}},
			[]string{`check the system that owns "example.com/ns"; if it is gone: kubectl ns-doctor purge ns --remove-namespace-finalizers`}},
		{diagnose.Blocker{Kind: diagnose.BlockerNamespaceFinalizer, Facts: &diagnose.NamespaceFinalizerFacts{Metadata: []string{"x"}},
			Actions: []diagnose.Action{{Kind: diagnose.ActionPatchNamespaceFinalizers, Target: "ns"}}}, []string{"metadata.finalizers of the namespace itself", "once their owner is known to be gone"}},
		{diagnose.Blocker{Kind: diagnose.BlockerPods, Facts: &diagnose.PodFacts{Stuck: []diagnose.StuckPod{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}, {Name: "e"}, {Name: "f"}}},
			Actions: []diagnose.Action{{Kind: diagnose.ActionCheckNodes, Namespace: "ns"}, diagnose.PurgeAction("ns", diagnose.FlagForceDeletePods, "")}},
			[]string{"6 pod(s) outlived their grace period; the namespace cannot go", "... and 1 more", "--force-delete-pods  # the plan says"}},
		{diagnose.Blocker{Kind: diagnose.BlockerForbidden, Facts: &diagnose.ListFacts{Resource: "secrets", Error: "forbidden"}, Actions: []diagnose.Action{{Kind: diagnose.ActionCheckAccess, Target: "secrets", Namespace: "ns"}}},
			[]string{"you may not list secrets", "kubectl auth can-i list secrets -n ns"}},
		{diagnose.Blocker{Kind: diagnose.BlockerConversionWebhook, Facts: &diagnose.ListFacts{Resource: "convs.example.com", Error: "conversion", CRD: crd, Conversion: &down},
			Actions: []diagnose.Action{{Kind: diagnose.ActionRestoreService, Target: "conv/converter"}, {Kind: diagnose.ActionPatchCRDConversion, Target: crd.Name}}},
			[]string{"conversion webhook of CRD convs.example.com is down", "conversion service conv/converter: not found", "kubectl patch crd convs.example.com"}},
		{diagnose.Blocker{Kind: diagnose.BlockerListFailed, Facts: &diagnose.ListFacts{Resource: "gadgets.example.com", Error: "503",
			APIService: &diagnose.APIService{Name: "v1.example.com", Service: "default/gadgets", Available: "True"}, Backend: &diagnose.ServiceState{Exists: true, ReadyEndpoints: 2}},
			Actions: []diagnose.Action{{Kind: diagnose.ActionCheckBackend, Target: "v1.example.com", Of: "default/gadgets"}, {Kind: diagnose.ActionDeleteAPIService, Target: "v1.example.com"}}},
			[]string{"its aggregated API (apiservice/v1.example.com) fails", "2 ready endpoints", "if that API is gone for good: kubectl delete apiservice v1.example.com"}},
		{diagnose.Blocker{Kind: diagnose.BlockerListFailed, Facts: &diagnose.ListFacts{Resource: "gadgets.example.com", Error: "500"},
			Actions: []diagnose.Action{{Kind: diagnose.ActionGetResource, Target: "gadgets.example.com", Namespace: "ns"}}}, []string{"cannot be listed, so the controller cannot delete it"}},
		{diagnose.Blocker{Kind: diagnose.BlockerCRDDeleting, Facts: &diagnose.FinalizerFacts{Content: content, DeletingCRD: "widgets.example.com",
			Owners:     map[string]diagnose.OwnerState{"kubernetes.io/pvc-protection": {State: diagnose.OwnerControlPlane, Owner: "kube-controller-manager"}},
			Foreground: []diagnose.ForegroundWait{{Owner: "widgets.example.com/w1", Dependent: "pods/p"}}, ForegroundMore: 2},
			Actions: []diagnose.Action{{Kind: diagnose.ActionCheckOwner}, diagnose.PurgeAction("ns", diagnose.FlagRemoveFinalizers, "example.com/cleanup")}},
			[]string{"CRD widgets.example.com is itself being deleted", "waits (foregroundDeletion) for its dependent pods/p", "... and 2 more", "(part of the control plane)"}},
		{diagnose.Blocker{Kind: diagnose.BlockerSelfHostedWebhook, Facts: &diagnose.WebhookFacts{Webhook: wh, Service: diagnose.ServiceState{Exists: true, ExternalName: "x.example.com"},
			Caught: []diagnose.Caught{{Resource: "widgets", Operations: []string{"DELETE"}}}},
			Actions: []diagnose.Action{diagnose.PurgeAction("ns", diagnose.FlagBypassWebhook, "guard"), {Kind: diagnose.ActionDeleteWebhookConfiguration, Target: "validatingwebhookconfiguration/guard"}}},
			[]string{"served from this very namespace", "ExternalName x.example.com", "# for the run only; or, its backend going away with the namespace: kubectl delete validatingwebhookconfiguration guard"}},
		{diagnose.Blocker{Kind: diagnose.BlockerListFailed, Facts: &diagnose.ListFacts{Resource: "widgets.example.com", Error: "failed to read",
			Corrupt: &diagnose.Corrupt{Names: []string{"w1"}, More: 2, Path: "/apis/example.com/v1/namespaces/ns/widgets"}},
			Actions: []diagnose.Action{{Kind: diagnose.ActionUnsafeDelete, Target: "/apis/example.com/v1/namespaces/ns/widgets/w1"}}},
			[]string{"cannot read some of its objects from storage", "unreadable: w1 and 2 more", "unsafe-delete-ignore-read-errors",
				"else, knowing what each guarded: kubectl delete --raw '/apis/example.com/v1/namespaces/ns/widgets/w1?ignoreStoreReadErrorWithClusterBreakingPotential=true'"}},
		{diagnose.Blocker{Kind: diagnose.BlockerListFailed, Facts: &diagnose.ListFacts{Resource: "widgets.example.com", Error: "unable to transform key",
			Corrupt: &diagnose.Corrupt{Path: "/apis/example.com/v1/namespaces/ns/widgets"}},
			Actions: []diagnose.Action{{Kind: diagnose.ActionEnableUnsafeDelete, Target: "/apis/example.com/v1/namespaces/ns/widgets"}}},
			[]string{"restore it (kube-apiserver's --encryption-provider-config); else turn on kube-apiserver's feature gate AllowUnsafeMalformedObjectDeletion"}},
		{diagnose.Blocker{Kind: diagnose.BlockerOwnerCannotFinish, Facts: &diagnose.FinalizerFacts{Content: content,
			CannotFinish: []diagnose.CannotFinish{{Object: "widgets.example.com/w1", Source: "condition Ready=False", Cause: diagnose.CauseForbidden,
				Message: "refused", User: "system:serviceaccount:ops:cleaner", Verb: "create", Resource: "jobs"}},
			GoneRefs: []diagnose.GoneRef{{Holder: "widgets.example.com/w1", HolderRef: diagnose.HolderRef{Field: "spec.credentials.secretRef", Kind: diagnose.RefSecret, Name: "creds"}}}},
			Actions: []diagnose.Action{{Kind: diagnose.ActionGrantAccess, Target: "system:serviceaccount:ops:cleaner", Of: "create jobs"},
				{Kind: diagnose.ActionCleanUpByHand, Target: "example.com/cleanup"}, diagnose.PurgeAction("ns", diagnose.FlagRemoveFinalizers, "example.com/cleanup")}},
			[]string{"their owner cannot finish: system:serviceaccount:ops:cleaner may not create jobs; waiting will not help",
				"widgets.example.com/w1 condition Ready=False: refused",
				"widgets.example.com/w1 spec.credentials.secretRef names secret creds: deleted with the namespace",
				"waiting will not help: let system:serviceaccount:ops:cleaner create jobs with a ClusterRole and ClusterRoleBinding",
				"; or else clean up by hand what the owner of example.com/cleanup was to clean up",
				"; then kubectl ns-doctor purge ns --remove-finalizers=example.com/cleanup"}},
		{diagnose.Blocker{Kind: diagnose.BlockerControllerNotRunning, Facts: &diagnose.ControllerFacts{Since: time.Minute, Deletable: []string{"configmaps/a"}, DeletableMore: 3},
			Actions: []diagnose.Action{{Kind: diagnose.ActionCheckController}, diagnose.PurgeAction("ns", "", "")}},
			[]string{"is still there", "configmaps/a is not even marked for deletion", "... and 3 more", "or run the pass yourself: kubectl ns-doctor purge ns"}},
	} {
		w := WordsOf(tc.b)
		all := w.Summary + "\n" + strings.Join(w.Evidence, "\n") + "\n" + w.NextStep
		for _, want := range tc.want {
			if !strings.Contains(all, want) {
				t.Errorf("%s lacks %q:\n%s", tc.b.Kind, want, all)
			}
		}
	}
	if w := WordsOf(diagnose.Blocker{Kind: "Future", Actions: []diagnose.Action{{Kind: diagnose.ActionDeleteWebhookConfiguration, Target: "k/n"}, {Kind: diagnose.ActionCheckNodes, Namespace: "ns"}}}); !strings.Contains(w.NextStep, "kubectl delete k n; or: check the pods' nodes") {
		t.Errorf("a kind without facts still says its steps: %+v", w)
	}
	n := NoteWords(diagnose.Note{Kind: diagnose.NoteOlderContent, Older: 1, Examples: []diagnose.OlderObject{{Resource: "configmaps", Name: "old"}}, Actions: []diagnose.Action{{Kind: diagnose.ActionExplainOrphans, Namespace: "ns"}}})
	if !strings.Contains(n.Summary, "older than the namespace") || !strings.Contains(n.NextStep, "explain --orphans") || len(n.Evidence) != 1 {
		t.Errorf("note: %+v", n)
	}
}

// A plan's report, whole: every section, its words and what would hold
// the namespace, in the human view and the document alike.
func TestHumanPlanGolden(t *testing.T) {
	r := planReport()
	var buf bytes.Buffer
	if err := (Human{Now: now}).Purge(&buf, r); err != nil {
		t.Fatal(err)
	}
	golden(t, "purge-plan.golden", buf.Bytes())
	var js bytes.Buffer
	if err := machine("json").Purge(&js, r); err != nil {
		t.Fatal(err)
	}
	golden(t, "purge-plan.json", js.Bytes())
	var doc PurgeDocument
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil || len(doc.Holding) != 1 || doc.Holding[0].Step == nil || doc.Holding[0].NextStep != doc.Holding[0].Step.Step {
		t.Errorf("holding in the document: %v, %+v", err, doc.Holding)
	}
}

func planReport() *purge.Report {
	refusal := &diagnose.Refusal{By: diagnose.RefusedByWebhook, Webhook: "deny.guard", Configuration: "guard", ConfigurationKind: "validatingwebhookconfiguration", Service: "policy/guard", ServiceState: &diagnose.ServiceState{}, Outside: true}
	webhook := diagnose.Blocker{Kind: diagnose.BlockerWebhook, Subject: "guard",
		Facts: &diagnose.WebhookFacts{Webhook: diagnose.Webhook{Configuration: "guard", Name: "deny.guard", Type: "Validating", Service: &diagnose.ServiceRef{Namespace: "policy", Name: "guard"}},
			Caught: []diagnose.Caught{{Resource: "widgets.example.com", Operations: []string{"DELETE", "UPDATE"}}}},
		Actions: []diagnose.Action{{Kind: diagnose.ActionRestoreService, Namespace: "team-a", Target: "policy/guard", Of: "validatingwebhookconfiguration/guard"},
			diagnose.PurgeAction("team-a", diagnose.FlagBypassWebhook, "guard"), {Kind: diagnose.ActionDeleteWebhookConfiguration, Namespace: "team-a", Target: "validatingwebhookconfiguration/guard"}}}
	step, _ := webhook.PurgeStep()
	return &purge.Report{
		Namespace: "team-a", Context: "kind-dev", Cluster: "kind-dev", Mode: purge.DryRunServer, Outcome: purge.OutcomePlanned, Passes: 2,
		Ordering: compat.Ordering{ServerVersion: "v1.36.3", Ordered: true, Source: compat.FromFlag},
		Steps: []purge.Step{
			{Pass: 1, Verb: "deletecollection", Resource: "configmaps", Objects: 3, Status: purge.StepPlanned},
			{Pass: 1, Verb: "deletecollection", Resource: "widgets.example.com", Objects: 1, Status: purge.StepFailed, Error: "Internal error occurred: failed calling webhook", Refusal: refusal},
			{Pass: 2, Verb: "delete", Resource: "gizmos.example.com", Name: "g1", Objects: 1, Status: purge.StepPlanned},
		},
		Rows: []purge.Row{
			{Kind: purge.RowStrip, Resource: "widgets.example.com", Name: "w1", Status: purge.RowFailed, Error: "x", Refusal: refusal, Extra: purge.Strip{Finalizers: []string{"example.com/cleanup"}}},
			{Kind: purge.RowForcedPod, Resource: "pods", Name: "p1", Status: purge.RowPlanned, Extra: purge.ForcedPod{Node: "gone", NodeState: purge.NodeMissing, TerminatingSeconds: 90, AfterSeconds: 10}},
			{Kind: purge.RowBypass, Resource: "validatingwebhookconfigurations", Name: "other", Status: purge.RowPlanned, Extra: purge.Bypass{Kind: "ValidatingWebhookConfiguration", Catches: []string{"DELETE pods"}}},
		},
		Leaks:       []purge.Leak{{Finalizer: "example.com/cleanup"}, {Finalizer: "argo", Owner: "Argo CD", Leak: "the app's resources stay"}},
		Remaining:   []purge.Remaining{{Resource: "widgets.example.com", Count: 1, Finalizers: map[string]int{"example.com/cleanup": 1}}},
		Conditions:  []purge.Condition{{Type: "NamespaceDeletionContentFailure", Status: "True", Reason: "ContentDeletionFailed", Message: "Failed to delete all resource types, 1 remaining: failed calling webhook"}},
		Finalize:    purge.Finalize{Cause: purge.FinalizeDeletionErrors, Error: "failed calling webhook"},
		Warnings:    []purge.Warning{{Kind: purge.WarnBypassedRefusal, Request: "delete pods/p1", Text: "denied"}},
		Failures:    []purge.Failure{{Verb: "deletecollection", Resource: "widgets.example.com", Error: "Internal error occurred: failed calling webhook", Refusal: refusal, Count: 2, First: now, Last: now}},
		Flags:       []diagnose.Action{diagnose.PurgeAction("team-a", diagnose.FlagRemoveFinalizers, "example.com/*")},
		Escalations: purge.Asked{diagnose.FlagRemoveFinalizers: {"example.com/*"}}.Used(),
		Holding:     []purge.Hold{{Blocker: webhook, Step: &step}},
	}
}

// Several namespaces: a line each, then, for each one that stays, why and
// the next step.
func TestHumanPurges(t *testing.T) {
	done := &purge.Report{Namespace: "ci-1", Mode: purge.DryRunNone, Outcome: purge.OutcomeGone, Context: "kind", Cluster: "kind"}
	stuck := planReport()
	stuck.Mode, stuck.Outcome, stuck.Stop = purge.DryRunNone, purge.OutcomeRemaining, &purge.Stop{Reason: purge.StopBlocked, After: "20s"}
	var buf bytes.Buffer
	if err := (Human{Now: now}).Purges(&buf, []*purge.Report{done, stuck}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"INCOMPLETE 2 namespaces (context kind, cluster kind): 1 gone, 1 still there", "holds: BlockingWebhook", "next: kubectl ns-doctor purge team-a --force", "waiting will not help"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	buf.Reset()
	_ = (Human{}).Purges(&buf, nil)
	if !strings.Contains(buf.String(), "no namespace to purge") {
		t.Errorf("none: %q", buf.String())
	}
	var js bytes.Buffer
	if err := machine("yaml").Purges(&js, []*purge.Report{done}); err != nil || !strings.Contains(js.String(), "kind: PurgeReportList") {
		t.Errorf("yaml list: %v\n%s", err, js.String())
	}
}

// The live progress: a line per pass off a terminal, what failed and
// nothing claimed about content that is not gone; the API server's
// warnings once each; nothing but warnings in warnings-only mode.
func TestProgressLines(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, false, true)
	refusal := &diagnose.Refusal{By: diagnose.RefusedByWebhook, Webhook: "deny.guard", Configuration: "guard", ConfigurationKind: "validatingwebhookconfiguration"}
	for _, e := range []purge.Event{
		{Namespace: "a", Kind: purge.EventBackup, Dir: "/b"},
		{Namespace: "a", Kind: purge.EventPass, Pass: 1, Types: 3},
		{Namespace: "a", Kind: purge.EventRequest, Step: &purge.Step{Verb: "deletecollection", Objects: 2, Status: purge.StepSent}},
		{Namespace: "a", Kind: purge.EventPassEnded, Pass: 1, Failures: []purge.Failure{{Verb: "deletecollection", Resource: "widgets", Refusal: refusal, Count: 2, First: now}}},
		{Namespace: "a", Kind: purge.EventPassEnded, Pass: 2, Deleted: 1, Remaining: []purge.Remaining{{Resource: "widgets", Count: 1}}, Estimate: 15},
		{Namespace: "a", Kind: purge.EventPassEnded, Pass: 3},
		{Namespace: "a", Kind: purge.EventRetrying, Err: "connection refused", Until: time.Now().Add(2 * time.Second)},
		{Namespace: "a", Kind: purge.EventWarning, Err: "deprecated"},
		{Namespace: "a", Kind: purge.EventDone},
	} {
		p.Show(e)
	}
	p.Close()
	out := buf.String()
	for _, want := range []string{"a: backup: /b", "a: pass 1: failed: deletecollection widgets: refused by webhook deny.guard of validatingwebhookconfiguration/guard (x2 since 12:00:00); nothing deleted",
		"a: pass 2: remaining widgets=1 (estimate 15s)", "a: pass 3: no content remains", "the API server is unavailable (connection refused); retrying in", "Warning: deprecated\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "pass 1: no content remains") {
		t.Errorf("a pass with refusals claims nothing remains:\n%s", out)
	}
	buf.Reset()
	w := NewWarnings(&buf)
	w.Show(purge.Event{Kind: purge.EventPassEnded, Pass: 1})
	w.Show(purge.Event{Kind: purge.EventWarning, Err: "careful"})
	w.Close()
	if buf.String() != "Warning: careful\n" {
		t.Errorf("warnings only: %q", buf.String())
	}
	s := &runState{namespace: "a", pass: 2, types: 5, typesDone: 3, deleted: 7, remaining: []purge.Remaining{{Resource: "a", Count: 1}, {Resource: "b", Count: 1}, {Resource: "c", Count: 1}, {Resource: "d", Count: 1}},
		failures: []purge.Failure{{Verb: "list", Resource: "x", Error: "e"}, {Verb: "list", Resource: "y", Error: "e"}}, until: now.Add(8 * time.Second), waitFor: purge.WaitFinalizers}
	if line := progressLine(s, now); !strings.Contains(line, "pass 2, 3 of 5 types done, 7 objects deleted; left: a 1, b 1, c 1, +1 types; failed: list x: e, and 1 more; waiting for finalizers until 12:00:08 (8s)") {
		t.Errorf("live line: %s", line)
	}
}

// The other views: leftovers, a line per namespace, the status line, the
// version.
func TestOtherViews(t *testing.T) {
	orphans := diagnose.OrphanReport{ObservedAt: now, Namespaces: []diagnose.FormerNamespace{{Name: "old", Objects: 2, Content: []diagnose.Content{{Resource: "configmaps", Count: 2, Examples: []string{"a", "b"}}}}},
		Unchecked: []diagnose.Unchecked{{Subject: diagnose.UncheckedResource, Name: "gadgets.example.com", Error: "503"}}}
	var buf bytes.Buffer
	if err := (Human{Now: now}).Orphans(&buf, orphans); err != nil || !strings.Contains(buf.String(), "purge --orphans old") || !strings.Contains(buf.String(), "gadgets.example.com: 503") {
		t.Errorf("orphans: %v\n%s", err, buf.String())
	}
	for _, r := range []diagnose.OrphanReport{{}, {Unchecked: orphans.Unchecked}} {
		buf.Reset()
		_ = (Human{}).Orphans(&buf, r)
		if !strings.Contains(buf.String(), "no leftovers") {
			t.Errorf("no orphans: %s", buf.String())
		}
	}
	buf.Reset()
	if err := machine("json").Orphans(&buf, orphans); err != nil || !strings.Contains(buf.String(), `"kind": "OrphanedContent"`) {
		t.Errorf("orphans json: %v %s", err, buf.String())
	}
	r := stuckReport()
	if line := StatusLine(r); !strings.HasPrefix(line, "demo: stuck, 1 objects left (widgets.example.com 1); APIServiceUnavailable:") {
		t.Errorf("status line: %s", line)
	}
	buf.Reset()
	_ = (Human{}).Summaries(&buf, nil)
	if !strings.Contains(buf.String(), "no namespace is being deleted") {
		t.Errorf("no diagnoses: %q", buf.String())
	}
	server := compat.For("v1.37.2")
	v := VersionReport{Info: version.Info{Version: "v1.2.3", Commit: "abc"}, Server: &server}
	buf.Reset()
	if err := (Human{}).Version(&buf, v); err != nil || !strings.Contains(buf.String(), "ns-doctor v1.2.3") ||
		!strings.Contains(buf.String(), "server: v1.37.2\n  yes pods first (from 1.33)\n  yes no other deletion order (from 1.37)") {
		t.Errorf("version: %v %s", err, buf.String())
	}
	buf.Reset()
	if err := machine("yaml").Version(&buf, v); err != nil || !strings.Contains(buf.String(), "v1.2.3") || !strings.Contains(buf.String(), "behaviour: UpdateWithoutNamespace\n    holds: true") {
		t.Errorf("version yaml: %v %s", err, buf.String())
	}
	notes := stuckReport()
	notes.Notes = []diagnose.Note{{Kind: diagnose.NoteOlderContent, Older: 1, Examples: []diagnose.OlderObject{{Resource: "configmaps", Name: "old"}}, Actions: []diagnose.Action{{Kind: diagnose.ActionExplainOrphans, Namespace: "demo"}}}}
	notes.Unchecked = []diagnose.Unchecked{{Subject: diagnose.UncheckedEvents, Error: "forbidden"}}
	buf.Reset()
	_ = (Human{Now: now}).Diagnosis(&buf, notes)
	if !strings.Contains(buf.String(), "Note: ContentOlderThanNamespace") || !strings.Contains(buf.String(), "events: forbidden") {
		t.Errorf("notes and unchecked:\n%s", buf.String())
	}
}

// A writer that fails is reported once, not as a panic or a half report.
func TestWriteErrors(t *testing.T) {
	bad := failingWriter{}
	if err := (Human{}).Purge(bad, planReport()); err == nil {
		t.Error("purge: no error")
	}
	if err := (Human{}).Diagnosis(bad, stuckReport()); err == nil {
		t.Error("diagnosis: no error")
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// A cluster that could not be read is said in a few words.
func TestReachWords(t *testing.T) {
	for err, want := range map[string]string{
		`listing namespaces: Get "https://10.0.0.1/api/v1/namespaces": net/http: request canceled (Client.Timeout exceeded while awaiting headers)`: "no answer within --request-timeout",
		`Get "https://10.0.0.1/api": dial tcp 10.0.0.1:443: connect: connection refused`:                                                            "connection refused",
		`Get "https://nope.example/api": dial tcp: lookup nope.example: no such host`:                                                               "unknown host",
		`Get "https://10.0.0.1/api": tls: failed to verify certificate: x509: certificate signed by unknown authority`:                              "TLS: x509: certificate signed by unknown authority",
		"something else": "something else",
	} {
		if got := ReachWords(errors.New(err)); got != want {
			t.Errorf("%s: %q, want %q", err, got, want)
		}
	}
}
