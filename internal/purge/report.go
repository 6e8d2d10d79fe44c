package purge

import (
	"time"

	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/compat"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// Report is what purge planned or did, as data: internal/printer says it,
// in a table or as the PurgeReport document (docs/schema.md).
type Report struct {
	Namespace string
	// Orphans: the run was over what a namespace that no longer exists
	// left in storage (purge --orphans).
	Orphans bool
	// Context and Cluster are where the run wrote (Options).
	Context, Cluster string
	// Ordering is the server's version and the deletion order purge
	// followed.
	Ordering compat.Ordering
	Mode     DryRun
	Outcome  Outcome
	// Stop says why a run ended before the namespace was gone.
	Stop   *Stop
	Passes int
	// Steps are the requests of the deletion passes: every pass of a plan,
	// the last pass of a force run.
	Steps []Step
	// Rows are what the escalations acted on (or would), each in the shape
	// of its kind (Shapes()).
	Rows []Row
	// Leaks are what stripping each finalizer leaves behind, from the
	// catalogue.
	Leaks      []Leak
	Remaining  []Remaining
	Conditions []Condition
	Finalize   Finalize
	// MissingPermissions is every permission the run needs and lacks
	// (access.Check's answer).
	MissingPermissions []access.Permission
	BackupDir          string
	BackedUp           int
	// Recreated is content that came back while purge deleted it.
	Recreated []Recreated
	// Changes is every change made to the cluster, in order.
	Changes  []Change
	Warnings []Warning
	// Failures are the requests the API server refused (or would), each
	// once, with how often and when.
	Failures []Failure
	// Holding is what holds the namespace when the run ends with it still
	// there (or a plan predicts it stays): explain's diagnosis of the state
	// the run last saw, each blocker with the purge flag that gets past it.
	Holding []Hold
	// Flags are this run's escalations, as purge actions: a next step's
	// command line repeats them.
	Flags []diagnose.Action
	// Escalations are the escalations the run was asked for, as the
	// confirmation told them.
	Escalations []Used
}

// Hold is one blocker that holds the namespace at the end of a run, and
// the purge flag this run lacks that gets past it (nil: none does, and the
// blocker's outside fix is the step).
type Hold struct {
	Blocker diagnose.Blocker
	Step    *diagnose.Action
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
	StopBlocked     StopReason = "Blocked"     // refused in a way only an outside fix clears: waiting cannot help
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
	// After is how long the run had gone when it stopped (StopBlocked).
	After string `json:"after,omitempty"`
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
	// Refusal says who refused it, when the answer tells.
	Refusal *diagnose.Refusal `json:"refusal,omitempty"`
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

// NodeState is what became of a pod's node: explain's states.
type NodeState = diagnose.NodeState

// Node states.
const (
	NodeMissing     = diagnose.NodeMissing
	NodeNotReady    = diagnose.NodeNotReady
	NodeReady       = diagnose.NodeReady
	NodeUnknown     = diagnose.NodeUnknown
	NodeUnscheduled = diagnose.NodeUnscheduled
)

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
}

// ChangeKind is a kind of change made to the cluster.
type ChangeKind string

// Changes of the pass itself and of --orphans; each escalation's are in
// its file, beside its words.
const (
	ChangeDeletedContent        ChangeKind = "DeletedContent"        // a pass's deletecollection, Objects saved first
	ChangeFinalized             ChangeKind = "Finalized"             // the finalize call
	ChangeNoLeftovers           ChangeKind = "NoLeftovers"           // --orphans: nothing left
	ChangeCreatedNamespace      ChangeKind = "CreatedNamespace"      // --orphans: re-created to strip
	ChangeDeletedNamespaceAgain ChangeKind = "DeletedNamespaceAgain" // --orphans: and deleted at once
)

// Change is one change made to the cluster: what, and to which object.
type Change struct {
	Kind ChangeKind
	// Verb is the request of a deletion (deletecollection, delete).
	Verb     string
	Resource string
	Name     string
	// Objects is how many objects a deletion reached.
	Objects int
	// Finalizers are the finalizers or tokens removed.
	Finalizers []string
	// Node and NodeState: a force-deleted pod's node.
	Node      string
	NodeState NodeState
}

// WarningKind is a kind of warning.
type WarningKind string

// Warnings.
const (
	WarnRevivalNeeded   WarningKind = "RevivalNeeded"   // --orphans strips need the namespace re-created
	WarnTokensKept      WarningKind = "TokensKept"      // finalizing leaves tokens other systems own
	WarnServerRetried   WarningKind = "ServerRetried"   // the API server was away; purge retried
	WarnRecreated       WarningKind = "Recreated"       // content created anew in the terminating namespace
	WarnConflict        WarningKind = "Conflict"        // an object changed while purge worked on it
	WarnPutBack         WarningKind = "PutBack"         // a live controller put a finalizer back
	WarnBypassLeftover  WarningKind = "BypassLeftover"  // a killed run left a webhook bypassed
	WarnBypassedRefusal WarningKind = "BypassedRefusal" // a server dry run refused by a bypassed webhook
	WarnAPIServer       WarningKind = "APIServer"       // a warning the API server sent (admission)
	// A server dry run on 1.37+ put an object a list could not read to the
	// unsafe DELETE (dry run): accepted, it is unreadable for sure;
	// answered 409, it is decodable now.
	WarnUnreadableProven    WarningKind = "UnreadableProven"
	WarnUnreadableDecodable WarningKind = "UnreadableDecodable"
)

// Warning is something the user should know: what, and about which object.
type Warning struct {
	Kind     WarningKind
	Resource string
	Name     string
	// Finalizers are the finalizers or tokens concerned.
	Finalizers []string
	// Node is a pod's node (NodeReady).
	Node string
	// Request names the request a warning is about (BypassedRefusal).
	Request string
	// Restored: the leftover bypass was undone (BypassLeftover), or only
	// found (a plan).
	Restored bool
	// Text is the API server's own words (APIServer, BypassedRefusal).
	Text string
}

// Failure is a request the API server refused (or, in a plan, would):
// the request, the answer, who refused it, and how often and when.
type Failure struct {
	// Verb is the request: deletecollection, delete, list, strip,
	// force-delete, finalize, patch, restore, discover.
	Verb     string
	Resource string
	Name     string
	// Error is the API server's answer.
	Error string
	// Refusal says who refused, when the answer tells.
	Refusal *diagnose.Refusal
	// Count is how many times the same answer came; First and Last when.
	Count       int
	First, Last time.Time
	// Path is the backup copy to restore by hand (a bypass not undone).
	Path string
}
