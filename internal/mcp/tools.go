package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/fleet"
	"github.com/ns-doctor/ns-doctor/internal/inspect"
	"github.com/ns-doctor/ns-doctor/internal/kube"
	"github.com/ns-doctor/ns-doctor/internal/printer"
)

// Tool names.
const (
	ToolListStuck = "list_stuck_namespaces"
	ToolExplain   = "explain_namespace"
	ToolOrphans   = "list_orphans"
	ToolPlan      = "plan_purge"
	ToolPurge     = "purge_namespace"
)

// ListInput is list_stuck_namespaces' arguments.
type ListInput struct {
	Selector string `json:"selector,omitempty" jsonschema:"a label selector, as kubectl's -l: only the terminating namespaces with these labels"`
	Context  string `json:"context,omitempty" jsonschema:"the kubeconfig context to read; empty: every cluster the server reads"`
	Detail   Detail `json:"detail,omitempty" jsonschema:"how much of each namespace's diagnosis to return, bounded for a context window: brief (the default here), normal or full; what is left out is counted in cut"`
}

// ExplainInput is explain_namespace's arguments.
type ExplainInput struct {
	Namespace string `json:"namespace" jsonschema:"the namespace's name"`
	IfDeleted bool   `json:"if_deleted,omitempty" jsonschema:"for an Active namespace: what would block its deletion if it were deleted now"`
	Grace     string `json:"grace,omitempty" jsonschema:"how long a deletion step may take before it is called stuck, as a duration (default: the server's --grace, 30s; 0s reports at once)"`
	Context   string `json:"context,omitempty" jsonschema:"the kubeconfig context to read, when the server reads several (--contexts, --all-contexts); empty: the server's one cluster"`
	Detail    Detail `json:"detail,omitempty" jsonschema:"how much of the diagnosis to return, bounded for a context window: brief, normal (the default: what the human view shows) or full; what is left out is counted in cut"`
}

// OrphansInput is list_orphans' arguments.
type OrphansInput struct {
	Namespace string `json:"namespace,omitempty" jsonschema:"a former namespace (one that no longer exists): only its leftovers"`
	Context   string `json:"context,omitempty" jsonschema:"the kubeconfig context to read, when the server reads several (--contexts, --all-contexts); empty: the server's one cluster"`
	Detail    Detail `json:"detail,omitempty" jsonschema:"how much of the document to return, bounded for a context window: brief, normal (the default) or full; what is left out is counted in cut"`
}

// DiagnosisResult is explain_namespace's structured result: explain -o
// json's NamespaceDiagnosis, bounded.
type DiagnosisResult struct {
	printer.DiagnosisDocument
	Bounded
}

// DiagnosisListResult is list_stuck_namespaces': explain -o json's
// NamespaceDiagnosisList, bounded.
type DiagnosisListResult struct {
	printer.DiagnosisListDocument
	Bounded
}

// OrphansResult is list_orphans': explain --orphans -o json's
// OrphanedContent, bounded.
type OrphansResult struct {
	printer.OrphansDocument
	Bounded
}

// readOnly are the annotations of a tool that changes nothing.
func readOnly(title string) *sdk.ToolAnnotations {
	return &sdk.ToolAnnotations{Title: title, ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)}
}

// addTool registers a typed tool, its schemas derived from In and Out.
func addTool[In, Out any](srv *sdk.Server, t *sdk.Tool, patch func(*jsonschema.Schema), h sdk.ToolHandlerFor[In, Out]) error {
	var err error
	if t.InputSchema, err = schemaFor[In](patch); err != nil {
		return err
	}
	if t.OutputSchema, err = schemaFor[Out](nil); err != nil {
		return err
	}
	sdk.AddTool(srv, t, recovering(t.Name, h))
	return nil
}

// recovering turns a bug's panic in a tool into that tool's error: the
// server, and the agent's other calls, go on.
func recovering[In, Out any](name string, h sdk.ToolHandlerFor[In, Out]) sdk.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *sdk.CallToolRequest, in In) (res *sdk.CallToolResult, out Out, err error) {
		defer func() {
			if r := recover(); r != nil {
				res, err = nil, fmt.Errorf("internal error in %s: %v (please report it with what you asked)", name, printer.Clip(fmt.Sprint(r), 300))
			}
		}()
		return h(ctx, req, in)
	}
}

