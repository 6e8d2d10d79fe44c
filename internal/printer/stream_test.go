package printer

import (
	"bytes"
	"reflect"
	"testing"

	"k8s.io/cli-runtime/pkg/printers"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/fleet"
)

// The list view, written an item at a time, is byte for byte what
// cli-runtime's JSONPrinter prints of the whole document: empty, one
// namespace, several, and over many clusters (with a cluster that could
// not be read).
func TestSummaryListStreamsTheJSONPrintersBytes(t *testing.T) {
	// A new field of the document must be written by encodeSummaryList
	// too: this count makes adding one fail here first.
	if n := reflect.TypeFor[SummaryListDocument]().NumField(); n != 4 {
		t.Fatalf("SummaryListDocument has %d fields; encodeSummaryList writes 4", n)
	}
	other := stuckReport()
	other.Namespace.Name = `quote"<html>&`
	other.Blockers = nil
	docs := map[string]SummaryListDocument{
		"empty":   SummaryList(nil),
		"one":     SummaryList([]diagnose.Report{stuckReport()}),
		"several": SummaryList([]diagnose.Report{stuckReport(), other, stuckReport()}),
		"fleet": FleetSummaryList([]fleet.Result{{Context: fleet.Context{Name: "a"}, Reports: []diagnose.Report{stuckReport(), other}},
			{Context: fleet.Context{Name: "b"}, Err: errString("connection refused")}}),
	}
	for name, doc := range docs {
		var want, got bytes.Buffer
		if err := (&printers.JSONPrinter{}).PrintObj(&object{doc: doc}, &want); err != nil {
			t.Fatal(err)
		}
		if err := encodeSummaryList(&got, doc); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("%s: streamed list differs from the JSONPrinter's:\n%s\nwant:\n%s", name, got.String(), want.String())
		}
	}
}
