package inspect

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// What a holder says about itself is read from the words of its status,
// never from a list of operators: a condition type or a status field is
// named for trouble when its head word (the last one: SyncError,
// CleanupBlocked, vendor.Failed) is a word of trouble, and for good news
// when it is one of success. Operators scope their types with a prefix
// (vendor., example.com/), which says nothing of polarity.
//
// The vocabulary is the Kubernetes API conventions' (Ready, Available,
// Succeeded, Failed, Degraded) and kstatus's (sigs.k8s.io/cli-utils
// pkg/kstatus: Ready normal-true; Stalled and Reconciling abnormal-true,
// the first an error, the second work under way), with their plain
// English forms; no word of one operator's own. Free text (a reason, a
// message, a field's value) is read word by word, never by substring:
// "in user" does not say "in use", nor "failover" "fail"; and a trouble
// word a zero or a "no" counts ("0 errors", "errors: 0", "no error") says
// there is none.

// troubleWords are head words whose True (or whose field, when set) means
// trouble.
var troubleWords = map[string]bool{"failed": true, "failure": true, "failures": true, "failing": true, "error": true, "errors": true,
	"errored": true, "degraded": true, "stalled": true, "blocked": true, "unhealthy": true}

// goodWords are head words whose True means all is well, whatever else it
// says.
var goodWords = map[string]bool{"ready": true, "available": true, "synced": true, "healthy": true, "established": true, "succeeded": true}

// busyWords are head words whose True means work under way and whose
// False that it is done (kstatus's Reconciling): neither is trouble by
// itself.
var busyWords = map[string]bool{"reconciling": true}

// errorPhrases, in a reason or message, say it carries an error, whatever
// the polarity of its type (Progressing=True with a SyncError reason).
// The last ones are how controllers word a deletion something else still
// depends on (a store not empty, a volume in use, a violated dependency).
var errorPhrases = phrases("error", "errors", "errored", "fail", "fails", "failed", "failing", "failure", "failures",
	"deny", "denied", "forbidden", "invalid", "unavailable", "timeout", "timeouts", "timed out", "refused", "cannot", "cant",
	"unable", "backoff", "back off", "reject", "rejected", "rejects", "not found", "notfound", "does not exist", "doesnt exist",
	"conflict", "conflicts", "not empty", "notempty", "in use", "inuse", "violation", "violations", "violated")

// missingPhrases say that what a controller waits for does not exist: a
// Kubernetes NotFound (`secrets "creds" not found`), a kind with no API
// (the REST mapper's `no matches for kind`), a provider's words, or a
// target never set up (`cluster ... has not been configured`).
var missingPhrases = phrases("not found", "notfound", "does not exist", "doesnt exist", "do not exist", "no such",
	"no matches for kind", "could not find", "could not be found", "not configured", "not been configured")

// negators, before a trouble word, say there is none of it.
var negators = map[string]bool{"no": true, "zero": true, "without": true, "never": true}

// polarity is what a True condition of this type, or a set field of this
// name, means.
type polarity int

const (
	neutral polarity = iota
	trouble
	good
	busy
)

// polarityOf reads a condition type's or a field's name by its head word.
func polarityOf(name string) polarity {
	ws := words(name)
	if len(ws) == 0 {
		return neutral
	}
	switch head := ws[len(ws)-1]; {
	case troubleWords[head]:
		return trouble
	case goodWords[head]:
		return good
	case busyWords[head]:
		return busy
	}
	return neutral
}

// words splits a name into its lower-case words: the scope prefix dropped
// (up to the last '.' or '/'), then at case changes and separators.
func words(name string) []string {
	if k := strings.LastIndexAny(name, "./"); k >= 0 {
		name = name[k+1:]
	}
	return textWords(name)
}

