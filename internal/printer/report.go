package printer

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fatih/color"

	"github.com/ns-doctor/ns-doctor/internal/apierror"
	"github.com/ns-doctor/ns-doctor/internal/compat"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/fleet"
)

// width is the terminal width the human view is laid out for.
const width = 100

// Human renders reports for people.
type Human struct {
	Color bool
	// Now anchors relative times ("3m ago"); golden tests fix it.
	Now time.Time
}

// raw is text the printer made safe already (escaped cluster text laid
// out, or its own colour codes around its own words): printf and tables
// print it as is, and escape every plain string.
type raw string

func (h Human) paint(attrs ...color.Attribute) func(string) raw {
	c := color.New(attrs...)
	if h.Color {
		c.EnableColor()
	} else {
		c.DisableColor()
	}
	return func(s string) raw { return raw(c.Sprint(clean(s))) }
}

// Diagnosis renders one diagnosis: the verdict first, then the sections.
func (h Human) Diagnosis(w io.Writer, r diagnose.Report) error {
	p := &errWriter{w: w}
	h.verdict(p, r)
	h.namespace(p, r)
	h.blockers(p, r.Blockers)
	h.notes(p, r.Notes)
	h.finalizers(p, r.Finalizers)
	h.holders(p, r)
	h.events(p, r)
	h.conditions(p, r)
	h.discovery(p, r.Discovery)
	h.content(p, r)
	if len(r.Unchecked) > 0 {
		p.printf("\n%s\n", h.paint(color.FgYellow, color.Bold)("Not checked (could not be read)"))
		unchecked, left := limit(UncheckedWords(r.Unchecked), maxItems)
		for _, u := range unchecked {
			p.printf("  - %s\n", wrap(u, width-4, "    "))
		}
		p.more("  ", left, "reads that failed")
	}
	return p.err
}

func (h Human) verdict(p *errWriter, r diagnose.Report) {
	style := map[diagnose.State][]color.Attribute{
		diagnose.StateStuck:       {color.FgRed, color.Bold},
		diagnose.StateTerminating: {color.FgYellow, color.Bold},
		diagnose.StateActive:      {color.FgGreen, color.Bold},
	}[r.Verdict.State]
	label := strings.ToUpper(string(r.Verdict.State))
	p.printf("%s %s\n", h.paint(style...)(label), wrap(VerdictSummary(r), width-len(label)-1, strings.Repeat(" ", len(label)+1)))
}

func (h Human) namespace(p *errWriter, r diagnose.Report) {
	ns := r.Namespace
	bold := h.paint(color.Bold)
	p.printf("\n%s\n", bold("Namespace"))
	p.printf("  name:       %s (uid %s)\n", ns.Name, ns.UID)
	p.printf("  phase:      %s\n", ns.Phase)
	p.printf("  created:    %s\n", h.when(ns.CreationTimestamp))
	if ns.DeletionTimestamp != nil {
		p.printf("  deleted:    %s\n", h.when(*ns.DeletionTimestamp))
	}
	p.printf("  finalizers: spec %s, metadata %s\n", bracketed(ns.SpecFinalizers), bracketed(ns.MetadataFinalizers))
	p.printf("  %s\n", orderingWords(r.Ordering.Ordering))
	if w := serverWords(r.Ordering.Ordering); w != "" {
		p.printf("  %s\n", wrap(w, width-2, "    "))
	}
}

func (h Human) blockers(p *errWriter, blockers []diagnose.Blocker) {
	if len(blockers) == 0 {
		return
	}
	bold := h.paint(color.Bold)
	p.printf("\n%s\n", bold("Blockers"))
	shown, left := limit(blockers, maxItems)
	for i, b := range shown {
		w := WordsOf(b)
		h.blocker(p, i+1, b.Kind, w, raw(""))
	}
	p.more("", left, "blockers")
}

// blocker writes one numbered blocker: its summary, its evidence (bounded)
// and its next step (never wrapped: a command must survive copy and
// paste), or next when given.
func (h Human) blocker(p *errWriter, n int, kind diagnose.BlockerKind, w BlockerWords, next raw) {
	red := h.paint(color.FgRed, color.Bold)
	p.printf("%d. %s %s\n", n, red(string(kind)), wrap(w.Summary, width-len(kind)-4, "   "))
	evidence, left := limit(w.Evidence, maxEvidence)
	for _, e := range evidence {
		p.printf("   - %s\n", wrap(e, width-5, "     "))
	}
	p.more("   ", left, "lines of evidence")
	if next == "" {
		next = raw(clean(w.NextStep))
	}
	if next != "" {
		p.printf("   %s %s\n", h.paint(color.FgCyan)("next:"), next)
	}
}

