package purge

import (
	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// Kinds of purge reports; the apiVersion is the diagnosis's.
const (
	Kind     = "PurgeReport"
	ListKind = "PurgeReportList"
)

// ReportList is purge's answer for several namespaces.
type ReportList struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Items      []*Report `json:"items"`
}

// NewReportList wraps reports.
func NewReportList(items []*Report) ReportList {
	if items == nil {
		items = []*Report{}
	}
	return ReportList{APIVersion: diagnose.APIVersion, Kind: ListKind, Items: items}
}

// Report is what purge planned or did; the table and JSON render it. The
// string fields marked "words" are filled by internal/printer from the
// typed fields beside them, for people and for older consumers.
type Report struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	// Orphans: the run was over what a namespace that no longer exists
	// left in storage (purge --orphans).
	Orphans bool   `json:"orphans,omitempty"`
	Context string `json:"context,omitempty"`
	Cluster string `json:"cluster,omitempty"`
	// Ordering is the server's version and the deletion order purge
	// followed.
	Ordering deletion.Ordering `json:"ordering"`
	Mode     DryRun            `json:"mode"`
	Outcome  Outcome           `json:"outcome"`
	// Stop says why a run ended before the namespace was gone.
	Stop *Stop `json:"stop,omitempty"`
	// Message is the headline (words).
	Message string `json:"message"`
	Passes  int    `json:"passes"`
	// Steps are the requests of the deletion passes: every pass of a plan,
	// the last pass of a force run.
	Steps []Step `json:"steps"`
	// Strips are the finalizer removals planned or done.
	Strips []Strip `json:"strips"`
	// Leaks are what stripping each finalizer above leaves behind, from
	// the catalogue.
	Leaks []Leak `json:"leaks,omitempty"`
	// ForcedPods are the pods deleted (or to delete) with grace period 0.
	ForcedPods []ForcedPod `json:"forcedPods"`
	// Bypassed are the webhook configurations this namespace is (or would
	// be) excluded from during the run.
	Bypassed   []Bypass    `json:"bypassed"`
	Remaining  []Remaining `json:"remaining"`
	Conditions []Condition `json:"conditions"`
	Finalize   Finalize    `json:"finalize"`
	// MissingPermissions lists every permission the plan needs and lacks.
	MissingPermissions []string `json:"missingPermissions,omitempty"`
	BackupDir          string   `json:"backupDir,omitempty"`
	BackedUp           int      `json:"backedUp"`
	// Recreated is content that came back while purge deleted it.
	Recreated []Recreated `json:"recreated"`
	// Changes is every change made to the cluster, in order.
	Changes  []string `json:"changes"`
	Warnings []string `json:"warnings"`
	// Errors are the API server's answers to failed requests.
	Errors []string `json:"errors"`
}

// Outcome is how a run ended.
type Outcome string

// Outcomes.
const (
	OutcomePlanned   Outcome = "Planned"   // a dry run
	OutcomeGone      Outcome = "Gone"      // the namespace is gone
	OutcomeRemaining Outcome = "Remaining" // stopped with the namespace still there
	OutcomeRefused   Outcome = "Refused"   // nothing done: permissions missing
)

// StopReason says why a force run stopped with the namespace still there.
type StopReason string

// Stop reasons.
const (
	StopTimeout     StopReason = "Timeout"     // --timeout expired
	StopInterrupted StopReason = "Interrupted" // Ctrl-C or SIGTERM
	StopRecreated   StopReason = "Recreated"   // content kept coming back
	StopError       StopReason = "Error"       // an error not worth retrying
)

// Stop is why and where a force run stopped.
type Stop struct {
	Reason StopReason `json:"reason"`
	// Error is the error that stopped the run (StopError).
	Error string `json:"error,omitempty"`
	// Timeout is the --timeout that expired.
	Timeout string `json:"timeout,omitempty"`
	// Recreated names the types that kept coming back, and CreatedBy the
	// field managers that created them (StopRecreated).
	Recreated []string `json:"recreatedTypes,omitempty"`
	CreatedBy []string `json:"createdBy,omitempty"`
}

// StepStatus is what became of one request.
type StepStatus string

