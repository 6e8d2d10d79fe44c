package printer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/apierror"
	"github.com/ns-doctor/ns-doctor/internal/compat"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/fleet"
	"github.com/ns-doctor/ns-doctor/internal/installers"
	"github.com/ns-doctor/ns-doctor/internal/owners"
	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// The documents -o json|yaml|jsonpath print: the contract docs/schema.md
// describes. Each is built from an engine's report, with its words, and
// never changes the report.

// APIVersion and kinds of the machine-readable reports (docs/schema.md).
const (
	APIVersion        = "ns-doctor.dev/v1alpha1"
	DiagnosisKind     = "NamespaceDiagnosis"
	DiagnosisListKind = "NamespaceDiagnosisList"
	SummaryListKind   = "NamespaceSummaryList"
	OrphansKind       = "OrphanedContent"
)

// DiagnosisDocument is one namespace's diagnosis as JSON and YAML say it.
type DiagnosisDocument struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Context and Cluster: the kubeconfig context read, over many
	// clusters (--all-contexts, --contexts).
	Context    string               `json:"context,omitempty"`
	Cluster    string               `json:"cluster,omitempty"`
	ObservedAt time.Time            `json:"observedAt"`
	Verdict    VerdictDocument      `json:"verdict"`
	Namespace  diagnose.Namespace   `json:"namespace"`
	Conditions []diagnose.Condition `json:"conditions"`
	Discovery  diagnose.Discovery   `json:"discovery"`
	Ordering   diagnose.Ordering    `json:"ordering"`
	// Server is the API server's version and every version-dependent
	// behaviour as assumed for it (docs/compatibility.md).
	Server     compat.Server         `json:"server"`
	Content    []diagnose.Content    `json:"content"`
	Blockers   []BlockerDocument     `json:"blockers"`
	Pods       *diagnose.PodsSummary `json:"pods,omitempty"`
	Finalizers []FinalizerDocument   `json:"finalizers,omitempty"`
	// NamespaceFinalizers are the namespace's own finalizers and their
	// owners (spec.finalizers tokens but kubernetes, metadata.finalizers).
	NamespaceFinalizers []FinalizerDocument `json:"namespaceFinalizers,omitempty"`
	Holders             []diagnose.Holder   `json:"holders,omitempty"`
	Events              []diagnose.Event    `json:"events,omitempty"`
	Notes               []NoteDocument      `json:"notes,omitempty"`
	// Progress is what is still going within its time (slow, not
	// stuck).
	Progress  []diagnose.Progress `json:"progress,omitempty"`
	Unchecked []string            `json:"unchecked,omitempty"`
	// Protection: with --if-deleted on an Active namespace, whether
	// protect's policy would refuse its deletion first.
	Protection *diagnose.Protection `json:"protection,omitempty"`
}

// VerdictDocument is the one-line answer.
type VerdictDocument struct {
	State   diagnose.State `json:"state"`
	Summary string         `json:"summary"`
}

// BlockerDocument is one blocker: its words, what it names, and its next
// steps typed, each with its own words.
type BlockerDocument struct {
	Kind     diagnose.BlockerKind `json:"kind"`
	Summary  string               `json:"summary"`
	Evidence []string             `json:"evidence"`
	NextStep string               `json:"nextStep"`
	Subject  string               `json:"subject,omitempty"`
	Actions  []ActionDocument     `json:"actions"`
	// Installer is what installed a webhook's configuration, and what
	// its lifecycle manager's records say of it (BlockingWebhook).
	Installer *installers.Installer `json:"installer,omitempty"`
}

// ActionDocument is one next step, typed, and said on its own.
type ActionDocument struct {
	diagnose.Action
	Step string `json:"step"`
}

// FinalizerDocument is a finalizer holding content and its owner's state.
type FinalizerDocument struct {
	diagnose.FinalizerInfo
	OwnerState OwnerStateDocument `json:"ownerState"`
}

// OwnerStateDocument says whether a finalizer's owner appears to run.
type OwnerStateDocument struct {
	State diagnose.OwnerRunning `json:"state"`
	// Source says who decided State: the catalogue's check of its
	// workloads, or the inference (Inferred).
	Source   diagnose.OwnerSource `json:"source,omitempty"`
	Evidence string               `json:"evidence,omitempty"`
	// Inferred is who the cluster itself says removes it.
	Inferred *owners.Inference `json:"inferred,omitempty"`
}

