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
	w      io.Writer
	live   *Live
	many   bool
	states map[string]*runState
}

// runState is what the events said so far of one run.
type runState struct {
	namespace              string
	pass, types, typesDone int
	deleted                int
	remaining              []purge.Remaining
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

// Show takes one event.
func (p *Progress) Show(e purge.Event) {
	s := p.states[e.Namespace]
	if s == nil {
		s = &runState{namespace: e.Namespace}
		p.states[e.Namespace] = s
	}
	s.update(e)
	if p.live != nil {
		if e.Kind == purge.EventDone {
			p.live.Done(e.Namespace, progressLine(s, time.Now()))
		} else if e.Kind != purge.EventBackup {
			p.live.Set(e.Namespace, progressLine(s, time.Now()))
		}
		return
	}
	if line := plainLine(e); line != "" {
		if p.many {
			line = e.Namespace + ": " + line
		}
		_, _ = fmt.Fprintln(p.w, line)
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

// passLine says what a pass left.
func passLine(e purge.Event) string {
	var parts []string
	for _, rem := range e.Remaining {
		parts = append(parts, fmt.Sprintf("%s=%d", rem.Resource, rem.Count))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("pass %d: no content remains", e.Pass)
	}
	return fmt.Sprintf("pass %d: remaining %s (estimate %ds)", e.Pass, strings.Join(parts, ", "), e.Estimate)
}
