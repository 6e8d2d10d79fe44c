// Package printer renders ns-doctor's reports: a human view with tables and
// colour, and the same data as JSON or YAML.
package printer

import (
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/purge"
	"github.com/ns-doctor/ns-doctor/internal/version"
)

// Printer renders every report a command prints; Human and Machine
// implement it, so commands never branch on the output format.
type Printer interface {
	Diagnosis(w io.Writer, r diagnose.Report) error
	Diagnoses(w io.Writer, rs []diagnose.Report) error
	Purge(w io.Writer, r *purge.Report) error
	Purges(w io.Writer, rs []*purge.Report) error
	Orphans(w io.Writer, r diagnose.OrphanReport) error
	Version(w io.Writer, v version.Info) error
}

var (
	_ Printer = Human{}
	_ Printer = Machine{}
)

// Formats are the values -o accepts; "" is the human view.
var Formats = []string{"json", "yaml"}

// ValidateFormat accepts "" (human), json and yaml.
func ValidateFormat(format string) error {
	switch format {
	case "", "json", "yaml":
		return nil
	}
	return fmt.Errorf("unknown output format %q: use -o json or -o yaml, or omit -o for the human view", format)
}

// Machine prints reports as JSON or YAML, never coloured.
type Machine struct{ Format string }

// Diagnosis prints one diagnosis.
func (m Machine) Diagnosis(w io.Writer, r diagnose.Report) error {
	return Print(w, m.Format, Diagnosis(r))
}

// Diagnoses prints the list of every terminating namespace's diagnosis.
func (m Machine) Diagnoses(w io.Writer, rs []diagnose.Report) error {
	return Print(w, m.Format, DiagnosisList(rs))
}

// Purge prints a purge report's document.
func (m Machine) Purge(w io.Writer, r *purge.Report) error { return Print(w, m.Format, Purge(r)) }

// Purges prints several namespaces' purge reports as a list.
func (m Machine) Purges(w io.Writer, rs []*purge.Report) error {
	return Print(w, m.Format, PurgeList(rs))
}

// Orphans prints the leftovers of namespaces that are gone.
func (m Machine) Orphans(w io.Writer, r diagnose.OrphanReport) error {
	return Print(w, m.Format, Orphans(r))
}

// Version prints the build's version.
func (m Machine) Version(w io.Writer, v version.Info) error { return Print(w, m.Format, v) }

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
