package printer

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// Progress shows purge runs' events on stderr: on a terminal a line per
// namespace, redrawn in place as it changes (Live); elsewhere a line per
// pass, so logs get one line per real change. With several namespaces,
// each plain line starts with its namespace.
type Progress struct {
	w    io.Writer
	live *Live
	many bool
	// warningsOnly shows the API server's warnings and nothing else (a
	// plan, or -o json|yaml on a terminal).
	warningsOnly bool
	states       map[string]*runState
	// ByContext names each run context/namespace: over many clusters the
	// same namespace name may run in two of them.
	ByContext bool
}

// runState is what the events said so far of one run.
type runState struct {
	namespace              string
	pass, types, typesDone int
	deleted                int
	remaining              []purge.Remaining
	failures               []purge.Failure
	until                  time.Time
	waitFor                purge.WaitReason
	done                   bool
}

// NewProgress shows events on w; terminal says whether w is one, many
// whether several namespaces run at once.
func NewProgress(w io.Writer, terminal, many bool) *Progress {
	p := &Progress{w: w, many: many, states: map[string]*runState{}}
	if terminal {
		p.live = NewLive(w, true)
	}
	return p
}

// NewWarnings shows only the API server's warnings, on w.
func NewWarnings(w io.Writer) *Progress {
	return &Progress{w: w, warningsOnly: true, states: map[string]*runState{}}
}

// Show takes one event.
func (p *Progress) Show(e purge.Event) {
	if e.Kind == purge.EventWarning {
		// As kubectl shows them: once each, on stderr, above a live display.
		line := "Warning: " + clean(e.Err) + "\n"
		if p.live != nil {
			p.live.Print(line)
		} else {
			_, _ = io.WriteString(p.w, line)
		}
		return
	}
	if p.warningsOnly {
		return
	}
	key := e.Namespace
	if p.ByContext && e.Context != "" {
		key = e.Context + "/" + e.Namespace
	}
	s := p.states[key]
	if s == nil {
		s = &runState{namespace: key}
		p.states[key] = s
	}
	s.update(e)
	if p.live != nil {
		if e.Kind == purge.EventDone {
			p.live.Done(key, clean(progressLine(s, time.Now())))
		} else if e.Kind != purge.EventBackup {
			p.live.Set(key, clean(progressLine(s, time.Now())))
		}
		return
	}
	if line := plainLine(e); line != "" {
		if p.many {
			line = key + ": " + line
		}
		_, _ = fmt.Fprintln(p.w, clean(line))
	}
}

// Close ends the display, before the report is printed on the same
// terminal.
func (p *Progress) Close() {
	if p.live != nil {
		p.live.Close()
	}
}

func (s *runState) update(e purge.Event) {
	switch e.Kind {
	case purge.EventPass:
		s.pass, s.types, s.typesDone, s.until = e.Pass, e.Types, 0, time.Time{}
	case purge.EventRequest:
		if e.Step.Verb == "deletecollection" {
			s.typesDone++
		}
		if e.Step.Status == purge.StepSent {
			s.deleted += e.Step.Objects
		}
	case purge.EventPassEnded:
		s.remaining = slices.Clone(e.Remaining)
		slices.SortStableFunc(s.remaining, func(a, b purge.Remaining) int { return b.Count - a.Count })
		s.failures = e.Failures
	case purge.EventWaiting, purge.EventRetrying:
		s.until, s.waitFor = e.Until, e.For
	case purge.EventDone:
		s.done, s.until = true, time.Time{}
	}
}

// plainLine is an event's line in a log, "" for the events only a live
// display shows.
func plainLine(e purge.Event) string {
	switch e.Kind {
	case purge.EventBackup:
		return "backup: " + e.Dir
	case purge.EventRetrying:
		return fmt.Sprintf("the API server is unavailable (%s); retrying in %s", e.Err, time.Until(e.Until).Round(time.Second))
	case purge.EventPassEnded:
		return passLine(e)
	}
	return ""
}

// passLine says what a pass left, and what was refused: never "no
// content remains" while something is refused.
func passLine(e purge.Event) string {
	var left []string
	for _, rem := range e.Remaining {
		left = append(left, fmt.Sprintf("%s=%d", rem.Resource, rem.Count))
	}
	var parts []string
	switch {
	case len(left) > 0:
		parts = append(parts, fmt.Sprintf("remaining %s (estimate %ds)", strings.Join(left, ", "), e.Estimate))
	case len(e.Failures) == 0:
		parts = append(parts, "no content remains")
	}
	if len(e.Failures) > 0 {
		parts = append(parts, refusedWords(e.Failures))
	}
	if e.Deleted == 0 && (len(left) > 0 || len(e.Failures) > 0) {
		parts = append(parts, "nothing deleted")
	}
	return fmt.Sprintf("pass %d: %s", e.Pass, strings.Join(parts, "; "))
}

// refusedWords says what failed in a pass, in a line: the first failure
// (who refused it, when the answer tells), how often since when, and how
// many others.
func refusedWords(failures []purge.Failure) string {
	f := failures[0]
	what := f.Resource
	if f.Name != "" {
		what += "/" + f.Name
	}
	if f.Verb != "pass" {
		what = f.Verb + " " + what
	}
	words := "failed: " + what + ": " + refusedOr(f.Refusal, f.Error)
	if f.Count > 1 {
		words += fmt.Sprintf(" (x%d since %s)", f.Count, f.First.Format("15:04:05"))
	}
	if len(failures) > 1 {
		words += fmt.Sprintf(", and %d more", len(failures)-1)
	}
	return words
}