// textWords splits text into its lower-case words, at separators and case
// changes (CredentialsNotFound is three words); an apostrophe joins
// (doesn't is one word, doesnt).
func textWords(text string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(text)
	for k, r := range rs {
		switch {
		case r == '\'' || r == '’':
			continue
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
			continue
		case unicode.IsUpper(r) && k > 0 && (unicode.IsLower(rs[k-1]) || k+1 < len(rs) && unicode.IsLower(rs[k+1])):
			flush()
		}
		cur = append(cur, r)
	}
	flush()
	return out
}

// phrase is a sequence of words.
type phrase []string

func phrases(list ...string) []phrase {
	out := make([]phrase, 0, len(list))
	for _, p := range list {
		out = append(out, strings.Fields(p))
	}
	return out
}

// saysAny tells whether text says one of the phrases, as words, and not
// negated: a zero or a "no" before it, or a zero right after it.
func saysAny(text string, list []phrase) bool {
	ws := textWords(text)
	for k := range ws {
		for _, p := range list {
			if k+len(p) <= len(ws) && slices.Equal(ws[k:k+len(p)], p) && !negated(ws, k, k+len(p)) {
				return true
			}
		}
	}
	return false
}

// negated tells whether the words ws[from:to] are counted as none: "no
// error", "0 errors", "errors: 0", "error count: 0", "without failure".
func negated(ws []string, from, to int) bool {
	if from > 0 && (negators[ws[from-1]] || zero(ws[from-1])) {
		return true
	}
	if to < len(ws) && counters[ws[to]] {
		to++
	}
	return to < len(ws) && zero(ws[to])
}

// counters may stand between a trouble word and its count.
var counters = map[string]bool{"count": true, "total": true}

// zero tells a word that is the number zero.
func zero(w string) bool {
	return w != "" && strings.Trim(w, "0") == ""
}

// carriesError tells whether a reason or a message says something failed.
func carriesError(text string) bool { return saysAny(text, errorPhrases) }

// saysMissing tells whether a holder's words say what its owner waits for
// does not exist.
func saysMissing(text string) bool { return saysAny(text, missingPhrases) }

// maxHolderConditions bounds the conditions kept of one holder: the
// latest.
const maxHolderConditions = 5

// notReady keeps an object's status conditions that say something is
// wrong, latest first: a condition False (Ready, Synced, Available, ...)
// or Unknown, a trouble condition True (Stalled, CleanupBlocked, ...),
// or any other True one whose reason or message carries an error. A
// condition written without a status (a type and a message, as several
// controllers write theirs) holds by being there: it is read as True.
func notReady(obj *unstructured.Unstructured) []diagnose.HolderCondition {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	var out []diagnose.HolderCondition
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		hc := diagnose.HolderCondition{}
		hc.Type, _ = m["type"].(string)
		hc.Status, _ = m["status"].(string)
		hc.Reason, _ = m["reason"].(string)
		// Taken whole: -o json keeps the holder's words exact; the
		// human view, the guard and the MCP tools bound them (printer).
		hc.Message, _ = m["message"].(string)
		read := hc
		if read.Status == "" {
			read.Status = "True"
		}
		if hc.Type == "" || !troubled(read) {
			continue
		}
		hc.Error = blames(read)
		hc.Missing = saysMissing(hc.Reason + " " + hc.Message)
		if s, _ := m["lastTransitionTime"].(string); s != "" {
			if t, err := time.Parse(time.RFC3339, s); err == nil {
				t = t.UTC()
				hc.LastTransitionTime = &t
			}
		}
		out = append(out, hc)
	}
	sort.SliceStable(out, func(a, b int) bool {
		ta, tb := out[a].LastTransitionTime, out[b].LastTransitionTime
		return ta != nil && (tb == nil || ta.After(*tb))
	})
	if len(out) > maxHolderConditions {
		out = out[:maxHolderConditions]
	}
	return out
}

// troubled tells whether a condition says something is wrong.
func troubled(c diagnose.HolderCondition) bool {
	p := polarityOf(c.Type)
	switch {
	case c.Status == "Unknown":
		return true
	case c.Status == "False":
		return p != trouble && p != busy
	case c.Status != "True" || p == good:
		return false
	case p == trouble:
		return true
	}
	return carriesError(c.Reason + " " + c.Message)
}