// Step statuses.
const (
	StepPlanned StepStatus = "Planned" // a plan: would be sent (or was sent as a dry run and accepted)
	StepSent    StepStatus = "Sent"    // sent for real and accepted
	StepFailed  StepStatus = "Failed"  // the server refused it (or would, in a plan)
	StepSkipped StepStatus = "Skipped" // not sent: the backup's list had just found nothing to delete
)

// Step is one request of a pass.
type Step struct {
	// Pass numbers the steps of a plan's passes.
	Pass     int    `json:"pass,omitempty"`
	Verb     string `json:"verb"`
	Resource string `json:"resource"`
	// Name is the object a DELETE of one item names.
	Name string `json:"name,omitempty"`
	// Objects is how many objects the request reaches.
	Objects int        `json:"objects"`
	Status  StepStatus `json:"status"`
	Error   string     `json:"error,omitempty"`
	// Result is the status in words.
	Result string `json:"result"`
}

// StripStatus is what became of one finalizer removal.
type StripStatus string

// Strip statuses.
const (
	StripPlanned     StripStatus = "Planned"     // a plan: would be sent (a server dry run accepted it)
	StripRemoved     StripStatus = "Removed"     // done, the object saved first
	StripFailed      StripStatus = "Failed"      // refused, or could not be saved first
	StripGone        StripStatus = "Gone"        // the object went before its turn
	StripNothingLeft StripStatus = "NothingLeft" // no matching finalizer was left on it
	StripLeftAlone   StripStatus = "LeftAlone"   // a live controller put the finalizer back: not fought
)

// Strip is the removal of finalizers from one object.
type Strip struct {
	Resource   string      `json:"resource"`
	Name       string      `json:"name"`
	Finalizers []string    `json:"finalizers"`
	Status     StripStatus `json:"status"`
	Error      string      `json:"error,omitempty"`
	// Result is the status in words.
	Result string `json:"result"`
}

// Leak is what stripping one finalizer costs.
type Leak struct {
	Finalizer string `json:"finalizer"`
	// Owner is who should have removed it; empty when unknown.
	Owner string `json:"owner,omitempty"`
	Leak  string `json:"leak,omitempty"`
	// Source is where the catalogue read it.
	Source string `json:"source,omitempty"`
}

// NodeState is what became of a pod's node.
type NodeState string

// Node states.
const (
	NodeMissing     NodeState = "Missing"     // the Node object is gone
	NodeNotReady    NodeState = "NotReady"    // its kubelet does not report
	NodeReady       NodeState = "Ready"       // the pod may still be running there
	NodeUnknown     NodeState = "Unknown"     // the Node could not be read
	NodeUnscheduled NodeState = "Unscheduled" // the pod was never bound
)

// ForceStatus is what became of a pod's force-deletion.
type ForceStatus string

// Force-deletion statuses.
const (
	ForcePlanned ForceStatus = "Planned" // a plan: would be sent (a server dry run accepted it)
	ForceDeleted ForceStatus = "Deleted" // done, the pod saved first
	ForceFailed  ForceStatus = "Failed"
	ForceGone    ForceStatus = "Gone" // the pod went before its turn
)

// ForcedPod is a pod deleted with gracePeriodSeconds 0 (what `kubectl
// delete --force --grace-period=0` sends), once its grace period is over.
type ForcedPod struct {
	Name      string    `json:"name"`
	Node      string    `json:"node,omitempty"`
	NodeState NodeState `json:"nodeState"`
	// TerminatingSeconds is how long the pod has been terminating.
	TerminatingSeconds int64 `json:"terminatingSeconds"`
	// AfterSeconds: a plan's pod whose grace period is not over yet is
	// force-deleted that much later.
	AfterSeconds int64       `json:"afterSeconds,omitempty"`
	Status       ForceStatus `json:"status"`
	Error        string      `json:"error,omitempty"`
	// Result is the status in words.
	Result string `json:"result"`
}

// BypassStatus is what became of a webhook configuration's bypass.
type BypassStatus string