func (s *server) addTools(srv *sdk.Server) error {
	err := errors.Join(
		addTool(srv, &sdk.Tool{Name: ToolListStuck, Annotations: readOnly("List stuck namespaces"),
			Description: "Every namespace in Terminating (or those a label selector chooses), each diagnosed: its verdict, blockers and next steps (explain -o json's NamespaceDiagnosisList; with several clusters, one list with a row per cluster read). Changes nothing."},
			nil, s.listStuck),
		addTool(srv, &sdk.Tool{Name: ToolExplain, Annotations: readOnly("Explain a namespace"),
			Description: "Why one namespace is stuck in Terminating, to the letter of the Kubernetes namespace controller: its conditions beside ns-doctor's evaluation, what remains per resource type, each blocker with its evidence and next steps (typed actions), who holds it (finalizer owners, holders' status, Warning events). The document explain -o json prints. Changes nothing."},
			nil, s.explain),
		addTool(srv, &sdk.Tool{Name: ToolOrphans, Annotations: readOnly("List orphaned content"),
			Description: "What namespaces that no longer exist left in storage (a finalize forced with content left): a new namespace of the same name inherits it. The document explain --orphans -o json prints. Changes nothing."},
			nil, s.orphans),
		s.addPlanTool(srv),
		s.addRescuePlanTool(srv),
	)
	if err != nil || s.cfg.Purge == PurgeOff {
		return err
	}
	return errors.Join(s.addPurgeTool(srv), s.addRescueTool(srv))
}

// result is a tool's result: first its summary (ns-doctor's own words and
// counts), then the structured result serialized, for clients that show
// only the content (as the MCP specification asks of a tool with
// structured output); the SDK sets the structured result itself.
func result(summary string, out any) *sdk.CallToolResult {
	content := []sdk.Content{&sdk.TextContent{Text: summary}}
	if raw, err := json.Marshal(out); err == nil {
		content = append(content, &sdk.TextContent{Text: string(raw)})
	}
	return &sdk.CallToolResult{Content: content}
}

// reader is what one tool call reads a cluster with: a fresh inspector, so
// that a long-running server never diagnoses with a stale discovery.
type reader struct {
	Cluster
	clients *kube.Clients
	in      *inspect.Inspector
}

func (s *server) reader(ctx context.Context, name string) (reader, error) {
	c, err := s.cluster(name)
	if err != nil {
		return reader{}, err
	}
	clients, err := s.clientsOf(c)
	if err != nil {
		return reader{}, err
	}
	in := inspect.New(clients, inspect.Config{Compact: true})
	// Read the discovery while the namespace is read (explain does too).
	go func() { _, _ = in.Discover(ctx) }()
	return reader{Cluster: c, clients: clients, in: in}, nil
}

// checkName refuses what cannot be a namespace name, before anything is
// sent.
func checkName(name string) error {
	if name == "" {
		return errors.New("namespace is required: the name of the namespace")
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("%q is not a valid namespace name: %s", printer.Cut(printer.Escape(name), 100), errs[0])
	}
	return nil
}

func (s *server) explain(ctx context.Context, _ *sdk.CallToolRequest, in ExplainInput) (*sdk.CallToolResult, DiagnosisResult, error) {
	var out DiagnosisResult
	detail, err := parseDetail(string(in.Detail), DetailNormal)
	if err != nil {
		return nil, out, err
	}
	if err := checkName(in.Namespace); err != nil {
		return nil, out, err
	}
	grace := s.cfg.Grace
	if in.Grace != "" {
		if grace, err = time.ParseDuration(in.Grace); err != nil || grace < 0 {
			return nil, out, fmt.Errorf("invalid grace %q: use a duration such as 0s, 30s or 5m", printer.Cut(printer.Escape(in.Grace), 100))
		}
	}
	r, err := s.reader(ctx, in.Context)
	if err != nil {
		return nil, out, err
	}
	ns, err := r.in.Namespace(ctx, in.Namespace)
	if apierrors.IsNotFound(err) {
		return nil, out, fmt.Errorf("namespace %q not found (it may already be deleted): list_stuck_namespaces lists the terminating ones", in.Namespace)
	}
	if err != nil {
		return nil, out, s.fail(err, r.Cluster)
	}
	if in.IfDeleted && ns.DeletionTimestamp != nil {
		in.IfDeleted = false // being deleted already: the diagnosis is the real one
	}
	ordering, err := s.cfg.Ordering(ctx, r.clients)
	if err != nil {
		return nil, out, err
	}
	report, err := r.in.Explain(ctx, ns, inspect.Options{Grace: grace, IfDeleted: in.IfDeleted, Protection: in.IfDeleted, Ordering: ordering})
	if err != nil {
		return nil, out, s.fail(err, r.Cluster)
	}
	out.DiagnosisDocument, out.Bounded = bound(func() printer.DiagnosisDocument { return printer.Diagnosis(report) }, detail)
	return result(printer.AgentDiagnosis(report, in.Namespace), out), out, nil
}

