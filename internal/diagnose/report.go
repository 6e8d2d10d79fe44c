// Package diagnose turns what was observed of a namespace into a report:
// the namespace, the controller's conditions beside ns-doctor's own, the
// remaining content and the blockers, each with the facts it rests on and
// the next steps as typed actions. It is pure (no clients, no printing) and
// speaks data only: internal/printer words every report.
package diagnose

import (
	"time"

	"github.com/ns-doctor/ns-doctor/internal/compat"
	"github.com/ns-doctor/ns-doctor/internal/owners"
)

// State is a diagnosis' verdict.
type State string

// Verdict states.
const (
	StateStuck       State = "Stuck"       // terminating, and blockers were found
	StateTerminating State = "Terminating" // terminating, nothing blocks it yet
	StateActive      State = "Active"      // not being deleted
)

// Report is one namespace's diagnosis; the table and the JSON both render
// it (internal/printer).
type Report struct {
	ObservedAt time.Time
	Verdict    Verdict
	Namespace  Namespace
	Conditions []Condition
	Discovery  Discovery
	Ordering   Ordering
	Content    []Content
	Blockers   []Blocker
	Pods       *PodsSummary
	// Finalizers are the finalizers holding content, with their owner
	// from the catalogue and whether it appears to run.
	Finalizers []FinalizerInfo
	// NamespaceFinalizers are the namespace's own finalizers holding it
	// (spec.finalizers tokens but kubernetes, then metadata.finalizers),
	// with their owners, when they were read.
	NamespaceFinalizers []FinalizerInfo
	// Holders are what the objects holding the namespace say in their
	// status: the latest message of each condition that is not ready.
	Holders []Holder
	// Events are the namespace's Warning events, latest first.
	Events []Event
	// Notes are findings that hold nothing but deserve a look.
	Notes []Note
	// Progress is what is still going within its time when nothing
	// blocks the namespace: why it is slow, not stuck (progress.go).
	Progress []Progress
	// Unchecked is what could not be read, so the blockers depending on
	// it could not be looked for (e.g. webhooks without permission to list
	// them).
	Unchecked []Unchecked
	// Protection: for an Active namespace diagnosed IfDeleted, whether
	// protect's policy would refuse its deletion first; nil when not read.
	Protection *Protection
}

// Ordering is the deletion order ns-doctor assumed of the cluster's
// namespace controller, and whether its conditions say otherwise.
type Ordering struct {
	compat.Ordering
	// OtherMatches: the controller's conditions disagree with the
	// prediction but match the other deletion order (--ordered-deletion).
	OtherMatches bool `json:"otherOrderingMatches,omitempty"`
	// PodsFirstEarlyReturn: the controller's conditions disagree because
	// its last pass stopped at pods and wrote "All content successfully
	// removed" while content remained (upstream issue 138208).
	PodsFirstEarlyReturn bool `json:"podsFirstEarlyReturn,omitempty"`
}

// Verdict is the one-line answer.
type Verdict struct {
	State State
	// IfDeleted: an Active namespace diagnosed as if it were deleted now.
	IfDeleted bool
}

// Namespace is the namespace object's deletion-relevant state.
type Namespace struct {
	Name               string     `json:"name"`
	UID                string     `json:"uid"`
	Phase              string     `json:"phase"`
	CreationTimestamp  time.Time  `json:"creationTimestamp"`
	DeletionTimestamp  *time.Time `json:"deletionTimestamp,omitempty"`
	SpecFinalizers     []string   `json:"specFinalizers"`
	MetadataFinalizers []string   `json:"metadataFinalizers"`
}

// Condition pairs the controller's condition of a type with the one
// ns-doctor computed from what it saw.
type Condition struct {
	Type       string          `json:"type"`
	Controller *ConditionValue `json:"controller,omitempty"`
	Computed   *ConditionValue `json:"computed,omitempty"`
	// Agree is true when status, reason and message are equal.
	Agree bool `json:"agree"`
}

// ConditionValue is one condition's state.
type ConditionValue struct {
	Status             string     `json:"status"`
	Reason             string     `json:"reason"`
	Message            string     `json:"message"`
	LastTransitionTime *time.Time `json:"lastTransitionTime,omitempty"`
}

