package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/internal/rescue"
)

// Rescue's tools: the plan, read-only, always served; the hold, only
// when the server acts (--allow-purge), with purge_namespace's consent.
const (
	ToolRescuePlan = "rescue_plan"
	ToolRescue     = "rescue_namespace"
)

// RescuePlanInput is rescue_plan's arguments.
type RescuePlanInput struct {
	Namespace string `json:"namespace" jsonschema:"the namespace being deleted (Terminating) to hold and save"`
	Context   string `json:"context,omitempty" jsonschema:"the kubeconfig context to plan in, when the server reads several (--contexts, --all-contexts); empty: the server's one cluster"`
	Detail    Detail `json:"detail,omitempty" jsonschema:"how much of the plan to return, bounded for a context window: brief, normal (the default) or full; what is left out is counted in cut"`
}

// RescueTarget is the namespace a rescue plan is bound to: by uid, so a
// namespace deleted and created again is another one. Not by
// resourceVersion: the namespace controller rewrites its conditions all
// through the window a rescue has, and the plan does not depend on them.
type RescueTarget struct {
	Context   string `json:"context,omitempty"`
	Cluster   string `json:"cluster,omitempty"`
	Namespace string `json:"namespace"`
	UID       string `json:"uid"`
}

// RescuePlanResult is rescue_plan's structured result.
type RescuePlanResult struct {
	PlanID    string       `json:"plan_id" jsonschema:"what rescue_namespace acts on, on this connection only, once, until expires_at"`
	ExpiresAt time.Time    `json:"expires_at"`
	Target    RescueTarget `json:"target" jsonschema:"the namespace the plan is bound to: rescue_namespace refuses if its uid changed"`
	// Fingerprint covers the plan's every word the person confirms.
	Fingerprint string `json:"fingerprint" jsonschema:"sha256 of the plan (the namespace's uid, the hold and whether it is there already, each volume with its claim and reclaim policy, the backup folder): rescue_namespace plans again and refuses if it differs"`
	// Rescue says how to act on the plan with this server.
	Rescue string `json:"rescue"`
	// Command is the same rescue for a person to run.
	Command string      `json:"command" jsonschema:"the kubectl command that does the same rescue, for a person to run (it asks for their confirmation on a terminal)"`
	Plan    rescue.Plan `json:"plan" jsonschema:"what rescue would do: the hold's name and whether an earlier rescue applied it, the PersistentVolumes bound to the namespace's claims (each set to Retain; reclaimPolicyBefore is its policy now), and the folder on the machine running ns-doctor it would save to"`
	Bounded
}

// RescueInput is rescue_namespace's arguments.
type RescueInput struct {
	PlanID string `json:"plan_id" jsonschema:"the plan_id rescue_plan returned on this connection"`
	Detail Detail `json:"detail,omitempty" jsonschema:"how much of the report to return, bounded for a context window: brief, normal (the default) or full; what is left out is counted in cut"`
}

// RescueResult is rescue_namespace's structured result.
type RescueResult struct {
	PlanID  string       `json:"plan_id"`
	Target  RescueTarget `json:"target"`
	Consent string       `json:"consent" jsonschema:"who agreed to act: the person, through the client, or nobody (--allow-purge=without-confirmation)"`
	// Error is why the rescue stopped after its first change, quoted.
	Error  string                 `json:"error,omitempty" jsonschema:"why the rescue stopped after it began changing the cluster (an API server's answer, quoted as data): the report says what was done; rescue_plan then rescue_namespace again continues"`
	Rescue printer.RescueDocument `json:"rescue" jsonschema:"what rescue did: the document kubectl ns-doctor rescue -o json prints; backup.dir is the folder on the machine running ns-doctor with every object saved (Secrets in clear), release and restore the commands a person runs next"`
	Bounded
}

type rescuePlanDoc struct {
	Plan rescue.Plan `json:"plan"`
}

type rescueDoc struct {
	Rescue printer.RescueDocument `json:"rescue"`
}

func (s *server) addRescuePlanTool(srv *sdk.Server) error {
	t := &sdk.Tool{Name: ToolRescuePlan, Annotations: readOnly("Plan a rescue"),
		Description: "What kubectl ns-doctor rescue would do to a namespace being deleted (Terminating), changing nothing: the hold it would apply (a ValidatingAdmissionPolicy and its binding, ns-doctor-rescue-NAME, refusing the namespace controller's and the garbage collector's deletes in the namespace), " +
			"each PersistentVolume bound to the namespace's claims that it would set to reclaim policy Retain (with its policy now), and the folder on the machine running ns-doctor where it would save every object left, Secrets included. " +
			"Its permissions are checked first (SelfSubjectAccessReviews): missing ones, an Active namespace, one not found or a cluster without ValidatingAdmissionPolicy are this tool's error. " +
			"Returns the plan and a plan_id bound to the namespace's uid and to the plan's fingerprint: " + s.howToRescue() +
			" Use it when a namespace is being deleted by mistake: since Kubernetes 1.33 the namespace controller deletes pods first, and everything else once they are gone, so the window is short."}
	return addTool(srv, t, nil, s.rescuePlan)
}

