package purge

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// An Escalation is one step beyond the namespace controller's own pass,
// taken only when its flag asks for it. Escalations() is the one list of
// them: purge's flags and the janitor's, the check of their values, the
// permission check, the confirmation, the plan, the report (-o json),
// docs/purge.md's table, the completion of their values and the agents'
// plan_purge all read it. A new escalation is its entry in a file of its
// own, with its action, and a line in escalations below.
type Escalation struct {
	// Flag is the flag, dashes included (diagnose's Flag* constant where a
	// next step names it).
	Flag string
	// Value names the flag's values in help and docs ("PATTERNS", "NAME");
	// empty for a switch.
	Value string
	// Example is a value for the docs and the tests of every entry.
	Example string
	// Help is the flag's help, and its line in docs/purge.md's table.
	Help string
	// Leak is what acting costs, in a sentence: what is left behind or
	// lost. Agents are told it before they plan.
	Leak string
	// Janitor: watch's janitor may be given it.
	Janitor bool
	// Conflicts are the flags it cannot go with.
	Conflicts []string

	// check rejects bad values before anything is read (nil: any).
	check func(values []string) error
	// consent is what the confirmation says it will do, and what it costs.
	consent func(values []string) []string
	// answers tells whether, with these values, it gets past a next step.
	answers func(values []string, a diagnose.Action) bool
	// complete offers values from what the namespace holds (nil: none).
	complete func(obs diagnose.Observation) []Value
	// start is its action in one run.
	start func(values []string) action
	// snapshot: its permissions or its reads need what the namespace
	// holds, so a force run reads it before the first pass.
	snapshot bool
	// changes words the changes it makes (its ChangeKinds), in namespace.
	changes map[ChangeKind]func(c Change, namespace string) string
	// warnings words the warnings only it raises (its WarningKinds).
	warnings map[WarningKind]func(w Warning) string
	// leftovers, when set, undoes what a run killed while it acted left in
	// the cluster (a plan only warns): every run calls it first, before
	// any other read, whether it asks for the escalation or not.
	leftovers func(ctx context.Context, t tidying) error
}

// escalations is the list, in the order the escalations act and are told.
var escalations = []*Escalation{
	&bypassWebhookEscalation,
	&deleteNamespaceEscalation,
	&deleteAPIServiceEscalation,
	&removeFinalizersEscalation,
	&removeAllFinalizersEscalation,
	&forceDeletePodsEscalation,
	&removeNamespaceFinalizersEscalation,
	&finalizeDespiteDiscoveryEscalation,
}

// Escalations is every escalation, in the order they act.
func Escalations() []Escalation {
	out := make([]Escalation, len(escalations))
	for i, e := range escalations {
		out[i] = *e
	}
	return out
}

// LookupEscalation finds an escalation by its flag, with or without its
// dashes.
func LookupEscalation(flag string) (Escalation, bool) {
	flag = "--" + strings.TrimPrefix(flag, "--")
	for _, e := range escalations {
		if e.Flag == flag {
			return *e, true
		}
	}
	return Escalation{}, false
}

// Name is the flag without its dashes, as cobra registers it.
func (e Escalation) Name() string { return strings.TrimPrefix(e.Flag, "--") }

// Switch tells whether the flag takes no value.
func (e Escalation) Switch() bool { return e.Value == "" }

// Usage is the flag as a user types it: --flag or --flag=VALUE.
func (e Escalation) Usage() string {
	if e.Switch() {
		return e.Flag
	}
	return e.Flag + "=" + e.Value
}

// Check rejects bad values before anything is read.
func (e Escalation) Check(values []string) error {
	if e.Switch() && len(values) > 0 {
		return fmt.Errorf("%s takes no value", e.Flag)
	}
	if !e.Switch() && len(values) == 0 {
		return fmt.Errorf("%s needs a value: %s", e.Flag, e.Usage())
	}
	if e.check == nil {
		return nil
	}
	return e.check(values)
}