// NoteDocument is a finding that holds nothing.
type NoteDocument struct {
	Kind     diagnose.NoteKind `json:"kind"`
	Summary  string            `json:"summary"`
	Evidence []string          `json:"evidence,omitempty"`
	NextStep string            `json:"nextStep,omitempty"`
}

// DiagnosisListDocument is explain's answer for several namespaces.
type DiagnosisListDocument struct {
	APIVersion string              `json:"apiVersion"`
	Kind       string              `json:"kind"`
	Items      []DiagnosisDocument `json:"items"`
	// Clusters are the clusters read, over many (--all-contexts,
	// --contexts): whether each could be, and how many namespaces it gave.
	Clusters []ClusterDocument `json:"clusters,omitempty"`
}

// SummaryListDocument is explain's list view as data: a line per
// namespace, what the table shows and no more (--full prints the
// DiagnosisListDocument instead).
type SummaryListDocument struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Items      []SummaryDocument `json:"items"`
	// Clusters, over many clusters, as in DiagnosisListDocument.
	Clusters []ClusterDocument `json:"clusters,omitempty"`
}

// SummaryDocument is one namespace's line of the list view: its
// DiagnosisDocument cut to what the line shows, the fields it keeps under
// the same names (a script reading .verdict.state, .namespace.name or
// .blockers[].kind reads either).
type SummaryDocument struct {
	Context   string             `json:"context,omitempty"`
	Cluster   string             `json:"cluster,omitempty"`
	Verdict   VerdictDocument    `json:"verdict"`
	Namespace diagnose.Namespace `json:"namespace"`
	// Remaining counts the objects left in the types listed.
	Remaining int `json:"remaining"`
	// Blockers are the report's, in its order, each named and summed up;
	// the first but ListForbidden is the table's TOP BLOCKER.
	Blockers []BlockerSummaryDocument `json:"blockers"`
}

// BlockerSummaryDocument is a blocker as the list view names it; explain
// NAME gives its evidence and next steps.
type BlockerSummaryDocument struct {
	Kind    diagnose.BlockerKind `json:"kind"`
	Subject string               `json:"subject,omitempty"`
	Summary string               `json:"summary"`
}

// ClusterDocument is one cluster of a fleet, read or not.
type ClusterDocument struct {
	fleet.Context
	Reach      fleet.Reach `json:"reach"`
	Namespaces int         `json:"namespaces"`
	Error      string      `json:"error,omitempty"`
}

// OrphansDocument lists the leftovers of namespaces that are gone.
type OrphansDocument struct {
	APIVersion string                     `json:"apiVersion"`
	Kind       string                     `json:"kind"`
	ObservedAt time.Time                  `json:"observedAt"`
	Namespaces []diagnose.FormerNamespace `json:"namespaces"`
	Unchecked  []string                   `json:"unchecked,omitempty"`
}

// serverOf is what was assumed of the server, resolved for an unknown
// version when nothing was (a report made without reading /version).
func serverOf(o compat.Ordering) compat.Server {
	if o.Server.Assumed == nil {
		return compat.For(o.ServerVersion)
	}
	return o.Server
}

// Diagnosis is a diagnosis' document.
func Diagnosis(r diagnose.Report) DiagnosisDocument {
	d := DiagnosisDocument{
		APIVersion: APIVersion, Kind: DiagnosisKind, ObservedAt: r.ObservedAt,
		Verdict:   VerdictDocument{State: r.Verdict.State, Summary: VerdictSummary(r)},
		Namespace: r.Namespace, Conditions: r.Conditions, Discovery: r.Discovery, Ordering: r.Ordering,
		Server: serverOf(r.Ordering.Ordering), Content: r.Content, Blockers: Blockers(r.Blockers), Pods: r.Pods,
		Holders: r.Holders, Events: r.Events, Unchecked: UncheckedWords(r.Unchecked), Progress: r.Progress,
		Protection: r.Protection,
	}
	for _, f := range r.Finalizers {
		d.Finalizers = append(d.Finalizers, finalizerDocument(f))
	}
	for _, f := range r.NamespaceFinalizers {
		d.NamespaceFinalizers = append(d.NamespaceFinalizers, finalizerDocument(f))
	}
	for _, n := range r.Notes {
		w := NoteWords(n)
		d.Notes = append(d.Notes, NoteDocument{Kind: n.Kind, Summary: w.Summary, Evidence: w.Evidence, NextStep: w.NextStep})
	}
	return d
}

