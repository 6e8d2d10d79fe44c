package mcp

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/ns-doctor/ns-doctor/internal/consent"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// PlanInput is plan_purge's arguments.
type PlanInput struct {
	Namespace string `json:"namespace" jsonschema:"the terminating namespace to plan the purge of"`
	DryRun    string `json:"dry_run,omitempty" jsonschema:"client (the default: the controller's pass played over what the namespace holds, nothing sent) or server (every request sent as a dry run: admission webhooks and RBAC answer, nothing is persisted)"`
	// Escalations' schema is purge's registry (escalationsSchema).
	Escalations map[string]any `json:"escalations,omitempty"`
	Context     string         `json:"context,omitempty" jsonschema:"the kubeconfig context to plan in, when the server reads several (--contexts, --all-contexts); empty: the server's one cluster"`
	Detail      Detail         `json:"detail,omitempty" jsonschema:"how much of the plan to return, bounded for a context window: brief, normal (the default) or full; what is left out is counted in cut"`
}

// Target is the namespace a plan is bound to, as it was read.
type Target struct {
	Context         string `json:"context,omitempty"`
	Cluster         string `json:"cluster,omitempty"`
	Namespace       string `json:"namespace"`
	UID             string `json:"uid"`
	ResourceVersion string `json:"resource_version"`
}

// WouldChange counts what a plan would change (a client-side plan, the
// same that purge_namespace plays again before acting); its fingerprint
// covers each request, each row of every escalation (purge.Shapes), the
// changes and the finalize call, so that any change to them makes the plan
// stale.
type WouldChange struct {
	Requests    int           `json:"requests" jsonschema:"requests of the controller's passes and of the escalations"`
	Objects     int           `json:"objects" jsonschema:"objects those requests reach"`
	Escalations []purge.Count `json:"escalations" jsonschema:"per kind of row the escalations report (the kinds of plan.rows): how many objects it would change (rows), what they touch beyond themselves (units: the finalizers of strips) and that in words"`
	Finalize    bool          `json:"finalize" jsonschema:"whether the namespace would be finalized (gone)"`
	Fingerprint string        `json:"fingerprint" jsonschema:"sha256 of what the plan would change: each request, each row, each change and the finalize call (the plan's document); purge_namespace plans again and refuses if it differs"`
	// words are the counts in one line, for the error that says a plan
	// moved.
	words string
}

// PlanResult is plan_purge's structured result.
type PlanResult struct {
	PlanID      string      `json:"plan_id" jsonschema:"what purge_namespace acts on, on this connection only, once, until expires_at"`
	ExpiresAt   time.Time   `json:"expires_at"`
	Target      Target      `json:"target" jsonschema:"the namespace the plan is bound to: purge_namespace refuses if its uid or resourceVersion changed"`
	WouldChange WouldChange `json:"would_change"`
	// Purge says how to act on the plan with this server.
	Purge string `json:"purge"`
	// Command is the same purge for a person to run.
	Command string                `json:"command" jsonschema:"the kubectl command that does the same purge, for a person to run (it asks for their confirmation on a terminal)"`
	Plan    printer.PurgeDocument `json:"plan" jsonschema:"the purge plan: the document kubectl ns-doctor purge -o json prints; plan.escalations says what each escalation asked does, and what it leaks"`
	Bounded
}

// planDoc is a plan document where bounding finds it (its cuts' paths).
type planDoc struct {
	Plan printer.PurgeDocument `json:"plan"`
}

func (s *server) addPlanTool(srv *sdk.Server) error {
	t := &sdk.Tool{Name: ToolPlan, Annotations: readOnly("Plan a purge"), Description: planDescription()}
	return addTool(srv, t, func(in *jsonschema.Schema) {
		in.Properties["escalations"] = escalationsSchema()
		in.Properties["dry_run"].Enum = []any{"client", "server"}
	}, s.plan)
}

// planDescription is plan_purge's description: what it does, and each
// escalation of purge's registry with what it leaks.
func planDescription() string {
	var b strings.Builder
	b.WriteString("What kubectl ns-doctor purge would do to a terminating namespace, changing nothing: the namespace controller's own deletion pass played over what the namespace holds (or sent as server dry runs), with the escalations named. " +
		"Returns the purge plan, what it would change (counts and a fingerprint) and a plan_id bound to the namespace's uid and resourceVersion and to that fingerprint: purge_namespace acts on it, on this connection, and refuses if anything moved (plan again). " +
		"Escalations (each only when named in escalations):")
	for _, e := range purge.Escalations() {
		fmt.Fprintf(&b, "\n- %s: %s", e.Name(), escalationWords(e))
	}
	return b.String()
}

