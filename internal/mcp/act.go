package mcp

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

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

// confirmKey names the one question purge_namespace asks.
const confirmKey = "confirm"

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

// moved is a plan that no longer holds: nothing was changed, and the plan
// is spent.
type moved struct{ msg string }

func (m *moved) Error() string { return m.msg }

func movedf(format string, args ...any) error { return &moved{msg: fmt.Sprintf(format, args...)} }

func (s *server) purgeNamespace(ctx context.Context, req *sdk.CallToolRequest, in PurgeInput) (*sdk.CallToolResult, PurgeResult, error) {
	var out PurgeResult
	detail, err := parseDetail(string(in.Detail), DetailNormal)
	if err != nil {
		return nil, out, err
	}
	if in.PlanID == "" {
		return nil, out, errors.New("plan_id is required: plan_purge returns one")
	}
	p, err := s.plans.claim(req.Session, in.PlanID)
	if err != nil {
		return nil, out, err
	}
	spent := false
	defer func() { s.plans.release(req.Session, p, spent) }()
	if p.rescue != nil {
		return nil, out, errors.New("this plan_id is rescue_plan's, not plan_purge's: nothing was changed; rescue_namespace acts on it")
	}
	r, err := s.reader(ctx, p.cluster.Context)
	if err != nil {
		return nil, out, err
	}
	if req.Params.InputResponses == nil {
		if err := s.stillHolds(ctx, r, p); err != nil {
			spent = isMoved(err)
			return nil, out, err
		}
		if s.cfg.Purge == PurgeWithoutConfirmation {
			spent = true
			return s.act(ctx, r, p, "nobody was asked: the server runs with --allow-purge=without-confirmation", detail)
		}
		if !canElicit(req) {
			return nil, out, errors.New("this client cannot ask the person (it offers no MCP elicitation), and purge acts only with their consent: nothing was changed; give them plan_purge's command to run, or run the server with --allow-purge=without-confirmation")
		}
		return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{confirmKey: s.question(p)}, RequestState: s.plans.ask(p)}, out, nil
	}
	// The person's answer: whatever it is, the plan is spent.
	spent = true
	if err := s.plans.answered(p, req.Params.RequestState); err != nil {
		spent = false
		return nil, out, err
	}
	if err := s.confirmed(p, req.Params.InputResponses[confirmKey]); err != nil {
		return nil, out, err
	}
	// Time passed while the person read: look again right before acting.
	if err := s.stillHolds(ctx, r, p); err != nil {
		return nil, out, err
	}
	return s.act(ctx, r, p, "the person confirmed in the client (MCP elicitation), typing the namespace's name", detail)
}

// canElicit tells whether the client can ask its person a question (a
// form: the only kind purge_namespace asks).
func canElicit(req *sdk.CallToolRequest) bool {
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	e := caps.Elicitation
	return e.Form != nil || e.URL == nil
}

// confirmation is what the person is asked about p: printer's words, the
// same purge --force says on a terminal.
func (s *server) confirmation(p *plan) printer.Confirmation {
	return printer.Confirmation{Names: []string{p.target.Namespace}, Context: p.cluster.Context, Cluster: p.cluster.Cluster, Consent: p.asked.Consent()}
}

// question is the elicitation: the confirmation's text, and one field,
// the namespace's name to type.
func (s *server) question(p *plan) *sdk.ElicitParams {
	c := s.confirmation(p)
	question, _ := c.Question()
	return &sdk.ElicitParams{
		Message: c.Text() + " " + question + ".",
		RequestedSchema: &jsonschema.Schema{
			Type: "object",
			Properties: map[string]*jsonschema.Schema{
				"namespace": {Type: "string", Title: question, Description: "the namespace's name, as a person types it at purge --force's confirmation; anything else, declining or cancelling changes nothing"},
			},
			Required: []string{"namespace"},
		},
	}
}

// confirmed checks the person's answer: accepted, with the namespace's
// name typed.
func (s *server) confirmed(p *plan, answer sdk.InputResponse) error {
	_, want := s.confirmation(p).Question()
	return answerOf(answer, "purge", p.target.Namespace, want)
}

