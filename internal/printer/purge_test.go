package printer

import (
	"bytes"
	"testing"

	"github.com/ns-doctor/ns-doctor/internal/compat"
	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// incompleteReport is a force run stopped because content kept coming
// back, with a finalizer a live controller put back.
func incompleteReport() *purge.Report {
	return &purge.Report{
		Namespace: "team-a", Context: "kind-dev", Cluster: "kind-dev", Mode: purge.DryRunNone,
		Ordering: compat.Ordering{ServerVersion: "v1.33.13", Ordered: true, Source: compat.FromServerVersion},
		Outcome:  purge.OutcomeRemaining, Passes: 4,
		Stop: &purge.Stop{Reason: purge.StopRecreated, Recreated: []string{"gadgets.example.com"}, CreatedBy: []string{"gadget-operator"}},
		Steps: []purge.Step{
			{Verb: "deletecollection", Resource: "configmaps", Objects: 0, Status: purge.StepSent},
			{Verb: "deletecollection", Resource: "gadgets.example.com", Objects: 2, Status: purge.StepSent},
			{Verb: "deletecollection", Resource: "sprockets.example.com", Objects: 1, Status: purge.StepFailed, Error: "sprocket backend is down"},
		},
		Rows: []purge.Row{
			{Kind: purge.RowStrip, Resource: "gadgets.example.com", Name: "g2", Status: purge.RowDone, Extra: purge.Strip{Finalizers: []string{"example.com/operator"}}},
			{Kind: purge.RowStrip, Resource: "gadgets.example.com", Name: "g2", Status: purge.RowSkipped, Why: purge.StripLeftAlone, Extra: purge.Strip{Finalizers: []string{"example.com/operator"}}},
		},
		Recreated: []purge.Recreated{
			{Resource: "gadgets.example.com", Name: "g1", Times: 3, CreatedBy: "gadget-operator"},
			{Resource: "gadgets.example.com", Name: "g3", Times: 1},
		},
		Remaining:  []purge.Remaining{{Resource: "gadgets.example.com", Count: 2, Finalizers: map[string]int{"example.com/operator": 1}}},
		Conditions: []purge.Condition{},
		Finalize:   purge.Finalize{Cause: purge.FinalizeContentRemains, Estimate: 15},
		BackupDir:  "/home/u/.cache/ns-doctor/backups/team-a-20261122T120000Z", BackedUp: 7,
		Changes: []purge.Change{
			{Kind: purge.ChangeDeletedContent, Verb: "deletecollection", Resource: "gadgets.example.com", Objects: 2},
			{Kind: purge.ChangeStrippedFinalizers, Resource: "gadgets.example.com", Name: "g2", Finalizers: []string{"example.com/operator"}},
		},
		Warnings: []purge.Warning{
			{Kind: purge.WarnRecreated, Resource: "gadgets.example.com", Name: "g1"},
			{Kind: purge.WarnPutBack, Resource: "gadgets.example.com", Name: "g2", Finalizers: []string{"example.com/operator"}},
		},
		Failures: []purge.Failure{{Verb: "deletecollection", Resource: "sprockets.example.com", Error: "sprocket backend is down", Count: 1, First: now, Last: now}},
	}
}

func TestHumanPurgeGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := (Human{Now: now}).Purge(&buf, incompleteReport()); err != nil {
		t.Fatal(err)
	}
	golden(t, "purge-incomplete.golden", buf.Bytes())
}