func (h Human) notes(p *errWriter, notes []diagnose.Note) {
	for _, n := range notes {
		w := NoteWords(n)
		p.printf("\n%s %s\n", h.paint(color.FgYellow, color.Bold)("Note: "+string(n.Kind)), wrap(w.Summary, width-len(n.Kind)-7, "  "))
		for _, e := range w.Evidence {
			p.printf("   - %s\n", wrap(e, width-5, "     "))
		}
		if w.NextStep != "" {
			p.printf("   %s %s\n", h.paint(color.FgCyan)("next:"), w.NextStep)
		}
	}
}

// finalizers shows who removes each finalizer holding content, whether it
// runs, what it guards and what stripping it leaks.
func (h Human) finalizers(p *errWriter, infos []diagnose.FinalizerInfo) {
	if len(infos) == 0 {
		return
	}
	p.printf("\n%s\n", h.paint(color.Bold)("Finalizers holding content"))
	infos, left := limit(infos, maxItems)
	t := newTable(p, "FINALIZER", "OBJECTS", "OWNER", "RUNNING")
	for _, f := range infos {
		_ = t.Append(f.Name, fmt.Sprint(f.Objects), OwnerCell(f), RunningCell(f))
	}
	if err := t.Render(); err != nil {
		p.fail(err)
	}
	for _, f := range infos {
		p.printf("  %s: %s\n", f.Name, wrap(OwnerEvidence(f.OwnerState), width-len(f.Name)-4, "    "))
		if f.Known {
			p.printf("    guards: %s\n", wrap(f.Guards, width-12, "      "))
			p.printf("    stripping it leaks: %s\n", wrap(f.Leak, width-24, "      "))
			p.printf("    source: %s\n", f.Source)
		}
	}
	p.more("  ", left, "finalizers")
}

// OwnerCell is the OWNER column: the catalogue's owner (a description,
// cut at 45 characters), else the workload or identity the inference
// names (cut at 60: a name to look up), marked with its source and
// confidence; "unknown owner" when neither names one.
func OwnerCell(f diagnose.FinalizerInfo) string {
	switch {
	case f.Owner == "":
		return "unknown owner"
	case f.OwnerSource == diagnose.SourceInferred && f.OwnerState.Inferred != nil:
		return truncate(f.Owner, 60) + " (" + inferredMark(f.OwnerState.Inferred) + ")"
	}
	return truncate(f.Owner, 45)
}

// RunningCell is the RUNNING column: the state (said for an owner that
// runs but cannot finish). When the inference decided it, with the
// readiness of the workload it found, and marked inferred unless the
// OWNER column is already (an owner the inference names: the state is
// then that inference's).
func RunningCell(f diagnose.FinalizerInfo) string {
	s := f.OwnerState
	cell := string(s.State)
	if s.State == diagnose.OwnerRunningCannotFinish {
		cell = "Running, but cannot finish"
	}
	if s.Source() != diagnose.SourceInferred || s.Inferred == nil {
		return cell
	}
	if w := s.Workload(); w != nil && (s.State == diagnose.OwnerRunningReady || s.State == diagnose.OwnerNotReady || s.State == diagnose.OwnerRunningCannotFinish) {
		cell += fmt.Sprintf(" %d/%d", w.Ready, w.Want)
	}
	if f.OwnerSource == diagnose.SourceInferred {
		return cell
	}
	return cell + " (" + inferredMark(s.Inferred) + ")"
}