// answerOf checks the person's answer to the confirmation of what (purge,
// rescue) on namespace: accepted, with want typed.
func answerOf(answer sdk.InputResponse, what, namespace, want string) error {
	res, ok := answer.(*sdk.ElicitResult)
	switch {
	case !ok || res == nil:
		return errors.New("no answer to the confirmation came back: nothing was changed")
	case res.Action == "decline":
		return fmt.Errorf("the person declined the %s of namespace %q: nothing was changed (do not %s unless they ask again)", what, namespace, what)
	case res.Action != "accept":
		return fmt.Errorf("the person cancelled the confirmation of the %s of namespace %q: nothing was changed", what, namespace)
	}
	if typed, _ := res.Content["namespace"].(string); typed != want {
		return fmt.Errorf("not confirmed: the name typed is not the namespace's, %q; nothing was changed", want)
	}
	return nil
}

func isMoved(err error) bool {
	var m *moved
	return errors.As(err, &m)
}

// stillHolds reads the namespace and plans again, as the plan was made (a
// client-side plan with its escalations): a namespace deleted and created
// again, changed, or whose plan would change something else, is refused.
func (s *server) stillHolds(ctx context.Context, r reader, p *plan) error {
	name := p.target.Namespace
	ns, err := r.in.Namespace(ctx, name)
	switch {
	case apierrors.IsNotFound(err):
		return movedf("namespace %q is gone since the plan: nothing was changed, nothing is left to purge", name)
	case err != nil:
		return s.fail(err, r.Cluster)
	case string(ns.UID) != p.target.UID:
		return movedf("namespace %q was deleted and created again since the plan (its uid changed): nothing was changed; plan again with plan_purge", name)
	case ns.ResourceVersion != p.target.ResourceVersion:
		return movedf("namespace %q changed since the plan (resourceVersion %s, now %s): nothing was changed; plan again with plan_purge", name, p.target.ResourceVersion, ns.ResourceVersion)
	}
	report, err := s.run(ctx, r, name, p.asked, purge.DryRunClient)
	if err != nil {
		return s.purgeError(name, err, r.Cluster)
	}
	if now := wouldChange(report); now.Fingerprint != p.fingerprint {
		return movedf("what the plan would change in namespace %q has moved since (now %s): nothing was changed; plan again with plan_purge", name, now.words)
	}
	return nil
}

// act purges for real, as purge --force does after its confirmation: the
// permission check, then the backup, then the passes.
func (s *server) act(ctx context.Context, r reader, p *plan, consent string, detail Detail) (*sdk.CallToolResult, PurgeResult, error) {
	name := p.target.Namespace
	dir := ""
	if s.cfg.BackupDir != "" {
		// A folder per run: a long-lived server purges many times.
		dir = filepath.Join(s.cfg.BackupDir, name+"-"+s.cfg.Now().UTC().Format("20060102T150405.000Z"))
	}
	ordering, err := s.cfg.Ordering(r.clients)
	if err != nil {
		return nil, PurgeResult{}, err
	}
	pr := &purge.Purger{Clients: r.clients, Inspector: r.in, Now: s.cfg.Now, Opts: purge.Options{
		DryRun: purge.DryRunNone, Escalations: p.asked, BackupDir: dir, Timeout: s.cfg.Timeout, Workers: s.cfg.Workers,
		OrderedDeletion: ordering, Context: r.Context, Cluster: r.Cluster.Cluster,
	}}
	report, err := pr.Run(ctx, name)
	if err != nil && !errors.Is(err, purge.ErrMissingPermissions) && (report == nil || len(report.Changes) == 0) {
		return nil, PurgeResult{}, s.purgeError(name, err, r.Cluster)
	}
	out := PurgeResult{PlanID: p.id, Target: p.target, Consent: consent}
	var doc purgeDoc
	doc, out.Bounded = bound(func() purgeDoc { return purgeDoc{Purge: printer.Purge(report).Current()} }, detail)
	out.Purge = doc.Purge
	res := result(printer.AgentPurge(report, name), out)
	// Refused, or stopped by an error after changes: the document says
	// what was done; the result is an error all the same.
	res.IsError = err != nil
	return res, out, nil
}
