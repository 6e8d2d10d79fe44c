package printer

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// sampleRow is one row of a shape's kind with its extra, as the purge
// package makes them (decoded from JSON, as an agent or a script reads it).
func sampleRow(t *testing.T, sh purge.Shape, name string) purge.Row {
	t.Helper()
	extras := map[purge.RowKind]string{
		purge.RowStrip:     `{"finalizers":["example.com/x"]}`,
		purge.RowForcedPod: `{"node":"n1","nodeState":"Missing","terminatingSeconds":60}`,
		purge.RowBypass:    `{"kind":"ValidatingWebhookConfiguration","webhooks":["w.example.com"],"catches":["DELETE pods"]}`,
	}
	extra, ok := extras[sh.Kind]
	if !ok {
		t.Fatalf("no sample extra for shape %s: add one here", sh.Kind)
	}
	var row purge.Row
	data := `{"kind":"` + string(sh.Kind) + `","resource":"things","name":"` + name + `","status":"Planned","extra":` + extra + `}`
	if err := json.Unmarshal([]byte(data), &row); err != nil || row.Extra == nil || row.Extra.Of() != sh.Kind {
		t.Fatalf("%s: decoding a row: %v, extra %#v", sh.Kind, err, row.Extra)
	}
	return row
}

// Every shape's rows are told everywhere a report is rendered: its table
// in the human view, its column in the summary of several namespaces, its
// rows and its section in -o json, its count in the janitor's Event and in
// the agents' words. A new escalation that reports rows declares a shape,
// and this test fails until every renderer shows it.
func TestEveryShapeEverywhere(t *testing.T) {
	shapes := purge.Shapes()
	if len(shapes) < 3 {
		t.Fatalf("%d shapes", len(shapes))
	}
	for _, sh := range shapes {
		t.Run(string(sh.Kind), func(t *testing.T) {
			r := &purge.Report{Namespace: "ns", Mode: purge.DryRunClient, Outcome: purge.OutcomePlanned, Passes: 1,
				Rows: []purge.Row{sampleRow(t, sh, "row-one")}}
			var human bytes.Buffer
			if err := (Human{}).Purge(&human, r); err != nil {
				t.Fatal(err)
			}
			wantHuman := []string{sh.Title, "row-one", RowResult(r.Rows[0])}
			for _, c := range sh.Columns {
				wantHuman = append(wantHuman, c.Header)
			}
			for _, want := range wantHuman {
				if !strings.Contains(human.String(), want) {
					t.Errorf("the human view lacks %q:\n%s", want, human.String())
				}
			}
			var many bytes.Buffer
			if err := (Human{}).Purges(&many, []*purge.Report{r}); err != nil || !strings.Contains(many.String(), sh.Short) {
				t.Errorf("the summary of several lacks %q: %v\n%s", sh.Short, err, many.String())
			}
			data, err := json.Marshal(Purge(r))
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			if rows, _ := doc["rows"].([]any); len(rows) != 1 {
				t.Errorf("rows %v", doc["rows"])
			}
			if sec, _ := doc[sh.Section].([]any); len(sec) != 1 {
				t.Errorf("section %q: %v", sh.Section, doc[sh.Section])
			}
			var back PurgeDocument
			if err := json.Unmarshal(data, &back); err != nil || len(back.RowsOf(sh.Kind)) != 1 || !reflect.DeepEqual(back.RowsOf(sh.Kind)[0].Row, r.Rows[0]) {
				t.Errorf("read back: %v %+v", err, back.Rows)
			}
			count := r.Summary().Count(sh.Key)
			if count.Rows != 1 || count.Words == "" {
				t.Fatalf("summary count %+v", count)
			}
			if words := planWords(r); !strings.Contains(words, count.Words) {
				t.Errorf("the janitor's Event lacks %q: %q", count.Words, words)
			}
			if words := wouldWords(r); !strings.Contains(words, count.Words) {
				t.Errorf("the agents' words lack %q: %q", count.Words, words)
			}
		})
	}
}

// A row is the outcome: a forced pod (a strip, a bypass) done for real is
// said once in the human view, in its table, not again among the changes;
// the audit log (changeDetails) keeps the change once, naming its row.
func TestRowSaidOnce(t *testing.T) {
	for _, sh := range purge.Shapes() {
		t.Run(string(sh.Kind), func(t *testing.T) {
			row := sampleRow(t, sh, "row-one")
			row.Status, row.Why = purge.RowDone, ""
			r := &purge.Report{Namespace: "ns", Mode: purge.DryRunNone, Outcome: purge.OutcomeGone, Passes: 1, Rows: []purge.Row{row}}
			for _, k := range sh.Changes {
				r.Changes = append(r.Changes, purge.Change{Kind: k, Resource: row.Resource, Name: row.Name})
			}
			var human bytes.Buffer
			if err := (Human{}).Purge(&human, r); err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(human.String(), "row-one"); n != 1 {
				t.Errorf("the human view says row-one %d times:\n%s", n, human.String())
			}
			doc := Purge(r)
			if len(doc.ChangeDetails) != len(sh.Changes) || len(doc.Changes) != len(sh.Changes) {
				t.Fatalf("changeDetails %v, changes %v", doc.ChangeDetails, doc.Changes)
			}
			for i, d := range doc.ChangeDetails {
				if d.Kind != sh.Changes[i] || d.Row != sh.Kind {
					t.Errorf("change %d: kind %s row %q, want %s row %s", i, d.Kind, d.Row, sh.Changes[i], sh.Kind)
				}
			}
		})
	}
}