func (s *server) listStuck(ctx context.Context, _ *sdk.CallToolRequest, in ListInput) (*sdk.CallToolResult, DiagnosisListResult, error) {
	var out DiagnosisListResult
	detail, err := parseDetail(string(in.Detail), DetailBrief)
	if err != nil {
		return nil, out, err
	}
	if _, err := labels.Parse(in.Selector); err != nil {
		return nil, out, fmt.Errorf("invalid selector %q: %v", printer.Cut(printer.Escape(in.Selector), 100), err)
	}
	if s.cfg.Fleet && in.Context == "" {
		return s.listFleet(ctx, in.Selector, detail)
	}
	r, err := s.reader(ctx, in.Context)
	if err != nil {
		return nil, out, err
	}
	reports, err := s.stuckIn(ctx, r, in.Selector)
	if err != nil {
		return nil, out, s.fail(err, r.Cluster)
	}
	out.DiagnosisListDocument, out.Bounded = bound(func() printer.DiagnosisListDocument { return printer.DiagnosisList(reports) }, detail)
	return result(printer.AgentDiagnoses(reports, nil), out), out, nil
}

// stuckIn diagnoses one cluster's terminating namespaces.
func (s *server) stuckIn(ctx context.Context, r reader, selector string) ([]diagnose.Report, error) {
	namespaces, err := r.in.Terminating(ctx, selector)
	if err != nil {
		return nil, err
	}
	ordering, err := s.cfg.Ordering(ctx, r.clients)
	if err != nil {
		return nil, err
	}
	return r.in.ExplainAll(ctx, namespaces, inspect.Options{Grace: s.cfg.Grace, Ordering: ordering})
}

// listFleet reads every cluster at once; one that cannot be read is a row
// of clusters, with the one line of why, and never stops the others.
func (s *server) listFleet(ctx context.Context, selector string, detail Detail) (*sdk.CallToolResult, DiagnosisListResult, error) {
	var out DiagnosisListResult
	contexts := make([]fleet.Context, 0, len(s.cfg.Clusters))
	for _, c := range s.cfg.Clusters {
		contexts = append(contexts, fleet.Context{Name: c.Context, Cluster: c.Cluster})
	}
	results := fleet.Read(ctx, contexts, func(ctx context.Context, fc fleet.Context) ([]diagnose.Report, error) {
		r, err := s.reader(ctx, fc.Name)
		if err != nil {
			return nil, err
		}
		reports, err := s.stuckIn(ctx, r, selector)
		if err != nil {
			return nil, s.fail(err, r.Cluster)
		}
		return reports, nil
	})
	var all []diagnose.Report
	for _, r := range results {
		all = append(all, r.Reports...)
	}
	out.DiagnosisListDocument, out.Bounded = bound(func() printer.DiagnosisListDocument { return printer.FleetList(results) }, detail)
	return result(printer.AgentDiagnoses(all, results), out), out, nil
}

func (s *server) orphans(ctx context.Context, _ *sdk.CallToolRequest, in OrphansInput) (*sdk.CallToolResult, OrphansResult, error) {
	var out OrphansResult
	detail, err := parseDetail(string(in.Detail), DetailNormal)
	if err != nil {
		return nil, out, err
	}
	if in.Namespace != "" {
		if err := checkName(in.Namespace); err != nil {
			return nil, out, err
		}
	}
	r, err := s.reader(ctx, in.Context)
	if err != nil {
		return nil, out, err
	}
	obs, err := r.in.Orphans(ctx, in.Namespace)
	if errors.Is(err, inspect.ErrNamespaceExists) {
		return nil, out, fmt.Errorf("namespace %q exists, so its content is not orphaned: explain_namespace diagnoses it", in.Namespace)
	}
	if err != nil {
		return nil, out, s.fail(err, r.Cluster)
	}
	report := diagnose.Orphans(obs)
	out.OrphansDocument, out.Bounded = bound(func() printer.OrphansDocument { return printer.Orphans(report) }, detail)
	return result(printer.AgentOrphans(report), out), out, nil
}
