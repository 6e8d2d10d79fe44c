package printer

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/printers"

	"github.com/ns-doctor/ns-doctor/internal/compat"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) *time.Time {
	t := now.Add(-d)
	return &t
}

// stuckReport is the demo's diagnosis, fixed.
func stuckReport() diagnose.Report {
	cond := func(typ, status, reason, msg string) diagnose.Condition {
		v := &diagnose.ConditionValue{Status: status, Reason: reason, Message: msg, LastTransitionTime: at(2 * time.Minute)}
		c := *v
		c.LastTransitionTime = nil
		return diagnose.Condition{Type: typ, Controller: v, Computed: &c, Agree: true}
	}
	metrics := diagnose.DiscoveryFailure{
		GroupVersion: "metrics.k8s.io/v1beta1", Error: "stale GroupVersion discovery: metrics.k8s.io/v1beta1",
		APIService: &diagnose.APIService{Name: "v1beta1.metrics.k8s.io", Service: "kube-system/metrics-server", Available: "False",
			Reason: "ServiceNotFound", Message: `service/metrics-server in "kube-system" is not present`, Backend: &diagnose.ServiceState{}},
	}
	widgets := diagnose.Content{Group: "example.com", Version: "v1", Resource: "widgets", Count: 1, Terminating: 1, OldestDeletion: at(2 * time.Minute),
		Finalizers: map[string]int{"example.com/cleanup": 1}, Examples: []string{"stuck-widget"}}
	return diagnose.Report{
		ObservedAt: now,
		Verdict:    diagnose.Verdict{State: diagnose.StateStuck},
		Namespace: diagnose.Namespace{Name: "demo", UID: "0d5c3d4e-1111-2222-3333-444455556666", Phase: "Terminating",
			CreationTimestamp: *at(3 * time.Hour), DeletionTimestamp: at(2 * time.Minute),
			SpecFinalizers: []string{"kubernetes"}, MetadataFinalizers: []string{}},
		Conditions: []diagnose.Condition{
			cond("NamespaceDeletionDiscoveryFailure", "True", "DiscoveryFailed", "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1"),
			cond("NamespaceDeletionGroupVersionParsingFailure", "False", "ParsedGroupVersions", "All legacy kube types successfully parsed"),
			cond("NamespaceDeletionContentFailure", "False", "ContentDeleted", "All content successfully deleted, may be waiting on finalization"),
			cond("NamespaceContentRemaining", "True", "SomeResourcesRemain", "Some resources are remaining: widgets.example.com has 1 resource instances"),
			{Type: "NamespaceFinalizersRemaining",
				Controller: &diagnose.ConditionValue{Status: "True", Reason: "SomeFinalizersRemain", Message: "Some finalizers are remaining: example.com/cleanup in 1 resource instances", LastTransitionTime: at(time.Minute)},
				Computed:   &diagnose.ConditionValue{Status: "True", Reason: "SomeFinalizersRemain", Message: "Some content in the namespace has finalizers remaining: example.com/cleanup in 1 resource instances"}},
		},
		Ordering:  diagnose.Ordering{Ordering: compat.Ordering{ServerVersion: "v1.36.3", Ordered: true, Source: compat.FromServerVersion}},
		Discovery: diagnose.Discovery{Resources: 34, Failures: []diagnose.DiscoveryFailure{metrics}},
		Content: []diagnose.Content{
			widgets,
			{Version: "v1", Resource: "secrets", Error: `secrets is forbidden: User "viewer" cannot list resource "secrets" in API group "" in the namespace "demo"`},
		},
		Finalizers: []diagnose.FinalizerInfo{{Name: "example.com/cleanup", Objects: 1, OwnerState: diagnose.OwnerState{State: diagnose.OwnerUnknown}},
			{Name: "resources-finalizer.argocd.argoproj.io", Objects: 2, Known: true, Owner: "Argo CD application controller", OwnerSource: diagnose.SourceCatalogue, Project: "Argo CD",
				Guards: "the Application's child resources are deleted first", Leak: "the Application's resources stay in the destination cluster",
				Source: "https://github.com/argoproj/argo-cd/blob/v2.14.0/common/common.go",
				OwnerState: diagnose.OwnerState{State: diagnose.OwnerNotFound, Owner: "Argo CD application controller",
					Looked: []diagnose.WorkloadRef{{Kind: "StatefulSet", Namespace: "argocd", Name: "argocd-application-controller"}}}}},
		Holders: []diagnose.Holder{{Resource: "widgets.example.com", Name: "stuck-widget", Conditions: []diagnose.HolderCondition{
			{Type: "Ready", Status: "False", Reason: "DeleteFailed", Message: "cannot delete bucket: access denied", LastTransitionTime: at(time.Minute)}}}},
		Events: []diagnose.Event{{Reason: "FailedDelete", Message: "bucket still has objects", Object: "widget/stuck-widget", Count: 3, Last: *at(30 * time.Second)}},
		Blockers: []diagnose.Blocker{
			{Kind: diagnose.BlockerAPIServiceUnavailable, Subject: "metrics.k8s.io/v1beta1",
				Facts: &diagnose.APIServiceFacts{Failure: metrics, ReadOnly: true},
				Actions: []diagnose.Action{
					{Kind: diagnose.ActionRestoreService, Namespace: "demo", Target: "kube-system/metrics-server", Of: "apiservice/v1beta1.metrics.k8s.io"},
					{Kind: diagnose.ActionDeleteAPIService, Namespace: "demo", Target: "v1beta1.metrics.k8s.io"},
				}},
			{Kind: diagnose.BlockerFinalizers, Subject: "example.com/cleanup",
				Facts: &diagnose.FinalizerFacts{Content: widgets, Owners: map[string]diagnose.OwnerState{}},
				Actions: []diagnose.Action{{Kind: diagnose.ActionCheckOwner, Namespace: "demo", Target: "example.com/cleanup"},
					diagnose.PurgeAction("demo", diagnose.FlagRemoveFinalizers, "example.com/cleanup")}},
		},
	}
}

func TestHumanReportGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := (Human{Now: now}).Diagnosis(&buf, stuckReport()); err != nil {
		t.Fatal(err)
	}
	golden(t, "stuck.golden", buf.Bytes())
	for i, line := range strings.Split(buf.String(), "\n") {
		if strings.Contains(line, "next:") || strings.HasPrefix(line, "GROUP-VERSION") || strings.HasPrefix(line, "metrics.k8s.io") {
			continue // commands are never wrapped; table rows are as wide as their names
		}
		if len(line) > width {
			t.Errorf("line %d is %d columns: %q", i+1, len(line), line)
		}
	}
}

func TestHumanSummaryGolden(t *testing.T) {
	active := stuckReport()
	active.Namespace.Name, active.Namespace.DeletionTimestamp = "team-a", nil
	active.Verdict = diagnose.Verdict{State: diagnose.StateActive}
	active.Blockers = nil
	var buf bytes.Buffer
	if err := (Human{Now: now}).Summaries(&buf, []diagnose.Report{stuckReport(), active}); err != nil {
		t.Fatal(err)
	}
	golden(t, "summary.golden", buf.Bytes())
}

func TestColourOnlyWhenAsked(t *testing.T) {
	var plain, coloured bytes.Buffer
	_ = Human{Now: now}.Diagnosis(&plain, stuckReport())
	_ = Human{Now: now, Color: true}.Diagnosis(&coloured, stuckReport())
	if strings.Contains(plain.String(), "\x1b[") {
		t.Error("colour escapes without Color")
	}
	if !strings.Contains(coloured.String(), "\x1b[31;1mSTUCK\x1b[") {
		t.Errorf("no red verdict with Color:\n%q", coloured.String()[:80])
	}
	var js bytes.Buffer
	if err := Print(&js, "json", Diagnosis(stuckReport())); err != nil || strings.Contains(js.String(), "\x1b[") {
		t.Errorf("json: %v, escapes present: %v", err, strings.Contains(js.String(), "\x1b["))
	}
}

