// Package purge finishes a namespace's deletion with the namespace
// controller's own pass (internal/deletion): as a plan (client dry run), as
// dry-run requests the server answers (server dry run), or for real, with
// the escalations the user asked for, a backup of everything it changes,
// and a check of its permissions before the first change.
package purge

// Kinds of purge reports.
const (
	APIVersion = "ns-doctor.dev/v1alpha1"
	Kind       = "PurgeReport"
)

// Modes.
const (
	ModeClient = "client" // plan only, nothing sent but reads
	ModeServer = "server" // dry-run requests, nothing persisted
	ModeNone   = "none"   // act
)

// Report is what purge planned or did; the table and JSON render it.
type Report struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Context    string `json:"context,omitempty"`
	Cluster    string `json:"cluster,omitempty"`
	Mode       string `json:"mode"`
	// Outcome: Planned, Gone, Remaining (timed out or blocked).
	Outcome string `json:"outcome"`
	Message string `json:"message"`
	Passes  int    `json:"passes"`
	// Steps are the requests of the (last) deletion pass, per resource.
	Steps []Step `json:"steps"`
	// Strips are the finalizer removals planned or done.
	Strips     []Strip     `json:"strips"`
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

// Outcomes.
const (
	OutcomePlanned   = "Planned"
	OutcomeGone      = "Gone"
	OutcomeRemaining = "Remaining"
	OutcomeRefused   = "Refused"
)

// Step is one request of a pass.
type Step struct {
	Verb     string `json:"verb"`
	Resource string `json:"resource"`
	// Objects is how many objects the request reaches.
	Objects int    `json:"objects"`
	Result  string `json:"result"`
}

// Strip is the removal of finalizers from one object.
type Strip struct {
	Resource   string   `json:"resource"`
	Name       string   `json:"name"`
	Finalizers []string `json:"finalizers"`
	Result     string   `json:"result"`
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

// Finalize says whether the namespace is (or would be) finalized.
type Finalize struct {
	Would  bool     `json:"would"`
	Done   bool     `json:"done"`
	Remove []string `json:"remove,omitempty"`
	Reason string   `json:"reason"`
}

func newReport(ns, mode string) *Report {
	return &Report{APIVersion: APIVersion, Kind: Kind, Namespace: ns, Mode: mode,
		Steps: []Step{}, Strips: []Strip{}, Recreated: []Recreated{}, Remaining: []Remaining{}, Conditions: []Condition{},
		Changes: []string{}, Warnings: []string{}, Errors: []string{}}
}

func (r *Report) change(format string, args ...any) {
	r.Changes = append(r.Changes, sprintf(format, args...))
}