func (s *server) addRescueTool(srv *sdk.Server) error {
	ask := "after the person confirms it in the client (an MCP elicitation with the words rescue asks on a terminal: the namespace, the context and cluster, the hold, each volume set to Retain, the folder); a client that cannot ask is refused."
	if s.cfg.Purge == PurgeWithoutConfirmation {
		ask = "without asking anyone (the server runs with --allow-purge=without-confirmation): ask the person yourself first."
	}
	t := &sdk.Tool{Name: ToolRescue, Annotations: &sdk.ToolAnnotations{Title: "Rescue a namespace", DestructiveHint: new(true), OpenWorldHint: new(false)},
		Description: "Acts for real on a plan rescue_plan made on this connection, as kubectl ns-doctor rescue does: applies the hold (the namespace controller and the garbage collector can no longer delete anything in the namespace; its deletion stays pending), sets the volumes to Retain, and saves every object left, Secrets in clear, to a folder on the machine running ns-doctor, " + ask +
			" It plans again right before acting and refuses if the namespace or the plan moved since: plan again. Returns the rescue report: what is held, the volumes retained, what was saved and where, and the commands a person runs next (release lets the deletion finish; restore brings the namespace back)."}
	return addTool(srv, t, nil, s.rescueNamespace)
}

// howToRescue says how a rescue plan is acted on, with this server.
func (s *server) howToRescue() string {
	switch s.cfg.Purge {
	case PurgeConfirmed:
		return "rescue_namespace with this plan_id acts, once the person confirms in the client; it refuses if the namespace or the plan moved meanwhile"
	case PurgeWithoutConfirmation:
		return "rescue_namespace with this plan_id acts without asking anyone (the server runs with --allow-purge=without-confirmation): ask the person first; it refuses if the namespace or the plan moved meanwhile"
	}
	return "this server does not act (started without --allow-purge): give the person the command to run, at once"
}

// rescueDir is where a rescue saves: a new folder under the server's
// --backup-dir, as purge_namespace's, or under the user cache dir.
func (s *server) rescueDir(name string) (string, error) {
	now := s.cfg.Now().UTC()
	if s.cfg.BackupDir != "" {
		return filepath.Join(s.cfg.BackupDir, name+"-rescue-"+now.Format("20060102T150405.000Z")), nil
	}
	dir, err := backup.DefaultDir(name+"-rescue", now)
	if err != nil {
		return "", err
	}
	return dir, nil
}

// rescueClients are the clients of the cluster named (no inspector: rescue
// reads what it needs itself).
func (s *server) rescueClients(name string) (reader, error) {
	c, err := s.cluster(name)
	if err != nil {
		return reader{}, err
	}
	clients, err := s.clientsOf(c)
	if err != nil {
		return reader{}, err
	}
	return reader{Cluster: c, clients: clients}, nil
}

func (s *server) rescuePlan(ctx context.Context, req *sdk.CallToolRequest, in RescuePlanInput) (*sdk.CallToolResult, RescuePlanResult, error) {
	var out RescuePlanResult
	detail, err := parseDetail(string(in.Detail), DetailNormal)
	if err != nil {
		return nil, out, err
	}
	if err := checkName(in.Namespace); err != nil {
		return nil, out, err
	}
	r, err := s.rescueClients(in.Context)
	if err != nil {
		return nil, out, err
	}
	dir, err := s.rescueDir(in.Namespace)
	if err != nil {
		return nil, out, err
	}
	target, p, err := prepareRescue(ctx, r, in.Namespace, dir)
	if err != nil {
		return nil, out, s.rescueError(in.Namespace, err, r.Cluster)
	}
	fp := rescueFingerprint(target, p)
	kept := s.plans.put(req.Session, &plan{cluster: r.Cluster, rescue: p, rescueTarget: target, fingerprint: fp})
	out = RescuePlanResult{PlanID: kept.id, ExpiresAt: kept.expires.UTC(), Target: target, Fingerprint: fp, Rescue: s.howToRescue(),
		Command: printer.RescueCommandLine(in.Namespace, r.Context)}
	var doc rescuePlanDoc
	doc, out.Bounded = bound(func() rescuePlanDoc { return rescuePlanDoc{Plan: planCopy(p)} }, detail)
	out.Plan = doc.Plan
	return result(printer.AgentRescuePlan(p, in.Namespace), out), out, nil
}