// Bypass statuses.
const (
	BypassPlanned       BypassStatus = "Planned"       // a plan: would be excluded during the run
	BypassRestored      BypassStatus = "Restored"      // excluded during the run, then restored
	BypassFailed        BypassStatus = "Failed"        // could not be excluded: nothing changed
	BypassRestoreFailed BypassStatus = "RestoreFailed" // excluded, and not restored: see RestoreCommand
	BypassLeftover      BypassStatus = "LeftoverRestored"
)

// Bypass is one webhook configuration named by --bypass-webhook.
type Bypass struct {
	// Kind is ValidatingWebhookConfiguration or MutatingWebhookConfiguration.
	Kind     string   `json:"kind"`
	Name     string   `json:"name"`
	Webhooks []string `json:"webhooks"`
	// Catches names what of purge's writes it catches in the namespace.
	Catches []string     `json:"catches,omitempty"`
	Status  BypassStatus `json:"status"`
	Error   string       `json:"error,omitempty"`
	// RestoreCommand restores the configuration from the backup by hand,
	// when purge could not.
	RestoreCommand string `json:"restoreCommand,omitempty"`
	// Result is the status in words.
	Result string `json:"result"`
}

// Recreated is an object created anew in the terminating namespace: a name
// purge deleted that reappeared with a new UID, or an object created after
// the namespace was deleted.
type Recreated struct {
	Resource string `json:"resource"`
	Name     string `json:"name"`
	// Times is how many passes found it created anew.
	Times int `json:"times"`
	// CreatedBy is its field manager, when the server records one.
	CreatedBy string `json:"createdBy,omitempty"`
}

// Remaining is what a pass leaves of one resource, and why.
type Remaining struct {
	Resource   string         `json:"resource"`
	Count      int            `json:"count"`
	Finalizers map[string]int `json:"finalizers,omitempty"`
}

// Condition is one namespace condition as the controller would write it.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// FinalizeCause says why the namespace is, or is not, finalized.
type FinalizeCause string

// Finalize causes.
const (
	FinalizeNothingRemains   FinalizeCause = "NothingRemains"   // the pass left nothing
	FinalizeAfterEscalations FinalizeCause = "AfterEscalations" // a later pass, once the escalations acted
	FinalizeDespiteDiscovery FinalizeCause = "DespiteDiscovery" // discovery failed; finalized as asked
	FinalizeContentRemains   FinalizeCause = "ContentRemains"   // content is still going away
	FinalizeDiscoveryFailed  FinalizeCause = "DiscoveryFailed"  // the controller never finalizes then
	FinalizeDeletionErrors   FinalizeCause = "DeletionErrors"   // some deletions failed
	FinalizeRejected         FinalizeCause = "Rejected"         // the server refused the finalize call
	FinalizeOtherTokens      FinalizeCause = "OtherTokens"      // only tokens other systems own are left
	FinalizeNamespaceHeld    FinalizeCause = "NamespaceHeld"    // the namespace's own metadata.finalizers hold it
)

// Finalize says whether the namespace is (or would be) finalized.
type Finalize struct {
	Would bool `json:"would"`
	Done  bool `json:"done"`
	// Remove are the spec.finalizers tokens the finalize call drops, and
	// Kept those it leaves for their owners.
	Remove []string      `json:"remove,omitempty"`
	Kept   []string      `json:"kept,omitempty"`
	Cause  FinalizeCause `json:"cause"`
	// Estimate is the controller's wait for remaining content (seconds).
	Estimate int64 `json:"estimate,omitempty"`
	// PodsFirst: pods remain, so other content is not looked at yet.
	PodsFirst bool `json:"podsFirst,omitempty"`
	// Error is the pass's or the finalize call's error.
	Error string `json:"error,omitempty"`
	// Reason is the cause in words.
	Reason string `json:"reason"`
}

func newReport(ns string, mode DryRun) *Report {
	return &Report{APIVersion: diagnose.APIVersion, Kind: Kind, Namespace: ns, Mode: mode,
		Steps: []Step{}, Strips: []Strip{}, ForcedPods: []ForcedPod{}, Bypassed: []Bypass{}, Recreated: []Recreated{}, Remaining: []Remaining{}, Conditions: []Condition{},
		Changes: []string{}, Warnings: []string{}, Errors: []string{}}
}
