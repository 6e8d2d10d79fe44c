package mcp

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// schemaOptions derive schemas from the Go types of the documents -o json
// prints; the few types that marshal themselves say what they marshal to.
var schemaOptions = &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[purge.DryRun](): {Type: "string", Enum: []any{"client", "server", "none"}},
	reflect.TypeFor[Detail]():       {Type: "string", Enum: details},
	reflect.TypeFor[purge.Extra]():  extraSchema(),
}}

// extraSchema is a row's extra: one of the shapes' (purge.Shapes), by the
// row's kind.
func extraSchema() *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object", Description: "what only this kind of row knows, by its kind"}
	for _, sh := range purge.Shapes() {
		one, err := jsonschema.ForType(reflect.TypeOf(sh.Extra), &jsonschema.ForOptions{})
		if err != nil { // a shape's extra is a plain struct: never, but a schema says less rather than fail
			one = &jsonschema.Schema{Type: "object"}
		}
		one.Description = string(sh.Kind)
		s.AnyOf = append(s.AnyOf, one)
	}
	return s
}

// schemaFor is T's schema, with patch's changes (enums, the escalations).
func schemaFor[T any](patch func(s *jsonschema.Schema)) (*jsonschema.Schema, error) {
	s, err := jsonschema.For[T](schemaOptions)
	if err != nil {
		return nil, err
	}
	if patch != nil {
		patch(s)
	}
	if _, err := s.Resolve(nil); err != nil {
		return nil, fmt.Errorf("schema of %T: %w", *new(T), err)
	}
	return s, nil
}

// escalationsSchema is plan_purge's escalations argument: a property per
// escalation of purge's one list (purge.Escalations), named by its flag,
// described by its help and what it leaks; a switch takes true, the
// others their values.
func escalationsSchema() *jsonschema.Schema {
	s := &jsonschema.Schema{
		Type:                 "object",
		Description:          "The escalations beyond the namespace controller's own pass, by flag (purge's flags without their dashes); none is taken unless named. Each says what it leaks.",
		Properties:           map[string]*jsonschema.Schema{},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
	for _, e := range purge.Escalations() {
		p := &jsonschema.Schema{Description: escalationWords(e)}
		if e.Switch() {
			p.Type = "boolean"
		} else {
			p.Type, p.Items, p.MinItems = "array", &jsonschema.Schema{Type: "string"}, jsonschema.Ptr(1)
			p.Examples = []any{[]string{e.Example}}
		}
		s.Properties[e.Name()] = p
		s.PropertyOrder = append(s.PropertyOrder, e.Name())
	}
	return s
}

// escalationWords is an escalation's description: its help, its values,
// and what acting costs.
func escalationWords(e purge.Escalation) string {
	words := strings.TrimPrefix(e.Help, "Escalation: ")
	if e.Switch() {
		words += ". Give true to ask for it"
	} else {
		words += fmt.Sprintf(". Its values (%s), e.g. [%q]", e.Value, e.Example)
	}
	return words + ". What it leaks: " + e.Leak + "."
}