// Discovery summarises the API discovery the controller would do.
type Discovery struct {
	Resources int                `json:"resources"`
	Failures  []DiscoveryFailure `json:"failures"`
}

// DiscoveryFailure is one group-version that could not be discovered, traced
// to the APIService that serves it.
type DiscoveryFailure struct {
	GroupVersion string      `json:"groupVersion"`
	Error        string      `json:"error"`
	APIService   *APIService `json:"apiService,omitempty"`
}

// APIService is an aggregated API's registration and availability.
type APIService struct {
	Name       string `json:"name"`
	Service    string `json:"service,omitempty"` // namespace/name, empty when local
	Available  string `json:"available"`         // True, False or Unknown
	Reason     string `json:"reason,omitempty"`
	Message    string `json:"message,omitempty"`
	SelfHosted bool   `json:"selfHosted"`
	// Backend is the Service's state, when the APIService names one.
	Backend *ServiceState `json:"backend,omitempty"`
}

// FailedDiscoveryCheck is the reason kube-apiserver's availability
// controller gives an APIService whose backend it reached the Service of,
// and whose discovery did not answer it as it should (no answer, an error
// status, a certificate it did not trust): k8s.io/kube-aggregator
// pkg/controllers/status/remote.
const FailedDiscoveryCheck = "FailedDiscoveryCheck"

// PathFails tells an APIService whose own availability check failed on
// the way to its backend, the Service being there: what fails lies
// between kube-apiserver and the backend, or in the backend's answer.
func (a APIService) PathFails() bool {
	return a.Available == "False" && a.Reason == FailedDiscoveryCheck
}

// Content is what remains of one resource type.
type Content struct {
	Group       string `json:"group"`
	Version     string `json:"version"`
	Resource    string `json:"resource"`
	Count       int    `json:"count"`
	Terminating int    `json:"terminating"`
	// OldestDeletion is the earliest deletionTimestamp among the items.
	OldestDeletion *time.Time     `json:"oldestDeletion,omitempty"`
	Finalizers     map[string]int `json:"finalizers,omitempty"`
	Examples       []string       `json:"examples,omitempty"`
	// Error is why the resource could not be listed (forbidden,
	// unavailable), as the API server said it.
	Error string `json:"error,omitempty"`
}

// Name is the resource as kubectl accepts it: widgets.example.com.
func (c Content) Name() string {
	if c.Group == "" {
		return c.Resource
	}
	return c.Resource + "." + c.Group
}

// PodsSummary explains the ordered deletion of pods.
type PodsSummary struct {
	Remaining int `json:"remaining"`
	// EstimateSeconds is the controller's graceful-termination estimate.
	EstimateSeconds int64 `json:"estimateSeconds"`
	// HoldingOtherContent: while pods remain the controller deletes nothing else.
	HoldingOtherContent bool `json:"holdingOtherContent"`
}

// FinalizerInfo is one finalizer holding content, and its owner.
type FinalizerInfo struct {
	Name string `json:"name"`
	// Objects counts the objects it holds.
	Objects int `json:"objects"`
	// Known: the catalogue has it; Project, Guards, Leak and Source are
	// its entry.
	Known bool `json:"known"`
	// Owner is who removes it: the catalogue's owner, else the one
	// inferred from the cluster (OwnerSource says which; the inference's
	// confidence is in OwnerState.Inferred); empty when neither names one.
	Owner       string      `json:"owner,omitempty"`
	OwnerSource OwnerSource `json:"ownerSource,omitempty"`
	Project     string      `json:"project,omitempty"`
	Guards      string      `json:"guards,omitempty"`
	Leak        string      `json:"leak,omitempty"`
	Source      string      `json:"source,omitempty"`
	// OwnerState is whether the owner appears to run.
	OwnerState OwnerState `json:"-"`
}

// OwnerSource says where an owner, or its state, comes from.
type OwnerSource string

// Owner sources.
const (
	// SourceCatalogue: ns-doctor's catalogue (its entry, and the check of
	// the workloads it names).
	SourceCatalogue OwnerSource = "catalogue"
	// SourceInferred: what the cluster itself says (owners.Infer).
	SourceInferred OwnerSource = "inferred"
)

