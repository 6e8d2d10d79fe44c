package purge

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// RowKind is the kind of object an escalation acts on, one per outcome
// shape.
type RowKind string

// RowStatus is what became of one object an escalation acted on: the same
// five words for every escalation, so that counts, fingerprints and agents
// need not know the escalation.
type RowStatus string

// Row statuses.
const (
	RowPlanned RowStatus = "Planned" // a plan (or, during a run, in effect): would be sent
	RowDone    RowStatus = "Done"    // done for real, the object saved first
	RowFailed  RowStatus = "Failed"  // refused, or could not be saved first
	RowGone    RowStatus = "Gone"    // the object went before its turn
	RowSkipped RowStatus = "Skipped" // not sent: Why says why
)

// Row is one object an escalation acted on (or would), and what became of
// it: every escalation's outcome has this shape, and what only one
// escalation knows is in its typed Extra.
type Row struct {
	Kind     RowKind   `json:"kind"`
	Resource string    `json:"resource"`
	Name     string    `json:"name"`
	Status   RowStatus `json:"status"`
	// Why is the kind's own word for a status it says more precisely
	// (NothingLeft, LeftAlone, RestoreFailed, LeftoverRestored).
	Why   string `json:"why,omitempty"`
	Error string `json:"error,omitempty"`
	// Refusal says who refused it, when the answer tells.
	Refusal *diagnose.Refusal `json:"refusal,omitempty"`
	Extra   Extra             `json:"extra,omitempty"`
}

// Extra is what one kind of row knows beyond the others (a pod's node, a
// webhook configuration's webhooks); each kind declares its own beside its
// escalation.
type Extra interface {
	// Of is the row kind it belongs to.
	Of() RowKind
}

// Counts: the row changes (or would) what it names.
func (r Row) Counts() bool { return r.Status == RowDone || r.Status == RowPlanned }

// Column is one column of a kind's table in the human view: the items
// of its cell, which the printer joins, bounds and escapes (none: a dash).
type Column struct {
	Header string
	Cell   func(Row) []string
}

// Shape is how one kind of row is told everywhere: its table, its count,
// its fingerprint line and its JSON section. An escalation that reports
// rows declares its shape beside its words; the renderers derive from
// Shapes() and none knows an escalation by name.
type Shape struct {
	Kind RowKind
	// Section names the kind's rows in purge -o json (a section of its own,
	// kept until schema v1alpha2 beside rows[]) and to the MCP bounds.
	Section string
	// Title heads its table, and Short its column in the summary of
	// several namespaces.
	Title, Short string
	// Columns are its table's columns before RESULT.
	Columns []Column
	// Counted words its count: "%d pod(s) force-deleted".
	Counted string
	// Key names its count in machine output (would_change).
	Key string
	// Result says what became of a row (a failure's refusal is the
	// printer's to add).
	Result func(Row) string
	// Done is the word of Done in its JSON section (Removed, Deleted).
	Done string
	// Fingerprint is what the row touches beyond its kind, resource, name
	// and status, in a plan's fingerprint (what the person consents to of
	// it): nothing that changes by itself between plan and act (a pod's
	// terminating time).
	Fingerprint func(Row) string
	// Notes are lines after its table (what stripping leaks), nil for none.
	Notes func(r *Report) []string
	// Units counts what a row touches beyond itself (finalizers of a
	// strip), nil for none; UnitWords words them.
	Units     func(Row) int
	UnitWords string
	// Extra is the zero value of its rows' Extra: the type JSON reads
	// them into, and that schemas describe.
	Extra Extra
	// Changes are the kinds of change its rows stand for. A row is the
	// outcome: the human view tells it in the table only, and the ordered
	// audit log (changeDetails) keeps each change once, naming the row's
	// kind (RowOf).
	Changes []ChangeKind
}

// decode reads an extra of the shape's type.
func (s Shape) decode(data []byte) (Extra, error) {
	x := reflect.New(reflect.TypeOf(s.Extra))
	if err := json.Unmarshal(data, x.Interface()); err != nil {
		return nil, err
	}
	return x.Elem().Interface().(Extra), nil
}

