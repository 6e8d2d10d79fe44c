// Package printer renders ns-doctor's reports: a human view with tables and
// colour, and the same data for programs (JSON, YAML, jsonpath, templates).
package printer

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/ns-doctor/ns-doctor/internal/compat"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/fleet"
	"github.com/ns-doctor/ns-doctor/internal/purge"
	"github.com/ns-doctor/ns-doctor/internal/version"
)

// Printer renders every report a command prints; Human and Machine
// implement it, so commands never branch on the output format.
type Printer interface {
	Diagnosis(w io.Writer, r diagnose.Report) error
	// Diagnoses prints several full reports; Summaries the list view of
	// them (explain with no NAME or -l, unless --full).
	Diagnoses(w io.Writer, rs []diagnose.Report) error
	Summaries(w io.Writer, rs []diagnose.Report) error
	// Fleet prints the list view of many clusters; FleetDiagnoses their
	// full reports.
	Fleet(w io.Writer, results []fleet.Result) error
	FleetDiagnoses(w io.Writer, results []fleet.Result) error
	Purge(w io.Writer, r *purge.Report) error
	Purges(w io.Writer, rs []*purge.Report) error
	Orphans(w io.Writer, r diagnose.OrphanReport) error
	Version(w io.Writer, v VersionReport) error
}

var (
	_ Printer = Human{}
	_ Printer = Machine{}
)

// Machine prints reports for programs: the report's document (docs/
// schema.md) through one of cli-runtime's printers, which -o chose (json,
// yaml, jsonpath, go-template, ...), or, for -o name, namespace/NAME for
// each namespace reported, as kubectl prints names.
type Machine struct {
	// Printer prints documents; nil for -o name.
	Printer printers.ResourcePrinter
	// Format is -o's value, for the version, which only JSON and YAML print.
	Format string
}

// Diagnosis prints one diagnosis.
func (m Machine) Diagnosis(w io.Writer, r diagnose.Report) error {
	return m.print(w, Diagnosis(r), r.Namespace.Name)
}

// Diagnoses prints several diagnoses as one list of full reports.
func (m Machine) Diagnoses(w io.Writer, rs []diagnose.Report) error {
	return m.print(w, DiagnosisList(rs), namesOf(rs)...)
}

// Summaries prints the list view's document: a line per namespace.
func (m Machine) Summaries(w io.Writer, rs []diagnose.Report) error {
	return m.print(w, SummaryList(rs), namesOf(rs)...)
}

func namesOf(rs []diagnose.Report) []string {
	names := make([]string, 0, len(rs))
	for _, r := range rs {
		names = append(names, r.Namespace.Name)
	}
	return names
}

// Fleet prints the list view of many clusters as one list, each item with
// its context, and the clusters that could not be read.
func (m Machine) Fleet(w io.Writer, results []fleet.Result) error {
	return m.print(w, FleetSummaryList(results), fleetNames(results)...)
}

// FleetDiagnoses prints the full reports of many clusters as one list.
func (m Machine) FleetDiagnoses(w io.Writer, results []fleet.Result) error {
	return m.print(w, FleetList(results), fleetNames(results)...)
}

func fleetNames(results []fleet.Result) []string {
	var names []string
	for _, r := range results {
		names = append(names, namesOf(r.Reports)...)
	}
	return names
}

// Purge prints a purge report's document.
func (m Machine) Purge(w io.Writer, r *purge.Report) error {
	return m.print(w, Purge(r), r.Namespace)
}

// Purges prints several namespaces' purge reports as a list.
func (m Machine) Purges(w io.Writer, rs []*purge.Report) error {
	names := make([]string, 0, len(rs))
	for _, r := range rs {
		names = append(names, r.Namespace)
	}
	return m.print(w, PurgeList(rs), names...)
}

// Orphans prints the leftovers of namespaces that are gone.
func (m Machine) Orphans(w io.Writer, r diagnose.OrphanReport) error {
	names := make([]string, 0, len(r.Namespaces))
	for _, ns := range r.Namespaces {
		names = append(names, ns.Name)
	}
	return m.print(w, Orphans(r), names...)
}

// Version prints the build's version.
func (m Machine) Version(w io.Writer, v VersionReport) error { return Print(w, m.Format, v) }

// VersionReport is what `version` prints: the build, and the server's
// version with what ns-doctor assumes of it (docs/compatibility.md).
type VersionReport struct {
	version.Info
	// Server is omitted with --client, or when it could not be read.
	Server *compat.Server `json:"server,omitempty"`
	// ServerError says why the server could not be read.
	ServerError string `json:"serverError,omitempty"`
}

