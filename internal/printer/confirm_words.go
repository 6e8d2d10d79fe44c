package printer

import (
	"fmt"
	"strconv"
	"strings"
)

// Confirmation is what a person is asked before purge acts for real: on a
// terminal (purge --force) or, through an agent's client, as an MCP
// elicitation (kubectl ns-doctor mcp's purge_namespace). Both say the same
// words, from here.
type Confirmation struct {
	// Names are the namespaces, or the former namespaces (Orphans).
	Names   []string
	Orphans bool
	// Context and Cluster name where the writes go.
	Context, Cluster string
	// Consent are the escalations' lines (purge.Asked.Consent).
	Consent []string
}

// Text is what the confirmation says, up to the question: the
// namespaces, where the writes go, a line per escalation and what it
// costs, and that everything is saved first.
func (c Confirmation) Text() string {
	var b strings.Builder
	switch {
	case c.Orphans:
		fmt.Fprintf(&b, "This will run the namespace controller's deletion pass FOR REAL on what former namespace(s) %s left in storage\n  context %q, cluster %q\n", strings.Join(c.Names, ", "), c.Context, c.Cluster)
	case len(c.Names) == 1:
		fmt.Fprintf(&b, "This will run the namespace controller's deletion pass FOR REAL on namespace %q\n  context %q, cluster %q\n", c.Names[0], c.Context, c.Cluster)
	default:
		fmt.Fprintf(&b, "This will run the namespace controller's deletion pass FOR REAL on %d namespaces: %s\n  context %q, cluster %q\n", len(c.Names), strings.Join(c.Names, ", "), c.Context, c.Cluster)
	}
	b.WriteString(ConsentLines(c.Consent))
	b.WriteString("Everything it deletes or changes is saved first.")
	return b.String()
}

// ConsentLines are the escalations' lines of a confirmation, each on its
// own indented line (the fleet's confirmation says them too).
func ConsentLines(consent []string) string {
	var b strings.Builder
	for _, line := range consent {
		fmt.Fprintf(&b, "  %s\n", Escape(line))
	}
	return b.String()
}

// Question is what the person is asked to type, and Want the answer that
// goes on: the namespace's name (the former one's), or how many.
func (c Confirmation) Question() (question, want string) {
	if len(c.Names) == 1 {
		return "Type the namespace name to go on", c.Names[0]
	}
	want = strconv.Itoa(len(c.Names))
	return fmt.Sprintf("Type the number of namespaces (%s) to go on", want), want
}

// Prompt is the confirmation as a terminal shows it, ending with the
// question, and the answer that goes on.
func (c Confirmation) Prompt() (text, want string) {
	question, want := c.Question()
	return c.Text() + " " + question + ": ", want
}