// UnmarshalJSON reads a row, its extra as its kind's type.
func (r *Row) UnmarshalJSON(data []byte) error {
	type plain Row
	var raw struct {
		plain
		Extra json.RawMessage `json:"extra,omitempty"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*r = Row(raw.plain)
	sh, ok := ShapeOf(r.Kind)
	if !ok || len(raw.Extra) == 0 || string(raw.Extra) == "null" {
		return nil
	}
	extra, err := sh.decode(raw.Extra)
	if err != nil {
		return fmt.Errorf("reading the extra of a %s row: %w", r.Kind, err)
	}
	r.Extra = extra
	return nil
}

// shapes is every kind of row, in the order the human view tells them.
var shapes = []*Shape{&stripShape, &forcedPodShape, &bypassShape}

// Shapes is every kind of row escalations report, in their order.
func Shapes() []Shape {
	out := make([]Shape, len(shapes))
	for i, s := range shapes {
		out[i] = *s
	}
	return out
}

// RowOf is the kind of row a kind of change stands for, if a row tells
// it.
func RowOf(kind ChangeKind) (RowKind, bool) {
	for _, s := range shapes {
		if slices.Contains(s.Changes, kind) {
			return s.Kind, true
		}
	}
	return "", false
}

// ShapeOf is the shape of a kind of row.
func ShapeOf(kind RowKind) (Shape, bool) {
	for _, s := range shapes {
		if s.Kind == kind {
			return *s, true
		}
	}
	return Shape{}, false
}

// LegacyStatus is a row's status as its JSON section said it before rows
// (schema v1alpha1).
func (s Shape) LegacyStatus(r Row) string {
	switch {
	case r.Why != "":
		return r.Why
	case r.Status == RowDone:
		return s.Done
	}
	return string(r.Status)
}

// RowsOf are the report's rows of one kind.
func (r *Report) RowsOf(kind RowKind) []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.Kind == kind {
			out = append(out, row)
		}
	}
	return out
}

// addRow adds a row unless the same object of the same kind with the same
// status is listed already (later passes meet it again).
func addRow(rows []Row, row Row) []Row {
	for _, x := range rows {
		if x.Kind == row.Kind && x.Resource == row.Resource && x.Name == row.Name && x.Status == row.Status && x.Why == row.Why {
			return rows
		}
	}
	return append(rows, row)
}

// Summary is a report counted once, for every renderer: the CLI's line
// and table, the janitor's Event, the agents' text and would_change.
type Summary struct {
	// Changes counts the changes made to the cluster (none in a plan),
	// Remaining the objects the last pass left.
	Passes, Requests, Objects, Changes, Remaining int
	// Counts are one per shape, in Shapes()'s order, zero ones included.
	Counts []Count
	// Finalize: the namespace would be (a plan) or was finalized.
	Finalize, Finalized bool
	// Holding are the kinds of the blockers that hold it at the end.
	Holding []string
}

// Count is how many rows of one kind change (or would) what they name.
type Count struct {
	Kind  RowKind `json:"kind"`
	Key   string  `json:"key"`
	Rows  int     `json:"rows"`
	Units int     `json:"units,omitempty"`
	// Words are the count in words ("2 pod(s) force-deleted").
	Words string `json:"words"`
}

// Summary counts the report.
func (r *Report) Summary() Summary {
	s := Summary{Passes: r.Passes, Requests: len(r.Steps), Changes: len(r.Changes), Finalize: r.Finalize.Would || r.Finalize.Done, Finalized: r.Finalize.Done}
	for _, st := range r.Steps {
		s.Objects += st.Objects
	}
	for _, rem := range r.Remaining {
		s.Remaining += rem.Count
	}
	for _, sh := range shapes {
		c := Count{Kind: sh.Kind, Key: sh.Key}
		for _, row := range r.RowsOf(sh.Kind) {
			if !row.Counts() {
				continue
			}
			c.Rows++
			if sh.Units != nil {
				c.Units += sh.Units(row)
			}
		}
		c.Words = fmt.Sprintf(sh.Counted, c.Rows)
		if sh.Units != nil {
			c.Words += fmt.Sprintf(sh.UnitWords, c.Units)
		}
		s.Counts = append(s.Counts, c)
	}
	for _, h := range r.Holding {
		s.Holding = append(s.Holding, string(h.Blocker.Kind))
	}
	return s
}

// Count is the count of one shape's key.
func (s Summary) Count(key string) Count {
	i := slices.IndexFunc(s.Counts, func(c Count) bool { return c.Key == key })
	if i < 0 {
		return Count{Key: key}
	}
	return s.Counts[i]
}

// Acting are the counts of the escalations that act (or would), in words.
func (s Summary) Acting() []string {
	var out []string
	for _, c := range s.Counts {
		if c.Rows > 0 {
			out = append(out, c.Words)
		}
	}
	return out
}

// Words say the summary in one line: the requests, what each escalation
// changes, and whether the namespace goes.
func (s Summary) Words() string {
	parts := append([]string{fmt.Sprintf("%d request(s) reaching %d object(s) in %d pass(es)", s.Requests, s.Objects, s.Passes)}, s.Acting()...)
	return strings.Join(parts, ", ")
}

// nonEmpty is s as a cell's one item, none when empty.
func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