// holders shows what the objects holding the namespace say in their
// status.
func (h Human) holders(p *errWriter, r diagnose.Report) {
	if len(r.Holders) == 0 {
		return
	}
	p.printf("\n%s\n", h.paint(color.Bold)("What the holders say (status conditions that are not ready, status fields that say what is wrong)"))
	for _, ho := range r.Holders {
		if m := ho.ManagedBy; m != nil {
			line := fmt.Sprintf("%s/%s is managed by %s %s: %s", ho.Resource, ho.Name, m.Tool, m.Name, managerWords(m.Tool))
			p.printf("  - %s\n", wrap(line, width-4, "    "))
		}
		conds, left := limit(ho.Conditions, maxInCell)
		for _, c := range conds {
			var about []string
			if c.Reason != "" {
				about = append(about, c.Reason)
			}
			if c.LastTransitionTime != nil {
				about = append(about, h.ago(*c.LastTransitionTime))
			}
			line := fmt.Sprintf("%s/%s %s", ho.Resource, ho.Name, c.Named())
			if len(about) > 0 {
				line += " (" + strings.Join(about, ", ") + ")"
			}
			if c.Message != "" {
				line += ": " + c.Message
			}
			p.printf("  - %s\n", wrap(line, width-4, "    "))
		}
		p.more("  ", left, "conditions of "+ho.Resource+"/"+ho.Name)
		for _, f := range ho.Fields {
			p.printf("  - %s\n", wrap(fmt.Sprintf("%s/%s %s: %s", ho.Resource, ho.Name, f.Field, f.Value), width-4, "    "))
		}
		for _, ref := range ho.Refs {
			if ref.State == diagnose.RefGone {
				line := fmt.Sprintf("%s/%s %s names %s %s: gone", ho.Resource, ho.Name, ref.Field, strings.ToLower(string(ref.Kind)), ref.Name)
				p.printf("  - %s\n", wrap(line, width-4, "    "))
			}
		}
	}
}

func (h Human) events(p *errWriter, r diagnose.Report) {
	if len(r.Events) == 0 {
		return
	}
	p.printf("\n%s\n", h.paint(color.Bold)("Warning events of the namespace (latest first)"))
	for _, e := range r.Events {
		line := fmt.Sprintf("%s %s (x%d, %s)", e.Object, e.Reason, e.Count, h.ago(e.Last))
		if e.Message != "" {
			line += ": " + e.Message
		}
		p.printf("  - %s\n", wrap(line, width-4, "    "))
	}
}

// EarlyReturnNote explains conditions that disagree because the
// controller's last pass stopped at pods.
const EarlyReturnNote = "the controller's conditions come from a pass that stopped at pods: while any pod remains its pass returns early and writes ContentRemaining False (\"All content successfully removed\") without counting the rest (upstream issue 138208); its next pass after the pods are gone will count what ns-doctor counts"

func (h Human) conditions(p *errWriter, r diagnose.Report) {
	bold := h.paint(color.Bold)
	p.printf("\n%s\n", bold("Conditions (controller's, and ns-doctor's own evaluation)"))
	t := newTable(p, "TYPE", "STATUS", "REASON", "SINCE", "NS-DOCTOR")
	var messages []string
	for _, c := range r.Conditions {
		status, reason, since := "-", "(not set)", "-"
		if v := c.Controller; v != nil {
			status, reason = v.Status, v.Reason
			if v.LastTransitionTime != nil {
				since = h.ago(*v.LastTransitionTime)
			}
			if v.Status == "True" {
				messages = append(messages, fmt.Sprintf("%s: %s", strings.TrimPrefix(c.Type, "Namespace"), v.Message))
			}
		}
		_ = t.Append(strings.TrimPrefix(c.Type, "Namespace"), status, reason, since, h.agreement(c))
	}
	if err := t.Render(); err != nil {
		p.fail(err)
	}
	for _, m := range messages {
		p.printf("  %s\n", wrap(m, width-2, "    "))
	}
	if r.Ordering.OtherMatches {
		other := "off"
		if !r.Ordering.Ordered {
			other = "on"
		}
		note := fmt.Sprintf("the controller's conditions are those of the other deletion order: this cluster's namespace controller runs with OrderedNamespaceDeletion=%s; run again with --ordered-deletion=%s", other, other)
		p.printf("  %s %s\n", h.paint(color.FgYellow, color.Bold)("note:"), wrap(note, width-8, "        "))
	}
	if r.Ordering.PodsFirstEarlyReturn && !r.Ordering.OtherMatches {
		p.printf("  %s %s\n", h.paint(color.FgYellow, color.Bold)("note:"), wrap(EarlyReturnNote, width-8, "        "))
	}
	for _, c := range r.Conditions {
		if !c.Agree && c.Computed != nil && c.Controller != nil && c.Computed.Message != c.Controller.Message {
			prefix := fmt.Sprintf("  ns-doctor %s: ", strings.TrimPrefix(c.Type, "Namespace"))
			p.printf("%s%s\n", prefix, wrap(c.Computed.Message, width-len(prefix), "    "))
		}
	}
}