func finalizerDocument(f diagnose.FinalizerInfo) FinalizerDocument {
	return FinalizerDocument{FinalizerInfo: f, OwnerState: OwnerStateDocument{State: f.OwnerState.State, Source: f.OwnerState.Source(), Evidence: OwnerEvidence(f.OwnerState), Inferred: f.OwnerState.Inferred}}
}

// Blockers are blockers' documents.
func Blockers(blockers []diagnose.Blocker) []BlockerDocument {
	out := make([]BlockerDocument, 0, len(blockers))
	for _, b := range blockers {
		w := WordsOf(b)
		out = append(out, BlockerDocument{Kind: b.Kind, Summary: w.Summary, Evidence: w.Evidence, NextStep: w.NextStep, Subject: b.Subject, Actions: Actions(b.Actions), Installer: installerOf(b)})
	}
	return out
}

// Actions are next steps' documents.
func Actions(actions []diagnose.Action) []ActionDocument {
	out := make([]ActionDocument, 0, len(actions))
	for _, a := range actions {
		out = append(out, ActionDocument{Action: a, Step: ActionWords(a)})
	}
	return out
}

// DiagnosisList is the document of several diagnoses.
func DiagnosisList(rs []diagnose.Report) DiagnosisListDocument {
	l := DiagnosisListDocument{APIVersion: APIVersion, Kind: DiagnosisListKind, Items: []DiagnosisDocument{}}
	for _, r := range rs {
		l.Items = append(l.Items, Diagnosis(r))
	}
	return l
}

// Summary is one namespace's line of the list view.
func Summary(r diagnose.Report) SummaryDocument {
	d := SummaryDocument{Namespace: r.Namespace, Remaining: r.Remaining(),
		Verdict: VerdictDocument{State: r.Verdict.State, Summary: VerdictSummary(r)}, Blockers: []BlockerSummaryDocument{}}
	for _, b := range r.Blockers {
		d.Blockers = append(d.Blockers, BlockerSummaryDocument{Kind: b.Kind, Subject: b.Subject, Summary: WordsOf(b).Summary})
	}
	return d
}

// SummaryList is the list view of several diagnoses.
func SummaryList(rs []diagnose.Report) SummaryListDocument {
	l := SummaryListDocument{APIVersion: APIVersion, Kind: SummaryListKind, Items: make([]SummaryDocument, 0, len(rs))}
	for _, r := range rs {
		l.Items = append(l.Items, Summary(r))
	}
	return l
}

// FleetSummaryList is the list view of many clusters.
func FleetSummaryList(results []fleet.Result) SummaryListDocument {
	l := SummaryListDocument{APIVersion: APIVersion, Kind: SummaryListKind, Items: []SummaryDocument{}, Clusters: clusterDocuments(results)}
	for _, r := range results {
		for _, rep := range r.Reports {
			d := Summary(rep)
			d.Context, d.Cluster = r.Name, r.Cluster
			l.Items = append(l.Items, d)
		}
	}
	return l
}

func clusterDocuments(results []fleet.Result) []ClusterDocument {
	out := make([]ClusterDocument, 0, len(results))
	for _, r := range results {
		c := ClusterDocument{Context: r.Context, Reach: r.Reach, Namespaces: len(r.Reports)}
		if r.Err != nil {
			c.Error = r.Err.Error()
		}
		out = append(out, c)
	}
	return out
}

// FleetList is many clusters' diagnoses as one list.
func FleetList(results []fleet.Result) DiagnosisListDocument {
	l := DiagnosisListDocument{APIVersion: APIVersion, Kind: DiagnosisListKind, Items: []DiagnosisDocument{}, Clusters: clusterDocuments(results)}
	for _, r := range results {
		for _, rep := range r.Reports {
			d := Diagnosis(rep)
			d.Context, d.Cluster = r.Name, r.Cluster
			l.Items = append(l.Items, d)
		}
	}
	return l
}

// Orphans is the leftovers' document.
func Orphans(r diagnose.OrphanReport) OrphansDocument {
	return OrphansDocument{APIVersion: APIVersion, Kind: OrphansKind, ObservedAt: r.ObservedAt, Namespaces: r.Namespaces, Unchecked: UncheckedWords(r.Unchecked)}
}

// Purge report kinds.
const (
	PurgeKind     = "PurgeReport"
	PurgeListKind = "PurgeReportList"
)

