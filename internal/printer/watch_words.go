package printer

import (
	"fmt"
	"strings"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// WatchWords are the words of watch's Events (watch.Words): one paragraph
// that fits an Event, for `kubectl describe namespace` and `kubectl get
// events`. Text from the cluster is escaped as everywhere else.
type WatchWords struct{}

// Stuck says a stuck namespace's blockers and the first next step.
func (WatchWords) Stuck(r diagnose.Report) string {
	blocking := r.Blocking()
	parts := make([]string, 0, len(blocking))
	for _, b := range blocking {
		s := string(b.Kind)
		if b.Subject != "" {
			s += " " + b.Subject
		}
		parts = append(parts, s)
	}
	msg := fmt.Sprintf("Stuck in Terminating, %d object(s) left.", r.Remaining())
	if len(parts) > 0 {
		msg = fmt.Sprintf("Stuck in Terminating, %d object(s) left; blocked by %s.", r.Remaining(), strings.Join(parts, "; "))
	}
	if len(blocking) > 0 {
		w := WordsOf(blocking[0])
		msg += " " + w.Summary + "."
		if w.NextStep != "" {
			msg += " Next: " + w.NextStep + "."
		}
	}
	msg += " Full report: kubectl ns-doctor explain " + r.Namespace.Name
	return Escape(msg)
}

// Janitor says one janitor run: what it did or would do, and what holds
// the namespace after it.
func (WatchWords) Janitor(r *purge.Report, err error) string {
	if r == nil {
		r = &purge.Report{}
	}
	var msg string
	switch {
	case err != nil && r.Outcome == purge.OutcomeRefused || len(r.MissingPermissions) > 0:
		msg = "janitor: permissions missing, nothing was changed"
		if len(r.MissingPermissions) > 0 {
			msg += ": " + strings.Join(access.Words(r.MissingPermissions), "; ")
		}
	case err != nil:
		msg = fmt.Sprintf("janitor: purge of namespace %s failed: %v", r.Namespace, err)
	case r.Mode != purge.DryRunNone:
		msg = fmt.Sprintf("janitor: server dry run of purge (add --purge-force to act): %s", planWords(r))
	case r.Outcome == purge.OutcomeGone:
		msg = fmt.Sprintf("janitor: purged, namespace %s is gone after %d pass(es); %d object(s) saved in %s", r.Namespace, r.Passes, r.BackedUp, r.BackupDir)
	default:
		msg = fmt.Sprintf("janitor: %s; %d object(s) saved in %s", PurgeMessage(r), r.BackedUp, r.BackupDir)
	}
	return Escape(msg)
}

// planWords sums up a dry run: its requests, what each escalation would
// change, and whether the namespace would go.
func planWords(r *purge.Report) string {
	sum := r.Summary()
	msg := strings.Join(append([]string{fmt.Sprintf("%d request(s) of the deletion pass", sum.Requests)}, sum.Acting()...), ", ")
	if len(r.Holding) == 0 {
		return msg + "; the namespace would then be gone"
	}
	h := r.Holding[0]
	return msg + fmt.Sprintf("; it would remain, held by %s: %s; next: %s", h.Blocker.Kind, WordsOf(h.Blocker).Summary, HoldStep(r, h))
}

// WatchLine is one line of watch's human output: a changed diagnosis, a
// janitor run or a namespace gone.
func WatchLine(at time.Time, name string, r *diagnose.Report, terminating time.Duration, janitor string) string {
	stamp := at.UTC().Format(time.RFC3339)
	switch {
	case janitor != "":
		return fmt.Sprintf("%s %s", stamp, truncate(clean(name+": "+janitor), width+40))
	case r == nil:
		return fmt.Sprintf("%s %s: gone (or no longer terminating)", stamp, clean(name))
	}
	return fmt.Sprintf("%s %s (terminating for %s)", stamp, StatusLine(*r), terminating.Round(time.Second))
}
