package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/consent"
	"github.com/ns-doctor/ns-doctor/internal/kube"
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
	Fingerprint string `json:"fingerprint" jsonschema:"sha256 of the plan's document (the target with the namespace's uid, the plan: the hold and whether it is there already, each volume with its claim and reclaim policy, the backup folder; and the permissions checked): rescue_namespace plans again and refuses if it differs"`
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
	work, err := prepareRescue(ctx, r, in.Namespace, dir, rescue.Prepare)
	if err != nil {
		return nil, out, s.rescueError(in.Namespace, err, r.Cluster)
	}
	kept, err := s.keep(req.Session, r.Cluster, work)
	if err != nil {
		return nil, out, err
	}
	out = RescuePlanResult{PlanID: kept.ID, ExpiresAt: kept.expires.UTC(), Target: work.target, Fingerprint: kept.Fingerprint, Rescue: s.howToRescue(),
		Command: printer.RescueCommandLine(in.Namespace, r.Context)}
	var doc rescuePlanDoc
	doc, out.Bounded = bound(func() rescuePlanDoc { return rescuePlanDoc{Plan: planCopy(work.plan)} }, detail)
	out.Plan = doc.Plan
	return result(printer.AgentRescuePlan(work.plan, in.Namespace), out), out, nil
}

// rescuePlan is rescue_plan's plan: the namespace it is bound to (by uid)
// and what rescue would do, with the permissions it checked.
type rescuePlan struct {
	r      reader
	target RescueTarget
	plan   *rescue.Plan
}

// rescuePlanDocument is a rescue plan's document, which its fingerprint
// hashes: the target, the plan as rescue_plan returns it, and the
// permissions its check asked about (a plan that needs more has moved).
type rescuePlanDocument struct {
	Target RescueTarget        `json:"target"`
	Plan   rescue.Plan         `json:"plan"`
	Needs  []access.Permission `json:"needs"`
}

var rescueKind = planKind{plan: ToolRescuePlan, act: ToolRescue, change: "rescue"}

func (p *rescuePlan) kind() planKind    { return rescueKind }
func (p *rescuePlan) namespace() string { return p.target.Namespace }
func (p *rescuePlan) doc() any {
	return rescuePlanDocument{Target: p.target, Plan: *p.plan, Needs: p.plan.Needs}
}
func (p *rescuePlan) now() string {
	return fmt.Sprintf("hold there already %v, %d volume(s)", p.plan.AlreadyHeld, len(p.plan.Volumes))
}

// confirmation is printer's, the words rescue says on a terminal.
func (p *rescuePlan) confirmation(c Cluster) consent.Request {
	return printer.RescueConfirmation{Plan: p.plan, Context: c.Context, Cluster: c.Cluster}.Request()
}

// again plans the rescue again as it was made (same folder), without
// asking for its permissions again (rescue.Replan): inside the window
// pods leave, every round trip counts. A namespace gone, or deleted and
// created again, is refused here; a plan that differs (a volume bound or
// gone, a reclaim policy changed, the hold applied or removed by someone
// else, a type more to save), by its fingerprint.
func (p *rescuePlan) again(ctx context.Context, s *server) (planned, error) {
	name := p.target.Namespace
	r, err := s.rescueClients(p.target.Context)
	if err != nil {
		return nil, err
	}
	fresh, err := prepareRescue(ctx, r, name, p.plan.BackupDir, rescue.Replan)
	switch {
	case errors.Is(err, rescue.ErrNotFound):
		return nil, movedf("namespace %q is gone since the plan: its deletion finished; nothing was changed, nothing is left to rescue", name)
	case fresh != nil && fresh.target.UID != "" && fresh.target.UID != p.target.UID:
		return nil, movedf("namespace %q was deleted and created again since the plan (its uid changed): nothing was changed; plan again with rescue_plan", name)
	case err != nil:
		return nil, s.rescueError(name, err, r.Cluster)
	}
	return fresh, nil
}

// prepareRescue reads the namespace (its uid) and plans the rescue with
// prepare (rescue.Prepare, or Replan): nothing is changed. Its errors are
// rescue's own; the target is set once the namespace was read.
func prepareRescue(ctx context.Context, r reader, name, dir string, prepare func(context.Context, *kube.Clients, string, string) (*rescue.Plan, error)) (*rescuePlan, error) {
	ns, err := rescue.GetNamespace(ctx, r.clients, name)
	if err != nil {
		return nil, err
	}
	work := &rescuePlan{r: r, target: RescueTarget{Context: r.Context, Cluster: r.Cluster.Cluster, Namespace: name, UID: string(ns.UID)}}
	if work.plan, err = prepare(ctx, r.clients, name, dir); err != nil {
		return work, err
	}
	if work.plan.Volumes == nil {
		work.plan.Volumes = []rescue.Volume{}
	}
	return work, nil
}

// rescueError is the one line of a rescue's bad input, or of an error.
func (s *server) rescueError(name string, err error, c Cluster) error {
	var missing *access.MissingError
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

func (s *server) rescueNamespace(ctx context.Context, req *sdk.CallToolRequest, in RescueInput) (*sdk.CallToolResult, RescueResult, error) {
	return actOn[RescueResult](ctx, s, req, rescueKind, in.PlanID, in.Detail)
}

// act rescues for real, as rescue does after its confirmation, on the
// fresh plan (the volumes as they are now).
func (p *rescuePlan) act(ctx context.Context, s *server, id, who string, detail Detail) (*sdk.CallToolResult, any, error) {
	name, r := p.target.Namespace, p.r
	report, err := rescue.Run(ctx, r.clients, p.plan)
	if err != nil && report == nil {
		return nil, nil, s.rescueError(name, err, r.Cluster)
	}
	out := RescueResult{PlanID: id, Target: p.target, Consent: who}
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