// prepareRescue reads the namespace (its uid) and plans the rescue, as
// rescue does before its confirmation: nothing is changed. Its errors are
// rescue's own; the target is set once the namespace was read.
func prepareRescue(ctx context.Context, r reader, name, dir string) (RescueTarget, *rescue.Plan, error) {
	ns, err := rescue.GetNamespace(ctx, r.clients, name)
	if err != nil {
		return RescueTarget{}, nil, err
	}
	target := RescueTarget{Context: r.Context, Cluster: r.Cluster.Cluster, Namespace: name, UID: string(ns.UID)}
	p, err := rescue.Prepare(ctx, r.clients, name, dir)
	if err != nil {
		return target, nil, err
	}
	if p.Volumes == nil {
		p.Volumes = []rescue.Volume{}
	}
	return target, p, nil
}

// rescueError is the one line of a rescue's bad input, or of an error.
func (s *server) rescueError(name string, err error, c Cluster) error {
	var missing *rescue.MissingError
	switch {
	case errors.Is(err, rescue.ErrNotFound):
		return fmt.Errorf("namespace %q not found: its deletion finished (or it never existed); nothing is left to rescue", name)
	case errors.Is(err, rescue.ErrActive):
		return fmt.Errorf("namespace %q is Active, not being deleted: nothing to rescue; to guard it against deletion, a person runs kubectl ns-doctor protect %s", name, name)
	case errors.Is(err, rescue.ErrNoPolicyAPI):
		return errors.New("the cluster serves no admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (Kubernetes 1.30 or later, or the API disabled): ns-doctor cannot hold a namespace there; nothing was changed")
	case errors.As(err, &missing):
		return errors.New(printer.Cut(printer.Escape(missing.Error()), 1000) + "; nothing was changed (docs/rbac.md#rescue-and-protect)")
	}
	return s.fail(err, c)
}

// planCopy is a copy of p's document, for bounding to cut.
func planCopy(p *rescue.Plan) rescue.Plan {
	out := *p
	out.Volumes = append([]rescue.Volume{}, p.Volumes...)
	return out
}

// rescueFingerprint covers every word of the plan the person confirms: the
// namespace's uid, the hold and whether it is there, each volume with its
// claim and policy, the folder.
func rescueFingerprint(t RescueTarget, p *rescue.Plan) string {
	lines := []string{
		fmt.Sprintf("namespace %q uid=%s", t.Namespace, t.UID),
		fmt.Sprintf("hold %q already=%v", p.Hold, p.AlreadyHeld),
		fmt.Sprintf("backup %q", p.BackupDir),
	}
	for _, v := range p.Volumes {
		lines = append(lines, fmt.Sprintf("volume %q claim=%q before=%q now=%q", v.Name, v.Claim, v.Before, v.Now))
	}
	sort.Strings(lines)
	digest := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return "sha256:" + hex.EncodeToString(digest[:])
}

// errNotARescuePlan: a plan_id of plan_purge given to rescue_namespace.
var errNotARescuePlan = errors.New("this plan_id is plan_purge's, not rescue_plan's: nothing was changed; plan the rescue with rescue_plan")

func (s *server) rescueNamespace(ctx context.Context, req *sdk.CallToolRequest, in RescueInput) (*sdk.CallToolResult, RescueResult, error) {
	var out RescueResult
	detail, err := parseDetail(string(in.Detail), DetailNormal)
	if err != nil {
		return nil, out, err
	}
	if in.PlanID == "" {
		return nil, out, errors.New("plan_id is required: rescue_plan returns one")
	}
	p, err := s.plans.claim(req.Session, in.PlanID)
	switch {
	case errors.Is(err, errUnknownPlan):
		return nil, out, errors.New("unknown plan_id on this connection (a plan is good only on the connection that made it, and once): plan again with rescue_plan")
	case errors.Is(err, errExpiredPlan):
		return nil, out, errors.New("the plan has expired: plan again with rescue_plan")
	case err != nil:
		return nil, out, err
	}
	spent := false
	defer func() { s.plans.release(req.Session, p, spent) }()
	if p.rescue == nil {
		return nil, out, errNotARescuePlan
	}
	r, err := s.rescueClients(p.cluster.Context)
	if err != nil {
		return nil, out, err
	}
	if req.Params.InputResponses == nil {
		fresh, err := s.rescueStillHolds(ctx, r, p)
		if err != nil {
			spent = isMoved(err)
			return nil, out, err
		}
		if s.cfg.Purge == PurgeWithoutConfirmation {
			spent = true
			return s.rescueAct(ctx, r, p, fresh, "nobody was asked: the server runs with --allow-purge=without-confirmation", detail)
		}
		if !canElicit(req) {
			return nil, out, errors.New("this client cannot ask the person (it offers no MCP elicitation), and rescue acts only with their consent: nothing was changed; give them rescue_plan's command to run at once, or run the server with --allow-purge=without-confirmation")
		}
		return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{confirmKey: s.rescueQuestion(p)}, RequestState: s.plans.ask(p)}, out, nil
	}
	// The person's answer: whatever it is, the plan is spent.
	spent = true
	if err := s.plans.answered(p, req.Params.RequestState); err != nil {
		spent = false
		return nil, out, err
	}
	_, want := s.rescueConfirmation(p).Question()
	if err := answerOf(req.Params.InputResponses[confirmKey], "rescue", p.rescueTarget.Namespace, want); err != nil {
		return nil, out, err
	}
	// Time passed while the person read: look again right before acting.
	fresh, err := s.rescueStillHolds(ctx, r, p)
	if err != nil {
		return nil, out, err
	}
	return s.rescueAct(ctx, r, p, fresh, "the person confirmed in the client (MCP elicitation), typing the namespace's name", detail)
}