// blames tells whether a troubled condition reports a failure in its own
// words, rather than only that something is not ready yet: a trouble type
// True, or a reason or message that carries an error.
func blames(c diagnose.HolderCondition) bool {
	return c.Status == "True" && polarityOf(c.Type) == trouble || polarityOf(c.Reason) == trouble || carriesError(c.Reason+" "+c.Message)
}

// maxHolderFields bounds the status fields kept of one holder,
// maxFieldValue what is kept of each (a tenant's text), and
// maxStatusDepth how deep under status they are looked for
// (status.operationState.message is one level down).
const (
	maxHolderFields = 3
	maxFieldValue   = 1000
	maxStatusDepth  = 2
)

// statusSays keeps what a holder says of itself in status fields of its
// own rather than conditions, at the top of its status or in an object
// under it (status.operationState, status.health): a field named for
// trouble (error, lastError, failureMessage, deletionBlocked) whenever it
// is set; a phase, state or status that is a word of trouble; a message
// or reason when it carries an error, or when that phase, state or status
// beside it says trouble.
func statusSays(obj *unstructured.Unstructured) []diagnose.HolderField {
	status, _ := obj.Object["status"].(map[string]any)
	var out []diagnose.HolderField
	fieldsSay(status, "status", 0, &out)
	return out
}

// fieldsSay reads one object of a status (m, at path), then the objects
// under it, depth-first in the order of their keys, until maxHolderFields
// are kept.
func fieldsSay(m map[string]any, path string, depth int, out *[]diagnose.HolderField) {
	troubledPhase := false
	for _, k := range []string{"phase", "state", "status"} {
		if v, _ := m[k].(string); polarityOf(v) == trouble {
			troubledPhase = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if len(*out) == maxHolderFields {
			return
		}
		if child, ok := m[k].(map[string]any); ok && polarityOf(k) != trouble {
			// An object of its own (status.operationState), not an error
			// object ({code, message} under status.error).
			if depth+1 < maxStatusDepth {
				fieldsSay(child, path+"."+k, depth+1, out)
			}
			continue
		}
		if v := fieldText(m[k]); v != "" && fieldSays(k, v, troubledPhase) {
			*out = append(*out, diagnose.HolderField{Field: path + "." + k, Value: cutRunes(v, maxFieldValue), Missing: saysMissing(v)})
		}
	}
}

// fieldSays tells whether field k, set to v, says what is wrong.
func fieldSays(k, v string, troubledPhase bool) bool {
	ws := words(k)
	if len(ws) == 0 {
		return false
	}
	head := ws[len(ws)-1]
	saying := head == "message" || head == "reason" || head == "detail" || head == "details" || head == "description"
	switch {
	case polarityOf(k) == trouble, saying && slices.ContainsFunc(ws, func(w string) bool { return troubleWords[w] }):
		// error, lastError, deletionBlocked; failureMessage,
		// blockedReason (not lastErrorTime: a time says nothing).
		return true
	case head == "phase" || head == "state" || head == "status":
		return polarityOf(v) == trouble
	case saying:
		// A reason is a name (ReconcileError): its head word says; a
		// message is a sentence, said by its words.
		return troubledPhase || carriesError(v) || !strings.ContainsAny(v, " \t\n") && polarityOf(v) == trouble
	}
	return false
}

// fieldText is a status field's text: a string, a true flag, or the
// message of an error object ({code, message}).
func fieldText(v any) string {
	switch v := v.(type) {
	case string:
		return strings.TrimSpace(v)
	case bool:
		if v {
			return "true"
		}
	case map[string]any:
		if m, _ := v["message"].(string); m != "" {
			return strings.TrimSpace(m)
		}
	}
	return ""
}

// cutRunes keeps the first n runes of s.
func cutRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "..."
	}
	return s
}