// Consent is what the confirmation says it will do with these values, one
// line each, and last what it leaks: nobody consents to a cost unsaid.
func (e Escalation) Consent(values []string) []string {
	return append(slices.Clip(e.consent(values)), "  leaks: "+e.Leak)
}

// Answers tells whether, with these values, it gets past next step a.
func (e Escalation) Answers(values []string, a diagnose.Action) bool {
	return e.answers != nil && e.answers(values, a)
}

// Completes tells whether its values are completed from the cluster.
func (e Escalation) Completes() bool { return e.complete != nil }

// Complete offers values from what a namespace holds.
func (e Escalation) Complete(obs diagnose.Observation) []Value {
	if e.complete == nil {
		return nil
	}
	return e.complete(obs)
}

// Value is one value offered for a flag, and what to show beside it.
type Value struct{ Value, Description string }

// ChangeWords words a change an escalation made in namespace, by its
// kind; false for a change no escalation makes.
func ChangeWords(c Change, namespace string) (string, bool) {
	for _, e := range escalations {
		if words, ok := e.changes[c.Kind]; ok {
			return words(c, namespace), true
		}
	}
	return "", false
}

// WarningWords words a warning only an escalation raises, by its kind;
// false for one no escalation raises.
func WarningWords(w Warning) (string, bool) {
	for _, e := range escalations {
		if words, ok := e.warnings[w.Kind]; ok {
			return words(w), true
		}
	}
	return "", false
}

// Asked are the escalations a run is asked for: each flag (dashes
// included) with its values, none for a switch.
type Asked map[string][]string

// Has tells whether the escalation of flag is asked for.
func (a Asked) Has(flag string) bool {
	_, ok := a[flag]
	return ok
}

// Values are the values flag is asked with.
func (a Asked) Values(flag string) []string { return a[flag] }

// Check validates what is asked: known flags, good values, no conflicts.
func (a Asked) Check() error {
	for flag := range a {
		if _, ok := LookupEscalation(flag); !ok {
			return fmt.Errorf("%s is not an escalation of purge", flag)
		}
	}
	for _, e := range escalations {
		values, ok := a[e.Flag]
		if !ok {
			continue
		}
		if err := e.Check(values); err != nil {
			return err
		}
		for _, other := range e.Conflicts {
			if a.Has(other) {
				return fmt.Errorf("%s conflicts with %s: choose one", e.Flag, other)
			}
		}
	}
	return nil
}

// each calls fn with every escalation asked for, in the list's order.
func (a Asked) each(fn func(e *Escalation, values []string)) {
	for _, e := range escalations {
		if values, ok := a[e.Flag]; ok {
			fn(e, values)
		}
	}
}

// Consent is what the confirmation says of every escalation asked for.
func (a Asked) Consent() []string {
	var out []string
	a.each(func(e *Escalation, values []string) { out = append(out, e.Consent(values)...) })
	return out
}

// Actions are the escalations as purge next steps, so that a next step's
// command line repeats them.
func (a Asked) Actions(namespace string) []diagnose.Action {
	var out []diagnose.Action
	a.each(func(e *Escalation, values []string) {
		out = append(out, diagnose.PurgeAction(namespace, e.Flag, strings.Join(values, ",")))
	})
	return out
}

// Gives tells whether the run already does what a purge next step asks.
func (a Asked) Gives(step diagnose.Action) bool {
	if step.Flag == "" {
		return true // the pass alone: this run is one
	}
	gives := false
	a.each(func(e *Escalation, values []string) { gives = gives || e.Answers(values, step) })
	return gives
}

// Used are the escalations a run was asked for, as the report tells them.
func (a Asked) Used() []Used {
	out := []Used{}
	a.each(func(e *Escalation, values []string) {
		out = append(out, Used{Flag: e.Flag, Values: slices.Clone(values), Consent: e.consent(values), Leak: e.Leak})
	})
	return out
}

// Used is one escalation a run was asked for.
type Used struct {
	Flag   string   `json:"flag"`
	Values []string `json:"values,omitempty"`
	// Consent and Leak are what the confirmation said of it: what it
	// does, and what that leaks.
	Consent []string `json:"consent"`
	Leak    string   `json:"leak,omitempty"`
}