// rescueConfirmation is what the person is asked about p: printer's words,
// the same rescue says on a terminal.
func (s *server) rescueConfirmation(p *plan) printer.RescueConfirmation {
	return printer.RescueConfirmation{Plan: p.rescue, Context: p.cluster.Context, Cluster: p.cluster.Cluster}
}

// rescueQuestion is the elicitation: the confirmation's text, and one
// field, the namespace's name to type.
func (s *server) rescueQuestion(p *plan) *sdk.ElicitParams {
	c := s.rescueConfirmation(p)
	question, _ := c.Question()
	return &sdk.ElicitParams{
		Message: c.Text() + question + ".",
		RequestedSchema: &jsonschema.Schema{
			Type: "object",
			Properties: map[string]*jsonschema.Schema{
				"namespace": {Type: "string", Title: question, Description: "the namespace's name, as a person types it at rescue's confirmation; anything else, declining or cancelling changes nothing"},
			},
			Required: []string{"namespace"},
		},
	}
}

// rescueStillHolds plans again, as the plan was made (same folder): a
// namespace gone, deleted and created again, or whose plan differs (a
// volume bound or gone, a reclaim policy changed, the hold applied or
// removed by someone else) is refused. It returns the fresh plan, which
// carries the volumes as they are now, to act on.
func (s *server) rescueStillHolds(ctx context.Context, r reader, p *plan) (*rescue.Plan, error) {
	name := p.rescueTarget.Namespace
	target, fresh, err := prepareRescue(ctx, r, name, p.rescue.BackupDir)
	switch {
	case errors.Is(err, rescue.ErrNotFound):
		return nil, movedf("namespace %q is gone since the plan: its deletion finished; nothing was changed, nothing is left to rescue", name)
	case target.UID != "" && target.UID != p.rescueTarget.UID:
		return nil, movedf("namespace %q was deleted and created again since the plan (its uid changed): nothing was changed; plan again with rescue_plan", name)
	case err != nil:
		return nil, s.rescueError(name, err, r.Cluster)
	}
	if fp := rescueFingerprint(target, fresh); fp != p.fingerprint {
		return nil, movedf("the rescue plan of namespace %q has moved since (now: hold there already %v, %d volume(s)): nothing was changed; plan again with rescue_plan and show the person the new plan", name, fresh.AlreadyHeld, len(fresh.Volumes))
	}
	return fresh, nil
}

// rescueAct rescues for real, as rescue does after its confirmation.
func (s *server) rescueAct(ctx context.Context, r reader, p *plan, fresh *rescue.Plan, consent string, detail Detail) (*sdk.CallToolResult, RescueResult, error) {
	name := p.rescueTarget.Namespace
	report, err := rescue.Run(ctx, r.clients, fresh)
	if err != nil && report == nil {
		return nil, RescueResult{}, s.rescueError(name, err, r.Cluster)
	}
	out := RescueResult{PlanID: p.id, Target: p.rescueTarget, Consent: consent}
	if err != nil {
		out.Error = s.rescueError(name, err, r.Cluster).Error()
	}
	if report.Volumes == nil {
		report.Volumes = []rescue.Volume{}
	}
	var doc rescueDoc
	doc, out.Bounded = bound(func() rescueDoc { return rescueDoc{Rescue: printer.RescueDoc(reportCopy(report))} }, detail)
	out.Rescue = doc.Rescue
	res := result(printer.AgentRescue(report, name, err != nil), out)
	res.IsError = err != nil
	return res, out, nil
}

// reportCopy is a deep copy of r's document, for bounding to cut.
func reportCopy(r *rescue.Report) *rescue.Report {
	raw, err := json.Marshal(r)
	if err != nil {
		return r
	}
	var out rescue.Report
	if err := json.Unmarshal(raw, &out); err != nil {
		return r
	}
	return &out
}