func (s *server) plan(ctx context.Context, req *sdk.CallToolRequest, in PlanInput) (*sdk.CallToolResult, PlanResult, error) {
	var out PlanResult
	detail, err := parseDetail(string(in.Detail), DetailNormal)
	if err != nil {
		return nil, out, err
	}
	mode := purge.DryRunClient
	switch in.DryRun {
	case "", "client":
	case "server":
		mode = purge.DryRunServer
	default:
		return nil, out, fmt.Errorf("invalid dry_run %q: use client or server (purge_namespace acts)", printer.Cut(printer.Escape(in.DryRun), 100))
	}
	if err := checkPurgeName(in.Namespace); err != nil {
		return nil, out, err
	}
	asked, err := askedOf(in.Escalations)
	if err != nil {
		return nil, out, err
	}
	r, err := s.reader(ctx, in.Context)
	if err != nil {
		return nil, out, err
	}
	target, would, report, client, err := s.planOnce(ctx, r, in.Namespace, asked, mode)
	if err != nil {
		return nil, out, err
	}
	p, err := s.keep(req.Session, r.Cluster, &purgePlan{r: r, target: target, asked: asked, would: would, report: client})
	if err != nil {
		return nil, out, err
	}
	out = PlanResult{PlanID: p.ID, ExpiresAt: p.expires.UTC(), Target: target, WouldChange: would, Purge: s.howToAct(),
		Command: printer.PurgeCommandLine(in.Namespace, r.Context, asked.Actions(in.Namespace))}
	var doc planDoc
	doc, out.Bounded = bound(func() planDoc { return planDoc{Plan: printer.Purge(report).Current()} }, detail)
	out.Plan = doc.Plan
	return result(printer.AgentPlan(report, in.Namespace), out), out, nil
}

// planOnce reads the namespace and plans: the report in mode, and what a
// client-side plan would change (the same plan purge_namespace plays again
// before acting: its fingerprint), with that plan's report.
func (s *server) planOnce(ctx context.Context, r reader, name string, asked purge.Asked, mode purge.DryRun) (Target, WouldChange, *purge.Report, *purge.Report, error) {
	ns, err := r.in.Namespace(ctx, name)
	if err != nil {
		return Target{}, WouldChange{}, nil, nil, s.purgeError(name, err, r.Cluster)
	}
	target := targetOf(r.Cluster, ns)
	report, err := s.run(ctx, r, name, asked, mode)
	if err != nil {
		return target, WouldChange{}, nil, nil, s.purgeError(name, err, r.Cluster)
	}
	client := report
	if mode != purge.DryRunClient {
		if client, err = s.run(ctx, r, name, asked, purge.DryRunClient); err != nil {
			return target, WouldChange{}, nil, nil, s.purgeError(name, err, r.Cluster)
		}
	}
	return target, wouldChange(client), report, client, nil
}

func targetOf(c Cluster, ns *v1.Namespace) Target {
	return Target{Context: c.Context, Cluster: c.Cluster, Namespace: ns.Name, UID: string(ns.UID), ResourceVersion: ns.ResourceVersion}
}

// run runs purge on one namespace in mode.
func (s *server) run(ctx context.Context, r reader, name string, asked purge.Asked, mode purge.DryRun) (*purge.Report, error) {
	ordering, err := s.cfg.Ordering(ctx, r.clients)
	if err != nil {
		return nil, err
	}
	p := &purge.Purger{Clients: r.clients, Inspector: r.in, Opts: purge.Options{
		DryRun: mode, Escalations: asked, Workers: s.cfg.Workers, OrderedDeletion: ordering,
		Context: r.Context, Cluster: r.Cluster.Cluster,
	}}
	return p.Run(ctx, name)
}

// howToAct says how a plan is acted on, with this server.
func (s *server) howToAct() string {
	switch s.cfg.Purge {
	case PurgeConfirmed:
		return "purge_namespace with this plan_id acts, once the person confirms in the client (the same confirmation purge --force asks on a terminal); it refuses if the namespace or what the plan would change moved meanwhile"
	case PurgeWithoutConfirmation:
		return "purge_namespace with this plan_id acts without asking anyone (the server runs with --allow-purge=without-confirmation): ask the person first; it refuses if the namespace or what the plan would change moved meanwhile"
	}
	return "this server does not act (started without --allow-purge): give the person the command to run"
}

// checkPurgeName refuses what purge refuses by name: invalid names and the
// system namespaces.
func checkPurgeName(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if purge.IsSystemNamespace(name) {
		return fmt.Errorf("refusing to purge the system namespace %q (only kubectl ns-doctor purge --allow-system-namespace does, by hand)", name)
	}
	return nil
}