// An action is one escalation at work in one run. Besides the permissions
// it needs, it acts at some of the points below, each an interface of its
// own; every write goes through the actor, so no action knows whether the
// run plans, asks the server for dry runs, or acts.
type action interface {
	// needs are the permissions it adds to a force run's check.
	needs(s scope) []access.Permission
}

// resolver reads the cluster before anything is changed: bad input that
// only the cluster shows (a name that does not exist) is a UsageError.
type resolver interface {
	resolve(ctx context.Context, a actor, s scope) error
}

// prechecker checks, before the person is asked to confirm, what the
// escalation's values name across the cluster (not in a namespace): a name
// that does not exist, or that it may not act on, is a UsageError before
// anyone consents to it. resolve checks again, at the run's start.
type prechecker interface {
	precheck(ctx context.Context, a actor) error
}

// beforePasses acts once, before the first pass; undo runs when the run
// ends, whatever ends it.
type beforePasses interface {
	before(ctx context.Context, a actor, s scope) (undo func(), err error)
}

// deleterOption changes how the controller's Delete finishes.
type deleterOption interface {
	configure(d *deletion.NamespacedResourcesDeleter)
}

// afterPass acts on what a pass left; it returns how many changes it made
// (or would).
type afterPass interface {
	afterPass(ctx context.Context, a actor, content *deletion.ContentResult) int
}

// namespaceHeld acts on a finalized namespace its own metadata.finalizers
// hold; it returns how many changes it made (or would).
type namespaceHeld interface {
	namespaceHeld(ctx context.Context, a actor, ns *v1.Namespace) (int, error)
}

// sparer is an action that spares the run some refusals while it acts (a
// webhook it bypasses): a plan, which cannot act first, forgives them.
type sparer interface {
	// spares are the webhook configurations whose refusals a client plan
	// does not predict.
	spares() map[string]bool
	// spare answers a server dry run's refusal as the run, the escalation
	// at work, would meet it: nil when it is spared (it says so through
	// a).
	spare(a actor, err error, what string) error
}

// spares are the webhook configurations the actions spare the run.
func spares(actions []action) map[string]bool {
	out := map[string]bool{}
	for _, act := range actions {
		if s, ok := act.(sparer); ok {
			maps.Copy(out, s.spares())
		}
	}
	return out
}

// spared is the actions' answer to a server dry run's refusal, through a.
func spared(actions []action, a actor) func(err error, what string) error {
	return func(err error, what string) error {
		for _, act := range actions {
			if s, ok := act.(sparer); ok && err != nil {
				err = s.spare(a, err, what)
			}
		}
		return err
	}
}

// tidying is what undoing a killed run's leftovers may use, before the
// run has a writer: the cluster itself, the run's ledger, the mode,
// whether this run asks for the escalation, and the reads the runs of
// several namespaces share.
type tidying struct {
	clients *kube.Clients
	ns      string
	l       *ledger
	// plan: only warn of what was left.
	plan   bool
	asked  bool
	shared *sharedReads
}

// scope is what a run knows before its first change: the namespace, the
// API's discovery, what the namespace holds (when read), and whether it
// is a former namespace (--orphans).
type scope struct {
	ns      *v1.Namespace
	disc    *kube.Discovery
	snap    *deletion.Snapshot
	obs     *diagnose.Observation
	orphans bool
	// revive: over a former namespace, changing its leftovers needs the
	// namespace re-created (up to 1.36; see run.mustRevive).
	revive bool
}

// startActions starts the escalations asked for, in the list's order.
func startActions(asked Asked) []action {
	var out []action
	asked.each(func(e *Escalation, values []string) { out = append(out, e.start(values)) })
	return out
}

// pick is what became of a write, in the words of its kind: applied to the
// cluster, or played in a plan.
func pick[T any](s Sent, applied, played T) T {
	if s.ForReal {
		return applied
	}
	return played
}
