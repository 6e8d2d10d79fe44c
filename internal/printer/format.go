// Package printer renders ns-doctor's reports: a human view with tables and
// colour, and the same data as JSON or YAML.
package printer

import (
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"
)

// ValidateFormat accepts "" (human), json and yaml.
func ValidateFormat(format string) error {
	switch format {
	case "", "json", "yaml":
		return nil
	}
	return fmt.Errorf("unknown output format %q: use -o json or -o yaml, or omit -o for the human view", format)
}

// Print writes v as JSON or YAML, never coloured.
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
