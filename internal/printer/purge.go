package printer

import (
	"fmt"
	"io"
	"strings"

	"github.com/fatih/color"

	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// Purge renders a purge plan or result.
func (h Human) Purge(w io.Writer, r *purge.Report) error {
	p := &errWriter{w: w}
	h.purgeHeadline(p, r)
	h.purgeSteps(p, r)
	h.purgeRows(p, r)
	h.purgeRecreated(p, r)
	h.purgeRemaining(p, r)
	h.purgeConditions(p, r)
	h.purgeFinalize(p, r)
	h.purgeLists(p, r)
	h.purgeHolding(p, r)
	return p.err
}

// purgeHolding ends the report with what holds the namespace, as explain
// says it, each with the step past it.
func (h Human) purgeHolding(p *errWriter, r *purge.Report) {
	if len(r.Holding) == 0 {
		return
	}
	title := "What holds the namespace now"
	if r.Outcome == purge.OutcomePlanned {
		title = "What would hold the namespace"
	}
	p.printf("\n%s\n", h.paint(color.Bold)(title))
	holds, left := limit(r.Holding, maxItems)
	for i, hold := range holds {
		h.blocker(p, i+1, hold.Blocker.Kind, WordsOf(hold.Blocker), raw(clean(HoldStep(r, hold))))
	}
	p.more("", left, "blockers")
}

func (h Human) purgeHeadline(p *errWriter, r *purge.Report) {
	label, style := "PLAN", []color.Attribute{color.FgCyan, color.Bold}
	switch r.Outcome {
	case purge.OutcomeGone:
		label, style = "DONE", []color.Attribute{color.FgGreen, color.Bold}
	case purge.OutcomeRemaining:
		label, style = "INCOMPLETE", []color.Attribute{color.FgRed, color.Bold}
	case purge.OutcomeRefused:
		label, style = "REFUSED", []color.Attribute{color.FgRed, color.Bold}
	}
	where := ""
	if r.Context != "" {
		where = fmt.Sprintf(" (context %s, cluster %s)", r.Context, r.Cluster)
	}
	what := "namespace"
	if r.Orphans {
		what = "the leftovers of former namespace"
	}
	p.printf("%s %s %s%s: %s\n", h.paint(style...)(label), what, r.Namespace, where, PurgeMessage(r))
	p.printf("  %s\n", orderingWords(r.Ordering))
	if w := serverWords(r.Ordering); w != "" {
		p.printf("  %s\n", w)
	}
	if len(r.Escalations) > 0 {
		p.printf("  escalations: %s\n", Escape(EscalationsWords(r.Escalations)))
	}
	if r.Passes > 1 {
		p.printf("  %d passes\n", r.Passes)
	}
}

func (h Human) purgeSteps(p *errWriter, r *purge.Report) {
	var rows [][]string
	quiet, skipped := 0, 0
	passes := map[int]bool{}
	for _, s := range r.Steps {
		passes[s.Pass] = true
		// Upstream sends deletecollection to every resource type; the empty
		// ones that succeed are noise for a person.
		if s.Status == purge.StepSkipped {
			skipped++
			continue
		}
		if s.Objects == 0 && s.Status != purge.StepFailed && s.Resource != "namespaces" {
			quiet++
			continue
		}
		request := s.Verb
		if s.Name != "" {
			request += " " + s.Name
		}
		rows = append(rows, []string{fmt.Sprint(s.Pass), request, s.Resource, fmt.Sprint(s.Objects), cell(StepResult(s), s.Refusal, 60)})
	}
	title := "Deletion pass"
	if len(passes) > 1 {
		title = "Deletion passes"
	}
	p.printf("\n%s\n", h.paint(color.Bold)(title))
	rows, hidden := limit(rows, maxRows)
	if len(rows) > 0 && len(passes) > 1 {
		t := newTable(p, "PASS", "REQUEST", "RESOURCE", "OBJECTS", "RESULT")
		for _, row := range rows {
			_ = t.Append(row[0], row[1], row[2], row[3], row[4])
		}
		if err := t.Render(); err != nil {
			p.fail(err)
		}
	} else if len(rows) > 0 {
		for i := range rows {
			rows[i] = rows[i][1:]
		}
		t := newTable(p, "REQUEST", "RESOURCE", "OBJECTS", "RESULT")
		for _, row := range rows {
			_ = t.Append(row[0], row[1], row[2], row[3])
		}
		if err := t.Render(); err != nil {
			p.fail(err)
		}
	}
	p.more("  ", hidden, "requests")
	if quiet > 0 {
		p.printf("  and %d deletecollection requests on empty resource types\n", quiet)
	}
	if skipped > 0 {
		p.printf("  and %d empty resource types, whose deletecollection was not sent: the backup's list had just found nothing\n", skipped)
	}
}

// purgeRows tells each escalation's rows in a table of its shape's
// columns, then the shape's notes.
func (h Human) purgeRows(p *errWriter, r *purge.Report) {
	for _, sh := range purge.Shapes() {
		rows := r.RowsOf(sh.Kind)
		if len(rows) == 0 {
			continue
		}
		p.printf("\n%s\n", h.paint(color.Bold)(sh.Title))
		header := make([]string, 0, len(sh.Columns)+1)
		for _, c := range sh.Columns {
			header = append(header, c.Header)
		}
		t := newTable(p, append(header, "RESULT")...)
		shown, left := limit(rows, maxRows)
		for _, row := range shown {
			cells := make([]any, 0, len(header)+1)
			for _, c := range sh.Columns {
				cells = append(cells, truncate(orDash(joinSome(c.Cell(row))), rowCellWidth))
			}
			_ = t.Append(append(cells, cell(RowResult(row), row.Refusal, rowCellWidth))...)
		}
		if err := t.Render(); err != nil {
			p.fail(err)
		}
		p.more("  ", left, "rows")
		if sh.Notes == nil {
			continue
		}
		notes, left := limit(sh.Notes(r), maxItems)
		for _, n := range notes {
			p.printf("  %s\n", wrap(n, width-4, "    "))
		}
		p.more("  ", left, "lines")
	}
}

// rowCellWidth bounds a cell of an escalation's table.
const rowCellWidth = 60

func (h Human) purgeRecreated(p *errWriter, r *purge.Report) {
	if len(r.Recreated) == 0 {
		return
	}
	p.printf("\n%s\n", h.paint(color.Bold)("Created anew while the namespace was terminating"))
	t := newTable(p, "RESOURCE", "NAME", "TIMES", "CREATED BY")
	recreated, left := limit(r.Recreated, maxRows)
	defer p.more("  ", left, "objects")
	for _, o := range recreated {
		by := o.CreatedBy
		if by == "" {
			by = "(not recorded)"
		}
		_ = t.Append(o.Resource, o.Name, fmt.Sprint(o.Times), by)
	}
	if err := t.Render(); err != nil {
		p.fail(err)
	}
}

func (h Human) purgeRemaining(p *errWriter, r *purge.Report) {
	if len(r.Remaining) == 0 {
		return
	}
	p.printf("\n%s\n", h.paint(color.Bold)("Remaining after the last pass"))
	t := newTable(p, "RESOURCE", "COUNT", "FINALIZERS")
	remaining, left := limit(r.Remaining, maxRows)
	defer p.more("  ", left, "resource types")
	for _, rem := range remaining {
		_ = t.Append(rem.Resource, fmt.Sprint(rem.Count), finalizerCounts(rem.Finalizers))
	}
	if err := t.Render(); err != nil {
		p.fail(err)
	}
}

func (h Human) purgeConditions(p *errWriter, r *purge.Report) {
	if len(r.Conditions) == 0 || r.Orphans { // no namespace to write them on
		return
	}
	p.printf("\n%s\n", h.paint(color.Bold)("Conditions, as the namespace controller would write them"))
	t := newTable(p, "TYPE", "STATUS", "REASON")
	var messages []string
	for _, c := range r.Conditions {
		_ = t.Append(strings.TrimPrefix(c.Type, "Namespace"), c.Status, c.Reason)
		if c.Status == "True" {
			messages = append(messages, strings.TrimPrefix(c.Type, "Namespace")+": "+c.Message)
		}
	}
	if err := t.Render(); err != nil {
		p.fail(err)
	}
	for _, m := range messages {
		p.printf("  %s\n", wrap(m, width-2, "    "))
	}
}

func (h Human) purgeFinalize(p *errWriter, r *purge.Report) {
	f := r.Finalize
	if r.Outcome == purge.OutcomeRefused {
		return
	}
	reason := ""
	if why := FinalizeReason(f); why != "" {
		reason = ": " + why
	}
	if r.Orphans {
		// Nothing to finalize: the namespace is gone already.
		switch {
		case f.Done || f.Would:
			p.printf("\n%s none %s\n", h.paint(color.Bold)("Leftovers:"), map[bool]string{true: "remain", false: "would remain"}[f.Done])
		default:
			p.printf("\n%s some remain%s\n", h.paint(color.Bold)("Leftovers:"), reason)
		}
		return
	}
	switch {
	case f.Done && len(f.Remove) == 0:
		p.printf("\n%s finalized\n", h.paint(color.Bold)("Finalize:"))
	case f.Done:
		p.printf("\n%s finalized (removed %s)\n", h.paint(color.Bold)("Finalize:"), strings.Join(f.Remove, ", "))
	case f.Would && r.Outcome == purge.OutcomePlanned:
		removing := ""
		if len(f.Remove) > 0 {
			removing = ", removing " + strings.Join(f.Remove, ", ")
		}
		p.printf("\n%s would finalize%s%s\n", h.paint(color.Bold)("Finalize:"), removing, reason)
	default:
		p.printf("\n%s not %s%s\n", h.paint(color.Bold)("Finalize:"), map[bool]string{true: "yet", false: "possible"}[r.Outcome != purge.OutcomePlanned], reason)
	}
}

func (h Human) purgeLists(p *errWriter, r *purge.Report) {
	section := func(title string, items []string, attrs ...color.Attribute) {
		if len(items) == 0 {
			return
		}
		p.printf("\n%s\n", h.paint(attrs...)(title))
		shown, left := limit(items, maxItems)
		for _, s := range shown {
			p.printf("  - %s\n", wrap(s, width-4, "    "))
		}
		p.more("  ", left, "lines")
	}
	section("Missing permissions (nothing was changed)", access.Words(r.MissingPermissions), color.FgRed, color.Bold)
	section("Errors from the API server", failuresWords(r), color.FgRed, color.Bold)
	section("Warnings", warningsWords(r), color.FgYellow, color.Bold)
	if r.Mode == purge.DryRunNone && r.Outcome != purge.OutcomeRefused {
		// A change a row tells (a forced pod, a strip, a bypass) is said
		// once, in its table above.
		changes, told := changesUntold(r)
		switch {
		case len(changes) == 0 && told:
			changes = []string{"none besides the deletion pass's requests and the escalations' tables above"}
		case len(changes) == 0:
			changes = []string{"none besides the deletion pass's requests above"}
		}
		section("Changes made", changes, color.Bold)
	}
	if r.BackupDir != "" {
		p.printf("\n%s %s (%d objects); restore with: kubectl ns-doctor restore %s\n",
			h.paint(color.Bold)("Backup:"), r.BackupDir, r.BackedUp, shellQuote(r.BackupDir))
	}
}

// Purges renders several namespaces' runs: a line each, then what went
// wrong where.
func (h Human) Purges(w io.Writer, rs []*purge.Report) error {
	p := &errWriter{w: w}
	if len(rs) == 0 {
		p.printf("no namespace to purge: none is terminating (among those selected)\n")
		return p.err
	}
	counts := map[purge.Outcome]int{}
	for _, r := range rs {
		counts[r.Outcome]++
	}
	label, what := "PLAN", fmt.Sprintf("dry run (%s): nothing was changed", rs[0].Mode)
	if rs[0].Mode == purge.DryRunNone {
		label, what = "DONE", fmt.Sprintf("%d gone", counts[purge.OutcomeGone])
		if counts[purge.OutcomeGone] < len(rs) {
			label, what = "INCOMPLETE", fmt.Sprintf("%d gone, %d still there", counts[purge.OutcomeGone], len(rs)-counts[purge.OutcomeGone])
		}
	}
	where := ""
	if rs[0].Context != "" {
		where = fmt.Sprintf(" (context %s, cluster %s)", rs[0].Context, rs[0].Cluster)
	}
	p.printf("%s %d namespaces%s: %s\n", h.paint(color.Bold)(label), len(rs), where, what)
	p.printf("  %s\n\n", orderingWords(rs[0].Ordering))
	header := []string{"NAMESPACE", "OUTCOME", "PASSES", "SAVED"}
	for _, sh := range purge.Shapes() {
		header = append(header, sh.Short)
	}
	t := newTable(p, append(header, "REMAINING", "FINALIZE")...)
	for _, r := range rs {
		sum := r.Summary()
		fin := "no"
		switch {
		case r.Finalize.Done:
			fin = "done"
		case r.Finalize.Would:
			fin = "would"
		}
		cells := []any{r.Namespace, string(r.Outcome), fmt.Sprint(r.Passes), fmt.Sprint(r.BackedUp)}
		for _, c := range sum.Counts {
			cells = append(cells, fmt.Sprint(c.Rows))
		}
		_ = t.Append(append(cells, fmt.Sprint(sum.Remaining), fin)...)
	}
	if err := t.Render(); err != nil {
		p.fail(err)
	}
	for _, r := range rs {
		fine := r.Outcome == purge.OutcomeGone || (r.Outcome == purge.OutcomePlanned && r.Finalize.Would)
		if fine && len(r.Failures) == 0 && len(r.Warnings) == 0 {
			continue
		}
		p.printf("\n%s %s\n", h.paint(color.Bold)(r.Namespace+":"), wrap(PurgeMessage(r), width-len(r.Namespace)-2, "  "))
		if reason := FinalizeReason(r.Finalize); !r.Finalize.Done && reason != "" {
			p.printf("  finalize: %s\n", wrap(reason, width-12, "    "))
		}
		errs, left := limit(failuresWords(r), maxInCell)
		for _, e := range errs {
			p.printf("  - error: %s\n", wrap(e, width-11, "    "))
		}
		p.more("    ", left, "errors")
		warnings, left := limit(warningsWords(r), maxInCell)
		for _, e := range warnings {
			p.printf("  - warning: %s\n", wrap(e, width-13, "    "))
		}
		p.more("    ", left, "warnings")
		if r.BackupDir != "" {
			p.printf("  backup: %s (%d objects)\n", r.BackupDir, r.BackedUp)
		}
		if len(r.Holding) > 0 {
			hold := r.Holding[0]
			p.printf("  holds: %s: %s\n", hold.Blocker.Kind, wrap(WordsOf(hold.Blocker).Summary, width-len(hold.Blocker.Kind)-11, "    "))
			p.printf("  next: %s\n", raw(clean(HoldStep(r, hold))))
		}
	}
	return p.err
}