// PurgeDocument is what purge planned or did, as JSON and YAML say it.
type PurgeDocument struct {
	APIVersion  string          `json:"apiVersion"`
	Kind        string          `json:"kind"`
	Namespace   string          `json:"namespace"`
	Orphans     bool            `json:"orphans,omitempty"`
	Context     string          `json:"context,omitempty"`
	Cluster     string          `json:"cluster,omitempty"`
	Ordering    compat.Ordering `json:"ordering"`
	Server      compat.Server   `json:"server"`
	Mode        purge.DryRun    `json:"mode"`
	Escalations []purge.Used    `json:"escalations"`
	Outcome     purge.Outcome   `json:"outcome"`
	Stop        *purge.Stop     `json:"stop,omitempty"`
	Message     string          `json:"message"`
	Passes      int             `json:"passes"`
	Steps       []StepDocument  `json:"steps"`
	// Rows are what the escalations acted on, each in one shape.
	Rows  []RowDocument `json:"rows"`
	Leaks []purge.Leak  `json:"leaks,omitempty"`
	// sections are the rows again, as each kind's own section said them
	// in v1alpha1 (strips, forcedPods, bypassed): deprecated, kept until
	// v1alpha2 (docs/schema.md).
	sections           []section
	Remaining          []purge.Remaining `json:"remaining"`
	Conditions         []purge.Condition `json:"conditions"`
	Finalize           FinalizeDocument  `json:"finalize"`
	MissingPermissions []string          `json:"missingPermissions,omitempty"`
	BackupDir          string            `json:"backupDir,omitempty"`
	BackedUp           int               `json:"backedUp"`
	Recreated          []purge.Recreated `json:"recreated"`
	Changes            []string          `json:"changes"`
	Warnings           []string          `json:"warnings"`
	Errors             []string          `json:"errors"`
	// ChangeDetails, WarningDetails and ErrorDetails are changes,
	// warnings and errors typed, in the same order, each with its kind
	// and the same words as its message.
	ChangeDetails  []ChangeDetail  `json:"changeDetails"`
	WarningDetails []WarningDetail `json:"warningDetails"`
	ErrorDetails   []ErrorDetail   `json:"errorDetails"`
	// Failures are the refused requests, typed: who refused each, how
	// often, when first and last.
	Failures []FailureDocument `json:"failures,omitempty"`
	// Holding is what holds the namespace at the end, each with the step
	// past it.
	Holding []HoldDocument `json:"holding,omitempty"`
}

// FailureDocument is one refused request.
type FailureDocument struct {
	Verb     string            `json:"verb"`
	Resource string            `json:"resource,omitempty"`
	Name     string            `json:"name,omitempty"`
	Error    string            `json:"error"`
	Refusal  *diagnose.Refusal `json:"refusal,omitempty"`
	Count    int               `json:"count"`
	First    time.Time         `json:"first"`
	Last     time.Time         `json:"last"`
}

// HoldDocument is one blocker holding the namespace at the end of a run;
// its nextStep is the step past it: the purge command line with the flag
// the run lacks (step), or the outside fix.
type HoldDocument struct {
	BlockerDocument
	Step *ActionDocument `json:"step,omitempty"`
}

// StepDocument is one request of a pass, and what became of it.
type StepDocument struct {
	purge.Step
	Result string `json:"result"`
}

