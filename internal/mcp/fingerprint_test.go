package mcp

import (
	"slices"
	"testing"

	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// rowOf is a row of a shape's kind whose extra is that shape's.
func rowOf(t *testing.T, sh purge.Shape, name string, status purge.RowStatus) purge.Row {
	t.Helper()
	extras := map[purge.RowKind]purge.Extra{
		purge.RowStrip:     purge.Strip{Finalizers: []string{"example.com/x"}},
		purge.RowForcedPod: purge.ForcedPod{Node: "n1", NodeState: purge.NodeMissing},
		purge.RowBypass:    purge.Bypass{Kind: "ValidatingWebhookConfiguration", Webhooks: []string{"w.example.com"}},
	}
	extra, ok := extras[sh.Kind]
	if !ok {
		t.Fatalf("no sample extra for shape %s: add one here", sh.Kind)
	}
	return purge.Row{Kind: sh.Kind, Resource: "things", Name: name, Status: status, Extra: extra}
}

// Whatever an agent is shown of a plan is what purge_namespace checks has
// not moved: a row of any shape added, removed, renamed or with another
// status changes the fingerprint, and so does what its extra says it
// touches; its count is in would_change.
func TestFingerprintCoversEveryRow(t *testing.T) {
	for _, sh := range purge.Shapes() {
		t.Run(string(sh.Kind), func(t *testing.T) {
			base := func() *purge.Report {
				return &purge.Report{Namespace: "ns", Rows: []purge.Row{rowOf(t, sh, "a", purge.RowPlanned), rowOf(t, sh, "b", purge.RowPlanned)}}
			}
			plan := wouldChange(base())
			if plan.Of(sh.Kind).Rows != 2 {
				t.Errorf("would_change counts %+v", plan.Of(sh.Kind))
			}
			changes := map[string]func(r *purge.Report){
				"a row added":        func(r *purge.Report) { r.Rows = append(r.Rows, rowOf(t, sh, "c", purge.RowPlanned)) },
				"a row removed":      func(r *purge.Report) { r.Rows = r.Rows[:1] },
				"a row renamed":      func(r *purge.Report) { r.Rows[1].Name = "c" },
				"a row's status":     func(r *purge.Report) { r.Rows[1].Status = purge.RowFailed },
				"a row's resource":   func(r *purge.Report) { r.Rows[1].Resource = "others" },
				"what a row touches": func(r *purge.Report) { r.Rows[1].Extra = touching(r.Rows[1].Extra) },
			}
			for what, change := range changes {
				r := base()
				change(r)
				if wouldChange(r).Fingerprint == plan.Fingerprint {
					t.Errorf("%s: the fingerprint did not change", what)
				}
			}
			if again := wouldChange(base()); again.Fingerprint != plan.Fingerprint {
				t.Errorf("the same plan, another fingerprint")
			}
		})
	}
}

// touching changes what an extra says its row touches (the finalizers, the
// node, the webhooks).
func touching(e purge.Extra) purge.Extra {
	switch x := e.(type) {
	case purge.Strip:
		x.Finalizers = append(slices.Clone(x.Finalizers), "example.com/y")
		return x
	case purge.ForcedPod:
		x.Node = "n2"
		return x
	case purge.Bypass:
		x.Webhooks = append(slices.Clone(x.Webhooks), "v.example.com")
		return x
	}
	return e
}

// The rows are bounded as the human view bounds its tables.
func TestRowsAreBoundedAsRows(t *testing.T) {
	if !slices.Contains(rowLists, "rows") || !slices.Contains(rowLists, "steps") {
		t.Errorf("rowLists %v", rowLists)
	}
}