func (h Human) agreement(c diagnose.Condition) raw {
	switch {
	case c.Computed == nil:
		return raw("-")
	case c.Agree:
		return h.paint(color.FgGreen)("agrees")
	case c.Controller == nil:
		return h.paint(color.FgYellow)(fmt.Sprintf("would set %s %s", c.Computed.Status, c.Computed.Reason))
	case c.Controller.Status != c.Computed.Status || c.Controller.Reason != c.Computed.Reason:
		return h.paint(color.FgYellow)(fmt.Sprintf("differs: %s %s", c.Computed.Status, c.Computed.Reason))
	default:
		return h.paint(color.FgYellow)("differs: message")
	}
}

func (h Human) discovery(p *errWriter, d diagnose.Discovery) {
	p.printf("\n%s %d namespaced resource types discovered", h.paint(color.Bold)("Discovery:"), d.Resources)
	if len(d.Failures) == 0 {
		p.printf(", no failures\n")
		return
	}
	p.printf(", %d group-version(s) failing\n", len(d.Failures))
	t := newTable(p, "GROUP-VERSION", "APISERVICE", "SERVICE", "AVAILABLE", "REASON")
	for _, f := range d.Failures {
		svc, backend, avail, reason := "-", "-", "-", "-"
		if s := f.APIService; s != nil {
			svc, backend, avail, reason = s.Name, orDash(s.Service), s.Available, orDash(s.Reason)
		}
		_ = t.Append(f.GroupVersion, svc, backend, avail, reason)
	}
	if err := t.Render(); err != nil {
		p.fail(err)
	}
}

func (h Human) content(p *errWriter, r diagnose.Report) {
	bold := h.paint(color.Bold)
	if len(r.Content) == 0 {
		p.printf("\n%s none left\n", bold("Remaining content:"))
		return
	}
	p.printf("\n%s\n", bold("Remaining content"))
	content, left := limit(r.Content, maxRows)
	defer p.more("  ", left, "resource types")
	t := newTable(p, "RESOURCE", "COUNT", "TERMINATING", "FINALIZERS", "EXAMPLES")
	for _, c := range content {
		name := c.Resource
		if c.Group != "" {
			name += "." + c.Group
		}
		if c.Error != "" {
			// The error itself is in the blockers' evidence.
			_ = t.Append(name, "?", "?", "?", "cannot list, see blockers")
			continue
		}
		terminating := fmt.Sprint(c.Terminating)
		if c.OldestDeletion != nil {
			terminating += " (" + strings.TrimSuffix(h.ago(*c.OldestDeletion), " ago") + ")"
		}
		_ = t.Append(name, fmt.Sprint(c.Count), terminating, finalizerCounts(c.Finalizers), truncate(listed(c.Examples, ",", "-"), 30))
	}
	if err := t.Render(); err != nil {
		p.fail(err)
	}
	if r.Pods != nil && r.Pods.HoldingOtherContent {
		p.printf("  pods are deleted first: while %d remain, the controller deletes nothing else (estimate %ds)\n", r.Pods.Remaining, r.Pods.EstimateSeconds)
	}
}

// finalizerCounts says a type's finalizers in a cell: the first few, and
// how many more.
func finalizerCounts(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for f, n := range m {
		parts = append(parts, fmt.Sprintf("%s=%d", f, n))
	}
	sort.Strings(parts)
	shown, left := limit(parts, maxInCell)
	cell := strings.Join(shown, ",")
	if left > 0 {
		cell += fmt.Sprintf(",+%d more", left)
	}
	return cell
}

func (h Human) when(t time.Time) string {
	return fmt.Sprintf("%s (%s)", t.UTC().Format(time.RFC3339), h.ago(t))
}