// OwnerState is what was found of a finalizer's owner.
type OwnerState struct {
	State OwnerRunning
	// Catalogue is what the catalogue's own check found, kept when an
	// inference decided State instead (WithInference); empty when State
	// is the catalogue's.
	Catalogue OwnerRunning
	// Owner is the catalogue's owner (empty: unknown owner).
	Owner string
	// Found is the workload found (or that could not be read); Looked are
	// the workloads looked for, when none was found.
	Found  *WorkloadState
	Looked []WorkloadRef
	// Error is why the workload could not be read.
	Error string
	// NotChecked: no evidence was read (Active namespace, or the owner is
	// not looked for).
	NotChecked bool
	// Inferred is who the cluster itself says removes it (managedFields,
	// RBAC, workloads): read for a finalizer the catalogue does not know,
	// or whose catalogued owner was not found running.
	Inferred *owners.Inference
}

// Source says who decided State: the catalogue's check, or the
// inference; empty when neither could (an owner nobody names, or not
// checked).
func (s OwnerState) Source() OwnerSource {
	switch {
	case s.NotChecked:
		return ""
	case s.Catalogue != "":
		return SourceInferred
	case s.Owner != "":
		return SourceCatalogue
	}
	return ""
}

// CatalogueState is what the catalogue's own check found, whoever decided
// State.
func (s OwnerState) CatalogueState() OwnerRunning {
	if s.Catalogue != "" {
		return s.Catalogue
	}
	return s.State
}

// InferredOwner names the owner the inference found: its workload, else
// its identity; empty when it names none (confidence None, or no
// inference).
func (s OwnerState) InferredOwner() string {
	in := s.Inferred
	switch {
	case in == nil || in.Confidence == owners.None:
		return ""
	case in.Workload != nil:
		return in.Workload.String()
	case in.Identity != nil:
		return in.Identity.String()
	}
	return ""
}

// WithInference is an owner's state with what the cluster says of it.
// The inference decides the state where it is the better evidence: when
// it is certain; or, likely, where the catalogue has no finding of its
// own: it does not know the finalizer, or knows it but names no workload
// to look for (NotChecked) and the inference found the one that runs as
// its owner. A likely inference beside the catalogue's own finding
// (NotFound, NotReady, a read that failed) is evidence only, and an
// inference that names nobody (None) decides nothing. When the inference
// decides, Catalogue keeps what the catalogue's check found.
func WithInference(s OwnerState, in owners.Inference) OwnerState {
	s.Inferred = &in
	decides := false
	switch in.Confidence {
	case owners.Certain:
		decides = true
	case owners.Likely:
		decides = s.Owner == "" || (s.State == OwnerNotChecked && in.Workload != nil)
	}
	if !decides {
		return s
	}
	s.NotChecked = false
	s.Catalogue = s.State
	w := in.Workload
	switch {
	case in.InNamespace:
		s.State = OwnerDeletedWithNamespace
	case in.OwnerNamespace != "":
		s.State = OwnerNotFound
	case in.Unmatched && in.SetterNowhere:
		// What runs as the identity is not the field manager that set
		// it, and no workload of the cluster is: the setter runs
		// nowhere.
		s.State = OwnerNotFound
	case in.Unmatched:
		// What runs as the identity is not the field manager that set
		// it: whether the remover runs is not known.
		s.State = OwnerUnknown
	case w != nil && w.Ready > 0:
		s.State = OwnerRunningReady
	case w != nil:
		s.State = OwnerNotReady
	default:
		s.State = OwnerNotFound
	}
	return s
}

// Workload is the owner's workload: the one of whoever decided State
// first (the inferred one when the inference decided: the catalogue's
// Found may then be one that could not be read), else the other; nil
// when neither.
func (s OwnerState) Workload() *WorkloadState {
	var inferred *WorkloadState
	if in := s.Inferred; in != nil && in.Workload != nil && in.Confidence != owners.None {
		w := in.Workload
		inferred = &WorkloadState{WorkloadRef: WorkloadRef{Kind: w.Kind, Namespace: w.Namespace, Name: w.Name}, Ready: w.Ready, Want: w.Want}
	}
	switch {
	case s.Catalogue != "" && inferred != nil:
		return inferred
	case s.Found != nil:
		return s.Found
	}
	return inferred
}

// WorkloadRef names one of an owner's usual workloads.
type WorkloadRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// WorkloadState is a workload found, with its readiness.
type WorkloadState struct {
	WorkloadRef
	Ready int32 `json:"ready"`
	Want  int32 `json:"want"`
}

