package printer

import (
	"fmt"
	"io"
	"strings"

	"github.com/ns-doctor/ns-doctor/internal/backup/restore"
)

// Restore prints a restore's report, or its plan: a headline, then a
// line per saved object (restored, or would be; left out and why; failed
// and the API server's answer) with what was changed on it, the volumes,
// and the notes that hold for all.
func Restore(w io.Writer, format string, r *restore.Report) error {
	if format != "" {
		return Print(w, format, r)
	}
	var b strings.Builder
	b.WriteString(restoreHeadline(r) + "\n")
	for _, o := range r.Objects {
		b.WriteString("  " + Escape(Cut(restoreLine(o), 400)) + "\n")
		for _, n := range o.Notes {
			b.WriteString("      " + Escape(Cut(n, 300)) + "\n")
		}
	}
	for _, v := range r.Volumes {
		b.WriteString(volumeLine(v) + "\n")
	}
	for _, n := range r.Notes {
		b.WriteString("NOTE " + Escape(n) + "\n")
	}
	if r.Plan && len(r.Objects) > 0 {
		fmt.Fprintf(&b, "NEXT restore it: %s --yes\n", restoreCommandLine(r))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func restoreHeadline(r *restore.Report) string {
	c := r.Counts()
	where := "namespace " + Escape(r.Into)
	if r.Into != r.From {
		where += " (a clone of " + Escape(r.From) + ")"
	}
	if r.Plan {
		return fmt.Sprintf("PLAN restore %s from %s: %d to restore, %d left out; nothing changed", where, Escape(r.Dir), c[restore.Planned], c[restore.LeftOut])
	}
	label := "RESTORED"
	if c[restore.Failed] > 0 {
		label = "INCOMPLETE"
	}
	return fmt.Sprintf("%s %s from %s: %d restored, %d left out, %d failed", label, where, Escape(r.Dir), c[restore.Restored], c[restore.LeftOut], c[restore.Failed])
}

func restoreLine(o restore.Object) string {
	what := o.Resource + "/" + o.Name
	switch o.Status {
	case restore.Planned:
		return "restore  " + what
	case restore.Restored:
		return "restored " + what
	case restore.Failed:
		return "failed   " + what + ": " + o.Why
	}
	return "left out " + what + ": " + o.Why
}

func volumeLine(v restore.Volume) string {
	if v.Bound {
		return fmt.Sprintf("VOLUME %s: claim %s bound to it again; reclaim policy %s again", Escape(v.Name), Escape(v.Claim), Escape(v.Now))
	}
	return fmt.Sprintf("VOLUME %s stays %s: %s; once bound: %s", Escape(v.Name), Escape(v.Now), Escape(v.Why), Escape(v.Command))
}

// restoreCommandLine is the command that restores what a plan shows.
func restoreCommandLine(r *restore.Report) string {
	cmd := "kubectl ns-doctor restore " + shellQuote(Escape(r.Dir))
	if r.Into != r.From {
		cmd += " -n " + Escape(r.Into)
	}
	return cmd
}

// RestoreProgress is the progress line for one step of a restore (stderr): a
// restore killed half-way has said how far it got.
func RestoreProgress(s restore.Step, r *restore.Report) string {
	ns := Escape(r.Into)
	switch s {
	case restore.StepNamespace:
		if r.NamespaceCreated {
			return "restore: namespace " + ns + " created again"
		}
		return "restore: namespace " + ns + " is there: restoring into it"
	case restore.StepApplied:
		c := r.Counts()
		return fmt.Sprintf("restore: %d object(s) restored, %d left out, %d failed", c[restore.Restored], c[restore.LeftOut], c[restore.Failed])
	case restore.StepVolumes:
		back := 0
		for _, v := range r.Volumes {
			if v.Bound {
				back++
			}
		}
		return fmt.Sprintf("restore: %d of %d volume(s) bound again and given their reclaim policy back", back, len(r.Volumes))
	}
	return "restore: " + Escape(string(s))
}