func (h Human) ago(t time.Time) string {
	d := h.Now.Sub(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd ago", int(d.Hours()/24))
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// truncate cuts s to n characters, saying it cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-3]) + "..."
}

// wrap escapes and bounds s (text from the cluster is in it), then breaks
// it into lines of at most n characters, continuing with indent.
func wrap(s string, n int, indent string) raw {
	words := strings.Fields(clean(s))
	var lines []string
	line := ""
	for _, w := range words {
		if line != "" && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) > n {
			lines = append(lines, line)
			line = w
			continue
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	lines = append(lines, line)
	return raw(strings.Join(lines, "\n"+indent))
}

// errWriter keeps the first write error so rendering code stays linear.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	e.err = err
	return n, err
}

// printf writes with format (the printer's own), escaping and bounding
// every plain string argument: text from the cluster never reaches the
// terminal as is.
func (e *errWriter) printf(format string, args ...any) {
	for i, a := range args {
		if s, ok := a.(string); ok {
			args[i] = clean(s)
		}
	}
	_, _ = fmt.Fprintf(e, format, args...)
}

func (e *errWriter) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// Diagnoses renders several full reports, a blank line between them.
func (h Human) Diagnoses(w io.Writer, reports []diagnose.Report) error {
	for i, r := range reports {
		if i > 0 {
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
		}
		if err := h.Diagnosis(w, r); err != nil {
			return err
		}
	}
	return nil
}

// FleetDiagnoses renders the full reports of many clusters, each after a
// line naming its context, and a line for each cluster that could not be
// read.
func (h Human) FleetDiagnoses(w io.Writer, results []fleet.Result) error {
	p := &errWriter{w: w}
	first := true
	for _, r := range results {
		if r.Err != nil {
			p.printf("context %s: %s: %s\n", r.Name, r.Reach, ReachWords(r.Err))
		}
		for _, rep := range r.Reports {
			if !first {
				p.printf("\n")
			}
			first = false
			p.printf("context %s:\n", r.Name)
			if err := h.Diagnosis(w, rep); err != nil {
				p.fail(err)
			}
		}
	}
	return p.err
}

// Summaries renders one line per namespace: explain with no name.
func (h Human) Summaries(w io.Writer, reports []diagnose.Report) error {
	p := &errWriter{w: w}
	if len(reports) == 0 {
		p.printf("no namespace is being deleted\n")
		return p.err
	}
	t := newTable(p, "NAMESPACE", "STATE", "DELETED", "REMAINING", "BLOCKERS", "TOP BLOCKER")
	for _, r := range reports {
		_ = t.Append(h.summaryRow(r)...)
	}
	if err := t.Render(); err != nil {
		p.fail(err)
	}
	return p.err
}

// Fleet renders one line per namespace of many clusters, with its
// context, and one per cluster that could not be read, saying why.
func (h Human) Fleet(w io.Writer, results []fleet.Result) error {
	p := &errWriter{w: w}
	t := newTable(p, "CONTEXT", "NAMESPACE", "STATE", "DELETED", "REMAINING", "BLOCKERS", "TOP BLOCKER")
	rows := 0
	for _, r := range results {
		if r.Err != nil {
			reach := h.paint(color.FgRed, color.Bold)(string(r.Reach))
			_ = t.Append(clean(r.Name), "-", reach, "-", "-", "-", truncate(clean(ReachWords(r.Err)), 60))
			rows++
		}
		for _, rep := range r.Reports {
			_ = t.Append(append([]any{clean(r.Name)}, h.summaryRow(rep)...)...)
			rows++
		}
	}
	if rows == 0 {
		p.printf("no namespace is being deleted in %d cluster(s)\n", len(results))
		return p.err
	}
	if err := t.Render(); err != nil {
		p.fail(err)
	}
	return p.err
}

// ReachWords says in a few words why a cluster could not be read; -o json
// has the whole error.
func ReachWords(err error) string {
	msg := err.Error()
	e := apierror.Classify(err)
	switch {
	case e.Cause == apierror.CauseTLS:
		for _, at := range []string{"x509: ", "tls: "} {
			if i := strings.Index(msg, at); i >= 0 {
				return "TLS: " + msg[i:]
			}
		}
		return "TLS: " + msg
	case e.Kind == apierror.Timeout:
		return "no answer within --request-timeout"
	case e.Cause == apierror.CauseRefused:
		return "connection refused"
	case e.Cause == apierror.CauseUnknownHost:
		return "unknown host"
	}
	return msg
}

// summaryRow is a namespace's line: name, state, age of its deletion,
// what remains and its first blocker.
func (h Human) summaryRow(r diagnose.Report) []any {
	deleted, top := "-", "-"
	if r.Namespace.DeletionTimestamp != nil {
		deleted = h.ago(*r.Namespace.DeletionTimestamp)
	}
	if b := r.Blocking(); len(b) > 0 {
		top = truncate(string(b[0].Kind)+": "+WordsOf(b[0]).Summary, 60)
	}
	state := raw(r.Verdict.State)
	if r.Verdict.State == diagnose.StateStuck {
		state = h.paint(color.FgRed, color.Bold)(string(state))
	}
	return []any{r.Namespace.Name, state, deleted, fmt.Sprint(r.Remaining()), fmt.Sprint(len(r.Blocking())), top}
}

// Version renders the build's version.
func (h Human) Version(w io.Writer, v VersionReport) error {
	ew := &errWriter{w: w}
	ew.printf("ns-doctor %s\ncommit: %s\nbuilt: %s\ngo: %s %s\n", v.Version, v.Commit, v.BuildDate, v.GoVersion, v.Platform)
	if v.Server != nil {
		ew.printf("server: %s\n", Escape(v.Server.Version))
		for _, c := range compat.Changes() {
			mark := "no "
			if v.Server.Has(c.Behaviour) {
				mark = "yes"
			}
			ew.printf("  %s %s (from %s)\n", mark, c.Short, c.Since)
		}
	}
	return ew.err
}

// StatusLine is one namespace's state in a line, for a live display: what
// is left and what holds it.
func StatusLine(r diagnose.Report) string {
	left := "nothing left"
	if n := r.Remaining(); n > 0 {
		var parts []string
		for _, c := range r.Content {
			if c.Count > 0 && len(parts) < 3 {
				name := c.Resource
				if c.Group != "" {
					name += "." + c.Group
				}
				parts = append(parts, fmt.Sprintf("%s %d", name, c.Count))
			}
		}
		left = fmt.Sprintf("%d objects left", n)
		if len(parts) > 0 {
			left += " (" + strings.Join(parts, ", ") + ")"
		}
	}
	line := fmt.Sprintf("%s: %s, %s", r.Namespace.Name, strings.ToLower(string(r.Verdict.State)), left)
	if b := r.Blocking(); len(b) > 0 {
		line += "; " + string(b[0].Kind) + ": " + WordsOf(b[0]).Summary
	}
	return truncate(clean(line), width+40)
}

// Orphans renders the leftovers of namespaces that are gone.
func (h Human) Orphans(w io.Writer, r diagnose.OrphanReport) error {
	p := &errWriter{w: w}
	switch {
	case len(r.Namespaces) == 0 && len(r.Unchecked) > 0:
		p.printf("no leftovers in the types that could be listed; the others are below, unchecked\n")
	case len(r.Namespaces) == 0:
		p.printf("no leftovers: every namespaced object belongs to a namespace that exists\n")
	default:
		total := 0
		for _, f := range r.Namespaces {
			total += f.Objects
		}
		p.printf("%s %d objects of %d namespace(s) that are gone: a forced finalize left them in storage, and a namespace of the same name would bring them back\n\n",
			h.paint(color.FgYellow, color.Bold)("LEFTOVERS"), total, len(r.Namespaces))
		t := newTable(p, "FORMER NAMESPACE", "RESOURCE", "COUNT", "FINALIZERS", "EXAMPLES")
		for _, f := range r.Namespaces {
			for _, c := range f.Content {
				name := c.Resource
				if c.Group != "" {
					name += "." + c.Group
				}
				_ = t.Append(f.Name, name, fmt.Sprint(c.Count), finalizerCounts(c.Finalizers), truncate(listed(c.Examples, ",", "-"), 30))
			}
		}
		if err := t.Render(); err != nil {
			p.fail(err)
		}
		p.printf("\n%s kubectl ns-doctor purge --orphans %s  # one former namespace's leftovers: the plan, then --force\n", h.paint(color.FgCyan)("next:"), r.Namespaces[0].Name)
	}
	if len(r.Unchecked) > 0 {
		p.printf("\n%s\n", h.paint(color.FgYellow, color.Bold)("Not checked (could not be listed)"))
		for _, u := range UncheckedWords(r.Unchecked) {
			p.printf("  - %s\n", wrap(u, width-4, "    "))
		}
	}
	return p.err
}

// listed joins a list for a sentence, or says none when it is empty: no
// sentence shows an empty list.
func listed(list []string, sep, none string) string {
	if len(list) == 0 {
		return none
	}
	return strings.Join(list, sep)
}

// bracketed is a list of names as the namespace's fields show it, its
// first few in brackets; "none" for an empty one.
func bracketed(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return "[" + joinSome(list) + "]"
}

// joinSome joins the first few of list, and says how many more.
func joinSome(list []string) string {
	shown, left := limit(list, maxItems)
	s := strings.Join(shown, ", ")
	if left > 0 {
		s += fmt.Sprintf(", +%d more", left)
	}
	return s
}