// OwnerRunning says whether an owner appears to run.
type OwnerRunning string

// Owner states.
const (
	OwnerRunningReady OwnerRunning = "Running" // a usual workload with ready replicas
	// OwnerRunningCannotFinish: running, but its holders say its cleanup
	// is refused (OwnerCannotFinish): waiting will not help.
	OwnerRunningCannotFinish OwnerRunning = "RunningCannotFinish"
	OwnerNotReady            OwnerRunning = "NotReady"     // found, with no ready replica
	OwnerNotFound            OwnerRunning = "NotFound"     // none of its usual workloads exists
	OwnerControlPlane        OwnerRunning = "ControlPlane" // the control plane removes it: not visible as a workload
	OwnerNotChecked          OwnerRunning = "NotChecked"   // the catalogue names no workload to look for
	OwnerUnknown             OwnerRunning = "Unknown"      // unknown owner, or its workloads could not be read
	// OwnerDeletedWithNamespace: the owner lived in the namespace being
	// deleted (its workload or its ServiceAccount): it was deleted, or is
	// being deleted, with it, and nothing will remove its finalizers.
	OwnerDeletedWithNamespace OwnerRunning = "DeletedWithNamespace"
)

// Holder is one object holding the namespace, in its own words.
type Holder struct {
	Resource   string            `json:"resource"`
	Name       string            `json:"name"`
	Conditions []HolderCondition `json:"conditions"`
	// Fields are what it says in status fields of its own rather than
	// conditions (status.error, status.message when its phase failed).
	Fields []HolderField `json:"fields,omitempty"`
	// ManagedBy: a release or application that keeps the holder in place,
	// so that deleting it by hand is undone until that is removed too.
	ManagedBy *Manager `json:"managedBy,omitempty"`
	// Refs are the Secrets, ConfigMaps and ServiceAccounts of the
	// namespace its spec names (names only, never their content).
	Refs []HolderRef `json:"refs,omitempty"`
}

// HolderRef is an object of the namespace that a holder's spec names, and
// whether it is still there.
type HolderRef struct {
	// Field is where the spec names it: spec.credentials.secretRef.
	Field string  `json:"field"`
	Kind  RefKind `json:"kind"`
	Name  string  `json:"name"`
	// State is filled in by the diagnosis, from the namespace's content.
	State RefState `json:"state,omitempty"`
}

// RefKind is the kind of object a holder refers to.
type RefKind string

// The kinds of reference looked for.
const (
	RefSecret         RefKind = "Secret"
	RefConfigMap      RefKind = "ConfigMap"
	RefServiceAccount RefKind = "ServiceAccount"
)

// RefState says whether a referenced object is still there.
type RefState string

// Reference states. Gone: the namespace controller deleted it (or it
// never existed); a terminating namespace accepts no new object, so it
// cannot be created again.
const (
	RefPresent RefState = "Present"
	RefGone    RefState = "Gone"
	RefUnknown RefState = "Unknown" // its type could not be listed
)

// GoneRef is a holder's reference to an object that is gone.
type GoneRef struct {
	Holder string // resource/name
	HolderRef
}

// Manager is the tool and release that manage an object, as its
// annotations say (the tenant's text: Name is shown escaped).
type Manager struct {
	Tool ManagerTool `json:"tool"`
	Name string      `json:"name"`
}

// ManagerTool names a deployment tool that records itself on objects.
type ManagerTool string

// Manager tools ns-doctor recognises.
const (
	ManagerHelm   ManagerTool = "Helm release"
	ManagerArgoCD ManagerTool = "Argo CD application"
)

// HolderCondition is a status condition that is not ready.
type HolderCondition struct {
	Type               string     `json:"type"`
	Status             string     `json:"status"`
	Reason             string     `json:"reason,omitempty"`
	Message            string     `json:"message,omitempty"`
	LastTransitionTime *time.Time `json:"lastTransitionTime,omitempty"`
	// Error: it reports a failure in its own words (a trouble type True,
	// such as Failed or CleanupBlocked, or an error in its reason or
	// message), not only that something is not ready yet.
	Error bool `json:"error,omitempty"`
	// Missing: it says that what its owner waits for does not exist
	// (not found, does not exist).
	Missing bool `json:"missing,omitempty"`
}

