package purge

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// samples are a row of each kind, with its extra.
func samples() []Row {
	return []Row{
		{Kind: RowStrip, Resource: "widgets.example.com", Name: "w1", Status: RowPlanned, Extra: Strip{Finalizers: []string{"b.io/x", "a.io/y"}}},
		{Kind: RowForcedPod, Resource: "pods", Name: "p1", Status: RowDone, Extra: ForcedPod{Node: "n1", NodeState: NodeMissing, TerminatingSeconds: 90}},
		{Kind: RowBypass, Resource: "validatingwebhookconfigurations", Name: "g", Status: RowPlanned, Extra: Bypass{Kind: "ValidatingWebhookConfiguration", Webhooks: []string{"w"}, Catches: []string{"DELETE pods"}}},
	}
}

// Every kind of row has a shape whose every part is set, and every status
// and why of it is said in words of its own.
func TestEveryShapeIsComplete(t *testing.T) {
	rows := samples()
	if len(rows) != len(Shapes()) {
		t.Fatalf("%d samples for %d shapes: add a sample", len(rows), len(Shapes()))
	}
	whys := map[RowKind][]string{RowStrip: {StripNothingLeft, StripLeftAlone}, RowBypass: {BypassRestoreFailed, BypassLeftover}}
	for _, row := range rows {
		sh, ok := ShapeOf(row.Kind)
		if !ok || sh.Section == "" || sh.Title == "" || sh.Short == "" || sh.Key == "" || sh.Done == "" || len(sh.Columns) == 0 || sh.Fingerprint(row) == "" {
			t.Fatalf("%s: shape incomplete: %+v", row.Kind, sh)
		}
		if sh.Extra == nil || sh.Extra.Of() != row.Kind || reflect.TypeOf(sh.Extra) != reflect.TypeOf(row.Extra) {
			t.Errorf("%s: the shape's extra is %T", row.Kind, sh.Extra)
		}
		if row.Extra.Of() != row.Kind {
			t.Errorf("%s: its extra is of %s", row.Kind, row.Extra.Of())
		}
		for _, c := range sh.Columns {
			if c.Header == "" || len(c.Cell(row)) == 0 {
				t.Errorf("%s: column %q empty for %+v", row.Kind, c.Header, row)
			}
		}
		said := map[string]string{}
		for _, s := range []RowStatus{RowPlanned, RowDone, RowGone} {
			row.Status = s
			said[string(s)] = sh.Result(row)
		}
		for _, why := range whys[row.Kind] {
			row.Status, row.Why = RowSkipped, why
			said[why] = sh.Result(row)
			if sh.LegacyStatus(row) != why {
				t.Errorf("%s: the section says %q for %s", row.Kind, sh.LegacyStatus(row), why)
			}
		}
		seen := map[string]string{}
		for status, words := range said {
			if other, dup := seen[words]; words == "" || dup {
				t.Errorf("%s: %s says %q (as %s does)", row.Kind, status, words, other)
			}
			seen[words] = status
		}
		row.Why, row.Status = "", RowDone
		if sh.LegacyStatus(row) != sh.Done {
			t.Errorf("%s: done is %q in its section", row.Kind, sh.LegacyStatus(row))
		}
		// A row is the outcome: the changes it stands for name it, so the
		// human view says each object once.
		if len(sh.Changes) == 0 {
			t.Errorf("%s: no change kind stands for its rows", row.Kind)
		}
		for _, c := range sh.Changes {
			if k, ok := RowOf(c); !ok || k != row.Kind {
				t.Errorf("%s: change %s names row %q", row.Kind, c, k)
			}
		}
	}
	if _, ok := RowOf(ChangeDeletedContent); ok {
		t.Error("a pass's deletion has no row: it is a change of its own")
	}
}

// A row reads back from its JSON with its extra typed, so that scripts
// and agents get what purge had; an unknown kind keeps no extra.
func TestRowsReadBack(t *testing.T) {
	for _, row := range samples() {
		data, err := json.Marshal(row)
		if err != nil {
			t.Fatal(err)
		}
		var back Row
		if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, row) {
			t.Errorf("%s: read back %+v (%v), want %+v", row.Kind, back, err, row)
		}
	}
	var unknown Row
	if err := json.Unmarshal([]byte(`{"kind":"Later","name":"x","extra":{"a":1}}`), &unknown); err != nil || unknown.Extra != nil || unknown.Name != "x" {
		t.Errorf("unknown kind: %+v %v", unknown, err)
	}
	if err := json.Unmarshal([]byte(`{"kind":"Strip","extra":{"finalizers":3}}`), &unknown); err == nil || !strings.Contains(err.Error(), "Strip") {
		t.Errorf("a bad extra: %v", err)
	}
}

// The summary counts what changes (or would) once per kind, with what the
// rows touch, and its words name every kind that acts.
func TestSummaryCountsEveryKind(t *testing.T) {
	rows := samples()
	failed := rows[0]
	failed.Name, failed.Status = "w2", RowFailed
	r := &Report{Passes: 2, Steps: []Step{{Objects: 3}, {Objects: 2}}, Rows: append(rows, failed), Finalize: Finalize{Would: true},
		Remaining: []Remaining{{Count: 4}, {Count: 1}}, Changes: []Change{{Kind: ChangeFinalized}}}
	s := r.Summary()
	if s.Requests != 2 || s.Objects != 5 || s.Remaining != 5 || s.Changes != 1 || !s.Finalize || s.Finalized || len(s.Counts) != len(Shapes()) {
		t.Fatalf("summary %+v", s)
	}
	if c := s.Count("finalizer_strips"); c.Rows != 1 || c.Units != 2 || c.Words != "1 finalizer removal(s) of 2 finalizer(s)" {
		t.Errorf("strips %+v", c)
	}
	if c := s.Count("nothing"); c.Rows != 0 || c.Key != "nothing" {
		t.Errorf("unknown key %+v", c)
	}
	words := s.Words()
	for _, c := range s.Counts {
		if !strings.Contains(words, c.Words) {
			t.Errorf("%q lacks %q", words, c.Words)
		}
	}
	if (&Report{}).Summary().Acting() != nil {
		t.Errorf("nothing acts, yet %v", (&Report{}).Summary().Acting())
	}
}

// Later passes meet the same object again: it is one row per status.
func TestAddRowOncePerStatus(t *testing.T) {
	row := samples()[0]
	rows := addRow(addRow(nil, row), row)
	row.Status = RowDone
	rows = addRow(rows, row)
	if len(rows) != 2 {
		t.Errorf("rows %+v", rows)
	}
	if nonEmpty("") != nil || len(nonEmpty("x")) != 1 || RestoreCommand("") != "" || !strings.HasSuffix(RestoreCommand("/b/c.yaml"), "/b/c.yaml") {
		t.Error("helpers")
	}
}
