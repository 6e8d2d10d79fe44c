package purge

import "time"

// EventKind says what happened in a run.
type EventKind string

// Events, in the order a run sends them.
const (
	EventBackup    EventKind = "Backup"    // the backup folder is open: Dir
	EventPass      EventKind = "Pass"      // a pass starts: Pass, Types
	EventRequest   EventKind = "Request"   // a pass's request is answered: Step
	EventPassEnded EventKind = "PassEnded" // a pass ended: Remaining, Failures
	EventWaiting   EventKind = "Waiting"   // the run waits until Until, For something
	EventRetrying  EventKind = "Retrying"  // the API server is away: Err, retried after Until
	EventWarning   EventKind = "Warning"   // the API server sent a warning: Err, its text
	EventDone      EventKind = "Done"      // the run ended
)

// WaitReason says what a run waits for between passes.
type WaitReason string

// What a run waits for.
const (
	WaitPods       WaitReason = "Pods"       // pods to terminate
	WaitFinalizers WaitReason = "Finalizers" // finalizers to be removed
	WaitRetry      WaitReason = "Retry"      // a retry of failed deletions
	WaitNextPass   WaitReason = "NextPass"   // the next pass
	WaitAPIServer  WaitReason = "APIServer"  // the API server to come back
)

// Event is where a run is: one per thing that happened, sent on
// Options.Events to whatever shows progress.
type Event struct {
	Namespace string
	// Context is the kubeconfig context the run writes to (Options).
	Context string
	Kind    EventKind
	At      time.Time
	Pass    int
	// Types is how many resource types the pass sends requests for.
	Types int
	// Step is the request answered (EventRequest).
	Step *Step
	// Remaining and Failures: what the pass left, and what was refused
	// (EventPassEnded); Estimate the controller's wait for it.
	Remaining []Remaining
	Failures  []Failure
	Estimate  int64
	// Deleted is how many objects this pass deleted (EventPassEnded).
	Deleted int
	// Until and For: until when the run waits, and for what.
	Until time.Time
	For   WaitReason
	// Dir is the backup folder (EventBackup).
	Dir string
	// Err is why the API server is retried (EventRetrying).
	Err string
}
