// Package consent is how a person agrees to a command that changes a
// cluster, on a terminal (internal/cli) or through an agent's client as an
// MCP elicitation (internal/mcp): the same Request, worded by the printer
// from what the command's plan will change, and, where the act comes
// later than the plan (an agent's two calls), a Plan with an id to act on
// and the fingerprint of its document, so that a plan that moved meanwhile
// is refused. It is pure: no clients, no ns-doctor packages.
package consent

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Request is what a person is asked before a command changes anything:
// "This will " and the change, a line per thing it changes (where the
// writes go first), a closing sentence (empty for none), then the question
// and the answer that goes on. Its words are the printer's; what in them
// came from a cluster is escaped there.
type Request struct {
	// Change completes "This will ...": the command's change, on what.
	Change string
	// Lines are said each on its own line, indented.
	Lines []string
	// Closing is said after the lines; the question follows it on the
	// same line.
	Closing string
	// Question is what the person is asked to type, Want the answer that
	// goes on (a namespace's name, or how many).
	Question, Want string
}

// Where is the line that names where the writes go.
func Where(context, cluster string) string {
	return fmt.Sprintf("context %q, cluster %q", context, cluster)
}

// Text is the request up to the question.
func (r Request) Text() string {
	var b strings.Builder
	b.WriteString("This will " + r.Change + "\n")
	for _, line := range r.Lines {
		b.WriteString("  " + line + "\n")
	}
	b.WriteString(r.Closing)
	return b.String()
}

// Prompt is the request as a terminal shows it, ending with the question.
func (r Request) Prompt() string { return r.asked(": ") }

// Message is the request as an elicitation shows it, ending with the
// question.
func (r Request) Message() string { return r.asked(".") }

func (r Request) asked(end string) string {
	text := r.Text()
	if r.Closing != "" {
		text += " "
	}
	return text + r.Question + end
}

// Accepts tells whether what the person typed goes on.
func (r Request) Accepts(typed string) bool { return strings.TrimSpace(typed) == r.Want }

// Plan is a plan kept for a later act: its id, and the fingerprint of its
// document.
type Plan struct {
	ID          string
	Fingerprint string
}

// NewPlan is a plan of doc with a new id.
func NewPlan(doc any) (Plan, error) {
	fp, err := Fingerprint(doc)
	return Plan{ID: NewID("plan-"), Fingerprint: fp}, err
}

// Moved tells whether doc, planned again, is not the plan's document.
func (p Plan) Moved(doc any) (bool, error) {
	fp, err := Fingerprint(doc)
	return fp != p.Fingerprint, err
}

// NewID is prefix and 128 random bits: a plan's id, a question's state.
func NewID(prefix string) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return prefix + hex.EncodeToString(b)
}

// Fingerprint is the sha256 of doc's canonical JSON: every field its JSON
// says, object keys sorted, and every list sorted too, for a plan's
// document is a set of what it will change (the requests of one pass go
// out at once, in any order). A field added to the document is covered
// without a word here; what moves by itself between a plan and its act (a
// pod's terminating time) has no place in a plan's document.
func Fingerprint(doc any) (string, error) {
	raw, err := json.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("fingerprinting a plan: %w", err)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("fingerprinting a plan: %w", err)
	}
	canonical, err := json.Marshal(canonicalize(v))
	if err != nil {
		return "", fmt.Errorf("fingerprinting a plan: %w", err)
	}
	digest := sha256.Sum256(canonical)
	return "sha256:" + hex.EncodeToString(digest[:]), nil
}

// canonicalize sorts every list by its items' canonical JSON; objects
// are written with their keys sorted by encoding/json itself.
func canonicalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, item := range x {
			x[k] = canonicalize(item)
		}
		return x
	case []any:
		keyed := make([]struct {
			key  string
			item any
		}, len(x))
		for i, item := range x {
			item = canonicalize(item)
			raw, _ := json.Marshal(item) // decoded JSON marshals
			keyed[i].key, keyed[i].item = string(raw), item
		}
		sort.SliceStable(keyed, func(i, j int) bool { return keyed[i].key < keyed[j].key })
		out := make([]any, len(x))
		for i, k := range keyed {
			out[i] = k.item
		}
		return out
	}
	return v
}
