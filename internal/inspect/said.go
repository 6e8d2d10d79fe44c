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

// troubleWords are head words whose True (or whose field, when set) means
// trouble.
var troubleWords = map[string]bool{"failed": true, "failure": true, "failures": true, "error": true, "errors": true, "errored": true,
	"degraded": true, "stalled": true, "blocked": true, "blocker": true, "blockers": true, "terminal": true, "recoverable": true,
	"failing": true, "unhealthy": true}

// goodWords are head words whose True means all is well, whatever else it
// says.
var goodWords = map[string]bool{"ready": true, "available": true, "synced": true, "healthy": true, "established": true, "succeeded": true}

// errorWords, in a reason or message, say it carries an error, whatever
// the polarity of its type (Progressing=True with a SyncError reason).
// The last ones are how controllers word a deletion something else still
// depends on (a store not empty, a volume in use, a violated dependency).
var errorWords = []string{"error", "fail", "denied", "forbidden", "invalid", "unavailable", "timeout", "timed out", "refused", "cannot",
	"unable", "backoff", "reject", "not found", "notfound", "does not exist", "conflict", "not empty", "notempty", "in use", "inuse", "violation"}

// polarity is what a True condition of this type, or a set field of this
// name, means.
type polarity int

const (
	neutral polarity = iota
	trouble
	good
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
	}
	return neutral
}

// words splits a name into its lower-case words: the scope prefix dropped
// (up to the last '.' or '/'), then at case changes and separators.
func words(name string) []string {
	if k := strings.LastIndexAny(name, "./"); k >= 0 {
		name = name[k+1:]
	}
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(name)
	for k, r := range rs {
		switch {
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

// carriesError tells whether a reason or a message says something failed.
func carriesError(text string) bool {
	said := strings.ToLower(text)
	return slices.ContainsFunc(errorWords, func(w string) bool { return strings.Contains(said, w) })
}

// missingWords say that what a controller waits for does not exist: a
// Kubernetes NotFound (`secrets "creds" not found`), or a provider's.
var missingWords = []string{"not found", "notfound", "does not exist", "doesn't exist", "no such"}

// saysMissing tells whether a holder's words say what its owner waits for
// does not exist.
func saysMissing(text string) bool {
	said := strings.ToLower(text)
	return slices.ContainsFunc(missingWords, func(w string) bool { return strings.Contains(said, w) })
}

// maxHolderConditions bounds the conditions kept of one holder: the
// latest.
const maxHolderConditions = 5

// notReady keeps an object's status conditions that say something is
// wrong, latest first: a condition False (Ready, Synced, Available, ...)
// or Unknown, a trouble condition True (vendor.Terminal, CleanupBlocked, ...),
// or any other True one whose reason or message carries an error.
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
		hc.Message, _ = m["message"].(string)
		if !troubled(hc) {
			continue
		}
		hc.Error = blames(hc)
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
		return p != trouble
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

// maxHolderFields bounds the status fields kept of one holder, and
// maxFieldValue what is kept of each: a tenant's text.
const (
	maxHolderFields = 3
	maxFieldValue   = 1000
)

// statusSays keeps what a holder says of itself in status fields of its
// own rather than conditions: a field named for trouble (error,
// lastError, failureMessage, deletionBlocked) whenever it is set; a phase
// or state that is a word of trouble; a message or reason when it carries
// an error, or when that phase or state says trouble.
func statusSays(obj *unstructured.Unstructured) []diagnose.HolderField {
	status, _ := obj.Object["status"].(map[string]any)
	troubledPhase := false
	for _, k := range []string{"phase", "state"} {
		if v, _ := status[k].(string); polarityOf(v) == trouble {
			troubledPhase = true
		}
	}
	var out []diagnose.HolderField
	for _, k := range slices.Sorted(maps.Keys(status)) {
		v := fieldText(status[k])
		if v == "" || len(out) == maxHolderFields {
			continue
		}
		ws := words(k)
		if len(ws) == 0 {
			continue
		}
		head := ws[len(ws)-1]
		saying := head == "message" || head == "reason" || head == "detail" || head == "details" || head == "description"
		switch {
		case polarityOf(k) == trouble, saying && slices.ContainsFunc(ws, func(w string) bool { return troubleWords[w] }):
			// error, lastError, deletionBlocked; failureMessage,
			// blockedReason (not lastErrorTime: a time says nothing).
		case head == "phase" || head == "state":
			if polarityOf(v) != trouble {
				continue
			}
		case saying:
			if !troubledPhase && !carriesError(v) && polarityOf(v) != trouble {
				continue
			}
		default:
			continue
		}
		out = append(out, diagnose.HolderField{Field: "status." + k, Value: cutRunes(v, maxFieldValue), Missing: saysMissing(v)})
	}
	return out
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