// RowsOf are the document's rows of one kind.
func (d PurgeDocument) RowsOf(kind purge.RowKind) []RowDocument {
	var out []RowDocument
	for _, r := range d.Rows {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

// RowDocument is one row, and what became of it in words.
type RowDocument struct {
	purge.Row
	Result string `json:"result"`
}

// section is one kind's rows as its v1alpha1 section said them: the row's
// fields and its extra's side by side, the status in the kind's word.
type section struct {
	name  string
	items []map[string]any
}

// legacySections are the rows by the section of their shape.
func legacySections(rows []purge.Row) []section {
	var out []section
	for _, sh := range purge.Shapes() {
		sec := section{name: sh.Section, items: []map[string]any{}}
		for _, row := range rows {
			if row.Kind == sh.Kind {
				sec.items = append(sec.items, legacyItem(sh, row))
			}
		}
		out = append(out, sec)
	}
	return out
}

func legacyItem(sh purge.Shape, row purge.Row) map[string]any {
	item := map[string]any{}
	if data, err := json.Marshal(row.Extra); err == nil {
		_ = json.Unmarshal(data, &item)
	}
	item["resource"], item["name"], item["status"], item["result"] = row.Resource, row.Name, sh.LegacyStatus(row), RowResult(row)
	if row.Error != "" {
		item["error"] = row.Error
	}
	if row.Refusal != nil {
		item["refusal"] = row.Refusal
	}
	return item
}

// Current is the document without the deprecated sections: what a schema
// inferred from its fields describes (the MCP tools' output).
func (d PurgeDocument) Current() PurgeDocument {
	d.sections = nil
	return d
}

// MarshalJSON writes the document with each kind's section after its
// fields.
func (d PurgeDocument) MarshalJSON() ([]byte, error) {
	type plain PurgeDocument
	data, err := json.Marshal(plain(d))
	if err != nil || len(d.sections) == 0 {
		return data, err
	}
	var b bytes.Buffer
	b.Write(data[:len(data)-1])
	for _, sec := range d.sections {
		items, err := json.Marshal(sec.items)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, ",%q:%s", sec.name, items)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// FinalizeDocument says whether the namespace is finalized, and why.
type FinalizeDocument struct {
	purge.Finalize
	Reason string `json:"reason"`
}

// ChangeDetail is one change made to the cluster: its kind, its words
// (the same as in changes) and what it changed.
type ChangeDetail struct {
	Kind    purge.ChangeKind `json:"kind"`
	Message string           `json:"message"`
	// Verb is a deletion's request (deletecollection, delete).
	Verb     string `json:"verb,omitempty"`
	Resource string `json:"resource,omitempty"`
	Name     string `json:"name,omitempty"`
	// Objects is how many objects a deletion reached.
	Objects int `json:"objects,omitempty"`
	// Finalizers are the finalizers or tokens removed.
	Finalizers []string `json:"finalizers,omitempty"`
	// Node and NodeState: a force-deleted pod's node.
	Node      string          `json:"node,omitempty"`
	NodeState purge.NodeState `json:"nodeState,omitempty"`
	// Row is the kind of the row in rows[] that tells this change's
	// outcome (purge.RowOf); the human view says it there
	// only, and this entry keeps its place in the order of changes.
	Row purge.RowKind `json:"row,omitempty"`
}

// WarningDetail is one warning: its kind, its words (the same as in
// warnings) and what it is about.
type WarningDetail struct {
	Kind       purge.WarningKind `json:"kind"`
	Message    string            `json:"message"`
	Resource   string            `json:"resource,omitempty"`
	Name       string            `json:"name,omitempty"`
	Finalizers []string          `json:"finalizers,omitempty"`
	Node       string            `json:"node,omitempty"`
	// Request is the request a refusal was about (BypassedRefusal).
	Request  string `json:"request,omitempty"`
	Restored bool   `json:"restored,omitempty"`
	// Text is the API server's own words (APIServer, BypassedRefusal),
	// and APIError what a refusal among them says (BypassedRefusal).
	Text     string          `json:"text,omitempty"`
	APIError *apierror.Error `json:"apiError,omitempty"`
}

// ErrorDetail is one refused request: the kind of the API server's
// answer, its words (the same as in errors), the request, who refused it
// and what the answer says.
type ErrorDetail struct {
	Kind     apierror.Kind `json:"kind"`
	Message  string        `json:"message"`
	Verb     string        `json:"verb"`
	Resource string        `json:"resource,omitempty"`
	Name     string        `json:"name,omitempty"`
	// Error is the API server's answer, APIError what it says.
	Error    string            `json:"error"`
	APIError apierror.Error    `json:"apiError"`
	Refusal  *diagnose.Refusal `json:"refusal,omitempty"`
	Count    int               `json:"count"`
	First    time.Time         `json:"first"`
	Last     time.Time         `json:"last"`
	// BackupPath is the saved copy to restore by hand (a bypass that
	// could not be undone).
	BackupPath string `json:"backupPath,omitempty"`
}

func changeDetails(r *purge.Report) []ChangeDetail {
	out := make([]ChangeDetail, 0, len(r.Changes))
	for _, c := range r.Changes {
		row, _ := purge.RowOf(c.Kind)
		out = append(out, ChangeDetail{Kind: c.Kind, Message: ChangeWords(c, r.Namespace), Verb: c.Verb, Resource: c.Resource, Name: c.Name,
			Objects: c.Objects, Finalizers: c.Finalizers, Node: c.Node, NodeState: c.NodeState, Row: row})
	}
	return out
}

func warningDetails(r *purge.Report) []WarningDetail {
	out := make([]WarningDetail, 0, len(r.Warnings))
	for _, w := range r.Warnings {
		d := WarningDetail{Kind: w.Kind, Message: WarningWords(w, r), Resource: w.Resource, Name: w.Name, Finalizers: w.Finalizers,
			Node: w.Node, Request: w.Request, Restored: w.Restored, Text: w.Text}
		if w.Kind == purge.WarnBypassedRefusal {
			e := apierror.ClassifyMessage(w.Text)
			d.APIError = &e
		}
		out = append(out, d)
	}
	return out
}

// errorDetails read each failure's answer from its text: the report keeps
// the API server's words, not its Status.
func errorDetails(r *purge.Report) []ErrorDetail {
	out := make([]ErrorDetail, 0, len(r.Failures))
	for _, f := range r.Failures {
		e := apierror.ClassifyMessage(f.Error)
		out = append(out, ErrorDetail{Kind: e.Kind, Message: FailureWords(f, r), Verb: f.Verb, Resource: f.Resource, Name: f.Name,
			Error: f.Error, APIError: e, Refusal: f.Refusal, Count: f.Count, First: f.First.UTC(), Last: f.Last.UTC(), BackupPath: f.Path})
	}
	return out
}

// PurgeListDocument is purge's answer for several namespaces.
type PurgeListDocument struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Items      []PurgeDocument `json:"items"`
}

// Purge is a purge report's document.
func Purge(r *purge.Report) PurgeDocument {
	d := PurgeDocument{
		APIVersion: APIVersion, Kind: PurgeKind, Namespace: r.Namespace, Orphans: r.Orphans, Context: r.Context, Cluster: r.Cluster,
		Ordering: r.Ordering, Server: serverOf(r.Ordering), Mode: r.Mode, Escalations: nonNil(r.Escalations), Outcome: r.Outcome, Stop: r.Stop, Message: PurgeMessage(r), Passes: r.Passes,
		Steps: []StepDocument{}, Rows: []RowDocument{}, Leaks: r.Leaks, sections: legacySections(r.Rows),
		Remaining: nonNil(r.Remaining), Conditions: nonNil(r.Conditions), Finalize: FinalizeDocument{Finalize: r.Finalize, Reason: FinalizeReason(r.Finalize)},
		MissingPermissions: access.Words(r.MissingPermissions), BackupDir: r.BackupDir, BackedUp: r.BackedUp, Recreated: nonNil(r.Recreated),
		Changes: changesWords(r), Warnings: warningsWords(r), Errors: failuresWords(r),
		ChangeDetails: changeDetails(r), WarningDetails: warningDetails(r), ErrorDetails: errorDetails(r),
	}
	if len(d.MissingPermissions) == 0 {
		d.MissingPermissions = nil
	}
	for _, f := range r.Failures {
		d.Failures = append(d.Failures, FailureDocument{Verb: f.Verb, Resource: f.Resource, Name: f.Name, Error: f.Error, Refusal: f.Refusal,
			Count: f.Count, First: f.First.UTC(), Last: f.Last.UTC()})
	}
	for _, h := range r.Holding {
		hd := HoldDocument{BlockerDocument: Blockers([]diagnose.Blocker{h.Blocker})[0]}
		hd.NextStep = HoldStep(r, h)
		if h.Step != nil {
			hd.Step = &ActionDocument{Action: *h.Step, Step: hd.NextStep}
		}
		d.Holding = append(d.Holding, hd)
	}
	for _, s := range r.Steps {
		d.Steps = append(d.Steps, StepDocument{Step: s, Result: StepResult(s)})
	}
	for _, row := range r.Rows {
		d.Rows = append(d.Rows, RowDocument{Row: row, Result: RowResult(row)})
	}
	return d
}

// PurgeList is the document of several namespaces' runs.
func PurgeList(rs []*purge.Report) PurgeListDocument {
	l := PurgeListDocument{APIVersion: APIVersion, Kind: PurgeListKind, Items: []PurgeDocument{}}
	for _, r := range rs {
		l.Items = append(l.Items, Purge(r))
	}
	return l
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// installerOf is the installer read for a webhook blocker's configuration.
func installerOf(b diagnose.Blocker) *installers.Installer {
	if f, ok := b.Facts.(*diagnose.WebhookFacts); ok && f.Webhook.Installer != nil && f.Webhook.Installer.State != "" {
		return f.Webhook.Installer
	}
	return nil
}
