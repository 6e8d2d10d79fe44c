package printer

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"k8s.io/cli-runtime/pkg/printers"
)

// Text from the cluster (messages, events, webhook answers, errors) is
// written by tenants, operators and webhooks: nothing of it may drive the
// terminal of the admin who reads a report. The human view escapes every
// such string the way kubectl does (printers.EscapeTerminal: ESC and CR
// made visible), and further makes every other control character, C1
// control, invalid byte and bidirectional override visible too: a BEL ends
// a window-title sequence, a lone 0x9b is a CSI to 8-bit terminals, a
// newline would forge a line of the report. JSON and YAML stay exact: their
// encoders escape.

// Escape makes a cluster string safe to print: every byte that could
// drive a terminal is shown, never interpreted.
func Escape(s string) string {
	s = printers.EscapeTerminal(s)
	if safeText(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case unsafeRune(r):
			if r < 0x80 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// safeText tells whether s has nothing Escape would change.
func safeText(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c >= 0x80 {
			return !strings.ContainsFunc(s, unsafeRune) && utf8.ValidString(s) && !strings.ContainsAny(s, "\n\t")
		}
	}
	return true
}

// unsafeRune: C0 and C1 controls, DEL, and the bidirectional overrides
// and isolates that reorder what a reader sees.
func unsafeRune(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) ||
		(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c
}

// Cut shortens s to at most n characters (not bytes: a cut never splits
// one), saying that it cut and how much.
func Cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	runes := []rune(s)
	more := len(runes) - n
	suffix := fmt.Sprintf("... (%d more characters)", more)
	if n < len(suffix)+8 {
		return string(runes[:max(n-3, 0)]) + "..."
	}
	return string(runes[:n-len(suffix)]) + suffix
}

// Clip is Cut(Escape(s), n) that escapes only what it keeps: a message of
// a megabyte costs what its first n characters cost. What it says it cut
// counts the rest of s as written (escaping would only lengthen it).
func Clip(s string, n int) string {
	i, k := 0, 0
	for i < len(s) && k < n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i, k = i+size, k+1
	}
	if i == len(s) {
		return Cut(Escape(s), n)
	}
	head := []rune(Escape(s[:i]))
	more := len(head) + utf8.RuneCountInString(s[i:]) - n
	suffix := fmt.Sprintf("... (%d more characters)", more)
	if n < len(suffix)+8 {
		return string(head[:max(n-3, 0)]) + "..."
	}
	return string(head[:n-len(suffix)]) + suffix
}

// maxText bounds one cluster string in the human view: a 100 KB condition
// message stays in -o json, not on the screen.
const maxText = 800

// clean is a cluster string as the human view shows it: escaped, and
// bounded.
func clean(s string) string { return Cut(Escape(s), maxText) }

// Bounds of the human view: past them, a count says what -o json lists.
const (
	maxRows     = 100 // table rows (resource types, requests, strips)
	maxItems    = 20  // listed items (finalizers, blockers, errors, warnings)
	maxEvidence = 12  // evidence lines of one blocker
	maxInCell   = 5   // finalizers named in one table cell
)

// Limits bound a report for its reader: how many rows and items of each
// list, evidence lines of one blocker, and characters of one cluster
// string. The human view's are HumanLimits; an agent's context window gets
// the same, or a multiple (kubectl ns-doctor mcp's detail argument).
type Limits struct {
	Rows, Items, Evidence, Text int
}

// HumanLimits are the human view's bounds.
func HumanLimits() Limits {
	return Limits{Rows: maxRows, Items: maxItems, Evidence: maxEvidence, Text: maxText}
}

// limit keeps the first n of list, and says how many it left out.
func limit[T any](list []T, n int) ([]T, int) {
	if len(list) <= n {
		return list, 0
	}
	return list[:n:n], len(list) - n
}

// more says what a bounded list left out.
func (e *errWriter) more(indent string, n int, what string) {
	if n > 0 {
		e.printf("%s... and %d more %s (-o json lists all)\n", raw(indent), n, what)
	}
}