// machine is the printer -o json or -o yaml makes.
func machine(format string) Machine {
	if format == "yaml" {
		return Machine{Printer: &printers.YAMLPrinter{}, Format: format}
	}
	return Machine{Printer: &printers.JSONPrinter{}, Format: format}
}

// jsonpath, go-template and name print from the same document as JSON:
// the fields docs/schema.md names, and namespace/NAME per report.
func TestTemplatesAndNames(t *testing.T) {
	jp, err := printers.NewJSONPathPrinter("{.items[*].namespace.name} {.items[0].blockers[0].kind}")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	reports := []diagnose.Report{stuckReport(), stuckReport()}
	reports[1].Namespace.Name = "other"
	if err := (Machine{Printer: jp}).Diagnoses(&out, reports); err != nil {
		t.Fatal(err)
	}
	want := "demo other " + string(stuckReport().Blockers[0].Kind)
	if out.String() != want {
		t.Errorf("jsonpath: %q, want %q", out.String(), want)
	}
	gt, err := printers.NewGoTemplatePrinter([]byte(`{{.namespace.name}}: {{.verdict.state}}`))
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := (Machine{Printer: gt}).Diagnosis(&out, stuckReport()); err != nil || out.String() != "demo: Stuck" {
		t.Errorf("go-template: %q, %v", out.String(), err)
	}
	out.Reset()
	if err := (Machine{Format: "name"}).Diagnoses(&out, reports); err != nil || out.String() != "namespace/demo\nnamespace/other\n" {
		t.Errorf("name: %q, %v", out.String(), err)
	}
	// A template that fails on this report says so in one line.
	bad, err := printers.NewJSONPathPrinter("{.items[5].namespace}")
	if err != nil {
		t.Fatal(err)
	}
	bad.AllowMissingKeys(false)
	err = (Machine{Printer: bad}).Diagnoses(&out, reports)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "error executing jsonpath") {
		t.Errorf("a failing template: %v", err)
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/printer -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test ./internal/printer -update rewrites it):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// The JSON and YAML documents are a contract (docs/schema.md): a change
// to them shows up here as a golden diff.
func TestMachineGolden(t *testing.T) {
	for _, format := range []string{"json", "yaml"} {
		var diag, list, pur, summaries bytes.Buffer
		// A printer per print, as a command prints once.
		if err := machine(format).Diagnosis(&diag, stuckReport()); err != nil {
			t.Fatal(err)
		}
		if err := machine(format).Diagnoses(&list, nil); err != nil {
			t.Fatal(err)
		}
		if err := machine(format).Purge(&pur, incompleteReport()); err != nil {
			t.Fatal(err)
		}
		if err := machine(format).Summaries(&summaries, []diagnose.Report{stuckReport()}); err != nil {
			t.Fatal(err)
		}
		golden(t, "stuck."+format, diag.Bytes())
		golden(t, "empty-list."+format, list.Bytes())
		golden(t, "purge-incomplete."+format, pur.Bytes())
		golden(t, "summary-list."+format, summaries.Bytes())
	}
}

// When the controller's conditions are those of the other deletion order,
// the human view says so and names the flag.
func TestOtherOrderingNote(t *testing.T) {
	r := stuckReport()
	r.Ordering.Ordered, r.Ordering.OtherMatches = false, true
	var buf bytes.Buffer
	if err := (Human{Now: now}).Diagnosis(&buf, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "OrderedNamespaceDeletion=on; run again with --ordered-deletion=on") {
		t.Errorf("no note naming the flag:\n%s", buf.String())
	}
	r.Ordering.OtherMatches = false
	buf.Reset()
	_ = (Human{Now: now}).Diagnosis(&buf, r)
	if strings.Contains(buf.String(), "--ordered-deletion") {
		t.Errorf("a note without cause:\n%s", buf.String())
	}
}