// purgeError is the one line of a purge run's error.
func (s *server) purgeError(name string, err error, c Cluster) error {
	var usage *purge.UsageError
	switch {
	case errors.As(err, &usage):
		return errors.New(printer.Cut(printer.Escape(usage.Error()), 1000))
	case errors.Is(err, purge.ErrNotFound) || apierrors.IsNotFound(err):
		return fmt.Errorf("namespace %q not found (it may already be deleted)", name)
	case errors.Is(err, purge.ErrActive):
		return fmt.Errorf("namespace %q is Active: purge finishes deletions; name the escalation delete-namespace to delete it first", name)
	}
	return s.fail(err, c)
}

// askedOf reads the escalations argument: each by its flag's name, a
// switch with true, the others with their values; checked by purge's
// registry (Asked.Check), so a bad one is one line.
func askedOf(in map[string]any) (purge.Asked, error) {
	asked := purge.Asked{}
	names := make([]string, 0, len(in))
	for name := range in {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		e, ok := purge.LookupEscalation(name)
		if !ok {
			return nil, fmt.Errorf("%q is not an escalation of purge: use one of %s", printer.Cut(printer.Escape(name), 100), escalationNames())
		}
		if e.Switch() {
			on, ok := in[name].(bool)
			if !ok {
				return nil, fmt.Errorf("escalation %s is a switch: give true to ask for it", e.Name())
			}
			if on {
				asked[e.Flag] = nil
			}
			continue
		}
		values, ok := stringsOf(in[name])
		if !ok || len(values) == 0 {
			return nil, fmt.Errorf("escalation %s takes its values as a list of strings, e.g. [%q]", e.Name(), e.Example)
		}
		asked[e.Flag] = values
	}
	if err := asked.Check(); err != nil {
		return nil, errors.New(printer.Cut(printer.Escape(err.Error()), 1000))
	}
	return asked, nil
}

func stringsOf(v any) ([]string, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, x := range list {
		s, ok := x.(string)
		if !ok || s == "" {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func escalationNames() string {
	var names []string
	for _, e := range purge.Escalations() {
		names = append(names, e.Name())
	}
	return strings.Join(names, ", ")
}

// Of is the count of one kind of row.
func (w WouldChange) Of(kind purge.RowKind) purge.Count {
	for _, c := range w.Escalations {
		if c.Kind == kind {
			return c
		}
	}
	return purge.Count{Kind: kind}
}

// wouldChange counts what a plan would change, and fingerprints it: the
// fingerprint of its document (planChanges), as the plan's.
func wouldChange(r *purge.Report) WouldChange {
	sum := r.Summary()
	w := WouldChange{Requests: sum.Requests, Objects: sum.Objects, Escalations: sum.Counts, Finalize: r.Finalize.Would, words: sum.Words()}
	// A report always marshals; were it not to, keep, which fingerprints
	// the same document, would say so.
	w.Fingerprint, _ = consent.Fingerprint(planChangesOf(r))
	return w
}

// planChanges is what a purge plan would change, the document its
// fingerprint hashes (consent.Fingerprint: every list as a set, for the
// requests of one pass go out at once, in any order): each request, each
// row of every escalation (purge.Shapes), each change, and the finalize
// call. What moves by itself between a plan and its act has no place in
// it: a row's Extra is said by its shape's Fingerprint words, which leave
// out a pod's terminating time, and the finalize call by whether it
// would, and the tokens it removes and keeps, not the controller's
// estimate.
type planChanges struct {
	Requests []purge.Step   `json:"requests"`
	Rows     []planRow      `json:"rows"`
	Changes  []purge.Change `json:"changes"`
	Finalize struct {
		Would  bool     `json:"would"`
		Remove []string `json:"remove"`
		Kept   []string `json:"kept"`
	} `json:"finalize"`
}

// planRow is a row of a plan's document: the row, its Extra as its shape
// says it in a fingerprint.
type planRow struct {
	purge.Row
	Touches string `json:"touches"`
}

func planChangesOf(r *purge.Report) planChanges {
	d := planChanges{Requests: r.Steps, Changes: r.Changes, Rows: []planRow{}}
	for _, row := range r.Rows {
		if sh, ok := purge.ShapeOf(row.Kind); ok {
			touches := sh.Fingerprint(row)
			row.Extra = nil
			d.Rows = append(d.Rows, planRow{Row: row, Touches: touches})
		}
	}
	d.Finalize.Would, d.Finalize.Remove, d.Finalize.Kept = r.Finalize.Would, r.Finalize.Remove, r.Finalize.Kept
	return d
}