// Named is the condition as "Type=Status", or its type alone when it was
// written without a status (its being there says it holds).
func (c HolderCondition) Named() string {
	if c.Status == "" {
		return c.Type
	}
	return c.Type + "=" + c.Status
}

// HolderField is a status field in which a holder says what is wrong.
type HolderField struct {
	Field string `json:"field"` // status.error
	Value string `json:"value"`
	// Missing: as a condition's.
	Missing bool `json:"missing,omitempty"`
}

// Event is one Warning event of the namespace.
type Event struct {
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	Object  string    `json:"object"`
	Count   int32     `json:"count"`
	Last    time.Time `json:"last"`
	// Missing: as a holder condition's, its message says what its
	// object's owner waits for does not exist.
	Missing bool `json:"missing,omitempty"`
}

// NoteKind names a finding that holds nothing.
type NoteKind string

// Note kinds.
const (
	// NoteOlderContent: the namespace was re-created, and content older
	// than it, left by a forced deletion, sits in it again.
	NoteOlderContent NoteKind = "ContentOlderThanNamespace"
)

// Note is a finding that holds nothing.
type Note struct {
	Kind NoteKind
	// Older counts the objects older than the namespace; Examples names
	// the first of them.
	Older     int
	Examples  []OlderObject
	Namespace string
	Created   time.Time
	Actions   []Action
}

// OlderObject is an object created before its namespace.
type OlderObject struct {
	Resource string
	Name     string
	Created  time.Time
}

// ListKind is the kind of the report over every terminating namespace.
const ListKind = "NamespaceDiagnosisList"

// Blocking are the blockers that hold the namespace; not being allowed to
// list a resource type is reported but holds nothing.
func (r Report) Blocking() []Blocker {
	var out []Blocker
	for _, b := range r.Blockers {
		if b.Kind != BlockerForbidden {
			out = append(out, b)
		}
	}
	return out
}

// Remaining counts the objects left among the resource types listed.
func (r Report) Remaining() int {
	n := 0
	for _, c := range r.Content {
		n += c.Count
	}
	return n
}

// Unseen counts the resource types that could not be listed for lack of
// permission: they hold nothing, but hide what they hold.
func (r Report) Unseen() int { return len(r.Blockers) - len(r.Blocking()) }

// UncheckedSubject names what could not be read.
type UncheckedSubject string

// What evidence may be missing.
const (
	UncheckedAPIServices        UncheckedSubject = "APIServices"
	UncheckedMutatingWebhooks   UncheckedSubject = "MutatingWebhooks"
	UncheckedValidatingWebhooks UncheckedSubject = "ValidatingWebhooks"
	UncheckedCRDs               UncheckedSubject = "CustomResourceDefinitions"
	UncheckedService            UncheckedSubject = "Service"
	UncheckedEndpointSlices     UncheckedSubject = "EndpointSlices"
	UncheckedHolderStatus       UncheckedSubject = "HolderStatus"
	UncheckedEvents             UncheckedSubject = "Events"
	UncheckedResource           UncheckedSubject = "Resource"
	UncheckedOwnerLogs          UncheckedSubject = "OwnerLogs"
	// UncheckedRBAC: a list of RBAC objects (Name: clusterroles, ...),
	// which tells who may remove a finalizer.
	UncheckedRBAC UncheckedSubject = "RBAC"
	// UncheckedWorkloads: the workloads of a namespace, or named as a
	// field manager (Name says which).
	UncheckedWorkloads UncheckedSubject = "Workloads"
	// UncheckedOwnerObject: the object a namespace names as its owner.
	UncheckedOwnerObject UncheckedSubject = "OwnerObject"
	// UncheckedPointedObject: the object a namespace finalizer's name
	// points to (Name: <resource>.<group>/<name>).
	UncheckedPointedObject UncheckedSubject = "PointedObject"
	// UncheckedNode: a stuck pod's node.
	UncheckedNode UncheckedSubject = "Node"
	// UncheckedPods: where the stuck pods run (their node).
	UncheckedPods UncheckedSubject = "Pods"
)

// Unchecked is one read that failed: what, which one (a Service's
// namespace/name, an object's resource/name), and the API server's error.
type Unchecked struct {
	Subject UncheckedSubject
	Name    string
	Error   string
}