// print hands doc to the chosen printer, or names the namespaces.
func (m Machine) print(w io.Writer, doc typed, names ...string) error {
	if m.Printer == nil {
		for _, name := range names {
			if _, err := fmt.Fprintf(w, "namespace/%s\n", name); err != nil {
				return err
			}
		}
		return nil
	}
	if m.Format == "json" {
		// cli-runtime's JSONPrinter's bytes (MarshalIndent, four spaces, a
		// newline), marshalled once: it marshals the document, then again
		// to indent it, which over ten thousand namespaces costs more than
		// diagnosing a thousand of them. The list view goes an item at a
		// time, never the whole document in memory.
		if l, ok := doc.(SummaryListDocument); ok {
			return encodeSummaryList(w, l)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "    ")
		return enc.Encode(doc)
	}
	if err := m.Printer.PrintObj(&object{doc: doc}, w); err != nil {
		// cli-runtime's template errors carry the whole document for
		// debugging; the first line says what failed.
		first, _, _ := strings.Cut(err.Error(), "\n")
		return fmt.Errorf("%s", strings.TrimSuffix(strings.TrimSpace(first), "."))
	}
	return nil
}

// typed is a report document: it says its apiVersion and kind.
type typed interface {
	typeMeta() (apiVersion, kind string)
}

func (d DiagnosisDocument) typeMeta() (string, string)     { return d.APIVersion, d.Kind }
func (d DiagnosisListDocument) typeMeta() (string, string) { return d.APIVersion, d.Kind }
func (d SummaryListDocument) typeMeta() (string, string)   { return d.APIVersion, d.Kind }
func (d OrphansDocument) typeMeta() (string, string)       { return d.APIVersion, d.Kind }
func (d PurgeDocument) typeMeta() (string, string)         { return d.APIVersion, d.Kind }
func (d PurgeListDocument) typeMeta() (string, string)     { return d.APIVersion, d.Kind }

// object is a document as cli-runtime's printers take it: a runtime.Object
// whose JSON is the document's own, in its fields' order.
type object struct{ doc typed }

func (o *object) MarshalJSON() ([]byte, error)                { return json.Marshal(o.doc) }
func (o *object) GetObjectKind() schema.ObjectKind            { return o }
func (o *object) SetGroupVersionKind(schema.GroupVersionKind) {}
func (o *object) GroupVersionKind() schema.GroupVersionKind {
	apiVersion, kind := o.doc.typeMeta()
	return schema.FromAPIVersionAndKind(apiVersion, kind)
}

// DeepCopyObject shares the document: documents are built for one print
// and never changed.
func (o *object) DeepCopyObject() runtime.Object { return &object{doc: o.doc} }

// Print writes v as JSON or YAML.
func Print(w io.Writer, format string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the report: %w", err)
	}
	if format == "yaml" {
		if data, err = yaml.JSONToYAML(data); err != nil {
			return fmt.Errorf("encoding the report as YAML: %w", err)
		}
	} else {
		data = append(data, '\n')
	}
	_, err = w.Write(data)
	return err
}

// encodeSummaryList writes json.MarshalIndent(d, "", "    ") and a newline,
// an item at a time through a buffer: at 10,000 namespaces the whole
// document's buffers, grown and indented, cost more CPU than its bytes.
func encodeSummaryList(w io.Writer, d SummaryListDocument) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	// A bufio.Writer keeps its first error and Flush returns it: the
	// writes before need no check of their own.
	put := func(b []byte) { _, _ = bw.Write(b) }
	apiVersion, _ := json.Marshal(d.APIVersion) // strings always marshal
	kind, _ := json.Marshal(d.Kind)
	put([]byte("{\n    \"apiVersion\": " + string(apiVersion) + ",\n    \"kind\": " + string(kind) + ",\n    \"items\": "))
	if len(d.Items) == 0 {
		put([]byte("[]"))
	} else {
		put([]byte("[\n"))
		for n, item := range d.Items {
			b, err := json.MarshalIndent(item, "        ", "    ")
			if err != nil {
				return err
			}
			put([]byte("        "))
			put(b)
			if n < len(d.Items)-1 {
				put([]byte(","))
			}
			put([]byte("\n"))
		}
		put([]byte("    ]"))
	}
	if len(d.Clusters) > 0 {
		b, err := json.MarshalIndent(d.Clusters, "    ", "    ")
		if err != nil {
			return err
		}
		put([]byte(",\n    \"clusters\": "))
		put(b)
	}
	put([]byte("\n}\n"))
	return bw.Flush()
}
