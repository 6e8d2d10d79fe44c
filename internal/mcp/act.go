package mcp

import (
	"context"
	"errors"
	"path/filepath"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/consent"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// PurgeInput is purge_namespace's arguments.
type PurgeInput struct {
	PlanID string `json:"plan_id" jsonschema:"the plan_id plan_purge returned on this connection"`
	Detail Detail `json:"detail,omitempty" jsonschema:"how much of the purge document to return, bounded for a context window: brief, normal (the default) or full; what is left out is counted in cut"`
}

// PurgeResult is purge_namespace's structured result.
type PurgeResult struct {
	PlanID string `json:"plan_id"`
	Target Target `json:"target"`
	// Consent says who agreed to act.
	Consent string                `json:"consent" jsonschema:"who agreed to act: the person, through the client, or nobody (--allow-purge=without-confirmation)"`
	Purge   printer.PurgeDocument `json:"purge" jsonschema:"what purge did: the document kubectl ns-doctor purge -o json prints; purge.backupDir is the folder on the machine running ns-doctor where everything deleted or changed was saved first (kubectl apply -f restores it)"`
	Bounded
}

type purgeDoc struct {
	Purge printer.PurgeDocument `json:"purge"`
}

func (s *server) addPurgeTool(srv *sdk.Server) error {
	ask := "after the person confirms it in the client (an MCP elicitation, with the words purge --force asks on a terminal: the namespace, the context and cluster, each escalation and what it costs); a client that cannot ask is refused."
	if s.cfg.Purge == PurgeWithoutConfirmation {
		ask = "without asking anyone (the server runs with --allow-purge=without-confirmation): ask the person yourself first."
	}
	t := &sdk.Tool{Name: ToolPurge, Annotations: &sdk.ToolAnnotations{Title: "Purge a namespace", DestructiveHint: new(true), OpenWorldHint: new(false)},
		Description: "Acts for real on a plan plan_purge made on this connection: runs the namespace controller's deletion pass with the plan's escalations until the namespace is gone, as kubectl ns-doctor purge --force does (its permissions checked first, everything it deletes or changes saved first to a backup folder), " + ask +
			" It reads the namespace and plans again right before acting, and refuses if the namespace or what the plan would change moved since: plan again. Returns the purge document with the backup folder."}
	return addTool(srv, t, nil, s.purgeNamespace)
}

var purgeKind = planKind{plan: ToolPlan, act: ToolPurge, change: "purge"}

func (s *server) purgeNamespace(ctx context.Context, req *sdk.CallToolRequest, in PurgeInput) (*sdk.CallToolResult, PurgeResult, error) {
	return actOn[PurgeResult](ctx, s, req, purgeKind, in.PlanID, in.Detail)
}

// purgePlan is plan_purge's plan: the namespace as it was read (by uid
// and resourceVersion), the escalations asked, and what a client-side plan
// of them would change (its fingerprint is the plan's).
type purgePlan struct {
	r      reader
	target Target
	asked  purge.Asked
	would  WouldChange
	report *purge.Report
}

func (p *purgePlan) kind() planKind    { return purgeKind }
func (p *purgePlan) namespace() string { return p.target.Namespace }
func (p *purgePlan) doc() any          { return planChangesOf(p.report) }
func (p *purgePlan) now() string       { return p.would.words }

// confirmation is printer's, the words purge --force says on a terminal.
func (p *purgePlan) confirmation(c Cluster) consent.Request {
	return printer.PurgeConfirmation{Names: []string{p.target.Namespace}, Context: c.Context, Cluster: c.Cluster, Consent: p.asked.Consent()}.Request()
}

// again reads the namespace and plans again, as the plan was made (a
// client-side plan with its escalations): a namespace deleted and
// created again, or changed, is refused here; one whose plan would change
// something else, by its fingerprint.
func (p *purgePlan) again(ctx context.Context, s *server) (planned, error) {
	name := p.target.Namespace
	r, err := s.reader(ctx, p.target.Context)
	if err != nil {
		return nil, err
	}
	ns, err := r.in.Namespace(ctx, name)
	switch {
	case apierrors.IsNotFound(err):
		return nil, movedf("namespace %q is gone since the plan: nothing was changed, nothing is left to purge", name)
	case err != nil:
		return nil, s.fail(err, r.Cluster)
	case string(ns.UID) != p.target.UID:
		return nil, movedf("namespace %q was deleted and created again since the plan (its uid changed): nothing was changed; plan again with plan_purge", name)
	case ns.ResourceVersion != p.target.ResourceVersion:
		return nil, movedf("namespace %q changed since the plan (resourceVersion %s, now %s): nothing was changed; plan again with plan_purge", name, p.target.ResourceVersion, ns.ResourceVersion)
	}
	report, err := s.run(ctx, r, name, p.asked, purge.DryRunClient)
	if err != nil {
		return nil, s.purgeError(name, err, r.Cluster)
	}
	return &purgePlan{r: r, target: targetOf(r.Cluster, ns), asked: p.asked, would: wouldChange(report), report: report}, nil
}

// act purges for real, as purge --force does after its confirmation: the
// access check, then the backup, then the passes.
func (p *purgePlan) act(ctx context.Context, s *server, id, who string, detail Detail) (*sdk.CallToolResult, any, error) {
	name, r := p.target.Namespace, p.r
	dir := ""
	if s.cfg.BackupDir != "" {
		// A folder per run: a long-lived server purges many times.
		dir = filepath.Join(s.cfg.BackupDir, name+"-"+s.cfg.Now().UTC().Format("20060102T150405.000Z"))
	}
	ordering, err := s.cfg.Ordering(ctx, r.clients)
	if err != nil {
		return nil, nil, err
	}
	pr := &purge.Purger{Clients: r.clients, Inspector: r.in, Now: s.cfg.Now, Opts: purge.Options{
		DryRun: purge.DryRunNone, Escalations: p.asked, BackupDir: dir, Timeout: s.cfg.Timeout, Workers: s.cfg.Workers,
		OrderedDeletion: ordering, Context: r.Context, Cluster: r.Cluster.Cluster,
	}}
	report, err := pr.Run(ctx, name)
	if err != nil && !errors.Is(err, access.ErrMissing) && (report == nil || len(report.Changes) == 0) {
		return nil, nil, s.purgeError(name, err, r.Cluster)
	}
	out := PurgeResult{PlanID: id, Target: p.target, Consent: who}
	var doc purgeDoc
	doc, out.Bounded = bound(func() purgeDoc { return purgeDoc{Purge: printer.Purge(report).Current()} }, detail)
	out.Purge = doc.Purge
	res := result(printer.AgentPurge(report, name), out)
	// Refused, or stopped by an error after changes: the document says
	// what was done; the result is an error all the same.
	res.IsError = err != nil
	return res, out, nil
}
