package diagnose

import "time"

// BlockerKind names a reason a namespace cannot go; docs/blockers/<kind>.md
// explains each.
type BlockerKind string

// Blocker kinds.
const (
	BlockerAPIServiceUnavailable BlockerKind = "APIServiceUnavailable"
	BlockerSelfHostedAPIService  BlockerKind = "SelfHostedAPIService"
	BlockerFinalizers            BlockerKind = "FinalizersRemaining"
	BlockerPods                  BlockerKind = "PodsNotTerminating"
	BlockerNamespaceFinalizer    BlockerKind = "NamespaceFinalizer"
	BlockerControllerNotRunning  BlockerKind = "ControllerNotRunning"
	BlockerForbidden             BlockerKind = "ListForbidden"
	BlockerListFailed            BlockerKind = "ListFailed"
	BlockerWebhook               BlockerKind = "BlockingWebhook"
	BlockerSelfHostedWebhook     BlockerKind = "SelfHostedWebhook"
	BlockerCRDDeleting           BlockerKind = "CRDBeingDeleted"
	BlockerConversionWebhook     BlockerKind = "ConversionWebhookDown"
	BlockerWebhookDenies         BlockerKind = "WebhookDenies"
	BlockerOwnerCannotFinish     BlockerKind = "OwnerCannotFinish"
	// BlockerOwnerDeleted: content waits for finalizers whose owner lived
	// in the namespace, and went with it.
	BlockerOwnerDeleted BlockerKind = "OwnerDeletedWithNamespace"
	// BlockerRescueHold: kubectl ns-doctor rescue holds the content, on
	// purpose (rescuehold.go).
	BlockerRescueHold BlockerKind = "RescueHold"
	// BlockerUnexplainedFailure: the namespace controller says its last
	// pass failed, ns-doctor's own pass over what it sees does not, and
	// no cause was found (unexplained.go).
	BlockerUnexplainedFailure BlockerKind = "UnexplainedControllerFailure"
)

// BlockerKinds is every kind, in the order explain looks for them.
func BlockerKinds() []BlockerKind {
	return []BlockerKind{
		BlockerAPIServiceUnavailable, BlockerSelfHostedAPIService, BlockerNamespaceFinalizer, BlockerPods,
		BlockerForbidden, BlockerConversionWebhook, BlockerListFailed, BlockerOwnerCannotFinish, BlockerOwnerDeleted, BlockerFinalizers, BlockerCRDDeleting,
		BlockerWebhook, BlockerSelfHostedWebhook, BlockerWebhookDenies, BlockerRescueHold, BlockerControllerNotRunning,
		BlockerUnexplainedFailure,
	}
}

// Blocker is one reason the namespace cannot go: what it names, the facts
// it rests on, and the next steps, first the one to try first.
type Blocker struct {
	Kind BlockerKind
	// Subject is what the blocker names: the finalizers, the API
	// group-version, the webhook configuration, the CRD or the resource.
	Subject string
	// Facts is one of the *Facts types below, by kind.
	Facts   Facts
	Actions []Action
}

// Facts are what a blocker rests on.
type Facts interface{ facts() }

// APIServiceFacts: a group-version failed discovery (APIServiceUnavailable,
// SelfHostedAPIService).
type APIServiceFacts struct {
	Failure DiscoveryFailure
	// ReadOnly: a well-known aggregated API serving no namespaced content
	// (metrics), so deleting its APIService loses nothing.
	ReadOnly bool
}

// NamespaceFinalizerFacts: a spec.finalizers token other than kubernetes
// (Token set), or the namespace's own metadata.finalizers (Token empty).
type NamespaceFinalizerFacts struct {
	Token    string
	Spec     []string
	Metadata []string
	// Owners are the states of the finalizers' owners that were read (the
	// token's, or each metadata finalizer's).
	Owners map[string]OwnerState
	// Released are the metadata finalizers whose writer runs but will not
	// remove them: the object each one's name points to is gone, or no
	// longer selects the namespace (owners.Pointed.Released). When every
	// metadata finalizer is, stripping them is the step.
	Released []string
}

// PodFacts: pods past their grace period.
type PodFacts struct {
	Stuck []StuckPod
	// Ordered: pods go first, so nothing else is deleted meanwhile.
	Ordered bool
}

// StuckPod is a pod whose grace period ended Overdue ago, and its node
// when that was read.
type StuckPod struct {
	Name    string
	Overdue time.Duration
	Node    string
	// NodeState is the node's, and NodeSince when its Ready condition
	// last changed (NotReady since then).
	NodeState NodeState
	NodeSince *time.Time
}

// Lost tells whether a stuck pod's node will never confirm its end: its
// Node object is gone, or its kubelet does not report.
func (p StuckPod) Lost() bool { return p.NodeState == NodeMissing || p.NodeState == NodeNotReady }

// NodeState is what is known of a pod's node.
type NodeState string

// Node states (purge's report says them too).
const (
	NodeMissing     NodeState = "Missing"     // the Node object is gone
	NodeNotReady    NodeState = "NotReady"    // its kubelet does not report
	NodeReady       NodeState = "Ready"       // the pod may still be running there
	NodeUnknown     NodeState = "Unknown"     // the Node could not be read
	NodeUnscheduled NodeState = "Unscheduled" // the pod was never bound
)

// PodNode is a stuck pod's node as read: its name, state, and when its
// Ready condition last changed.
type PodNode struct {
	Pod, Node string
	State     NodeState
	Since     *time.Time
}

// ListFacts: a resource type that cannot be listed (ListForbidden,
// ListFailed, ConversionWebhookDown).
type ListFacts struct {
	Resource string
	// Error is the API server's answer.
	Error string
	// CRD and Conversion: the CRD whose conversion webhook is down, and
	// its backend's state.
	CRD        *CRD
	Conversion *ServiceState
	// APIService and Backend: the aggregated API that answered discovery
	// but fails the list.
	APIService *APIService
	Backend    *ServiceState
	// Corrupt: the list met objects it cannot read from storage.
	Corrupt *Corrupt
	// Elsewhere: the type lists (empty) in this namespace, but fails
	// across namespaces (Error is that list's answer), which explains
	// why the namespace controller says it cannot delete it here:
	// Controller is the controller's condition message.
	Elsewhere  bool
	Controller string
	// Unreadable are the objects (namespace/name) of the type elsewhere
	// that the list across namespaces could not read, as its error names
	// them: where the type's failure can be explained.
	Unreadable []string
}

// FinalizerFacts: content waiting for finalizers (FinalizersRemaining,
// CRDBeingDeleted).
type FinalizerFacts struct {
	Content Content
	// Owners are the states of the finalizers' owners that were read.
	Owners map[string]OwnerState
	// Foreground are the dependents an owner with foregroundDeletion
	// waits for (the first few), and ForegroundMore how many more.
	Foreground     []ForegroundWait
	ForegroundMore int
	// Waiting are the owners elsewhere (another type of the namespace, or
	// cluster-scoped) being deleted in the foreground that wait on these
	// objects too: releasing them lets those owners go.
	Waiting []WaitingOwner
	// DeletingCRD is the CRD being deleted with its instances.
	DeletingCRD string
	// CannotFinish is what the holders say that shows their owner's
	// cleanup refused (OwnerCannotFinish).
	CannotFinish []CannotFinish
	// GoneRefs are the objects of the namespace the holders' specs name
	// that are gone (their credentials, often).
	GoneRefs []GoneRef
	// Held names the first objects carrying the finalizers
	// (namespace/name for a CRD's instances across namespaces).
	Held []string
	// Waited is how long its oldest object has waited since it was marked
	// for deletion (zero for a namespace only imagined deleted).
	Waited time.Duration
	// OwnersGone are the finalizers whose owner lived in the namespace
	// and went with it (OwnerDeletedWithNamespace).
	OwnersGone []string
	// Stall: their owner runs, and waiting for it will not help.
	Stall *Stall
	// Said is what the holders of this type last said, latest first, when
	// nothing else explains why their owner has released none of them:
	// their conditions that are not ready, their status fields that say
	// what is wrong, and the events about them.
	Said []Saying
}

// Saying is one thing a holder said: a status condition, a status field,
// or an event.
type Saying struct {
	Object string // resource/name
	// Source is "condition Type=Status (Reason)", "status.field" or
	// "event Reason".
	Source  string
	Message string
	At      *time.Time
	// Error: the holder reports a failure in its own words (a condition
	// or field of trouble), which is what its owner waits on.
	Error bool
	// Missing: it says that what its owner waits for does not exist.
	Missing bool
}

// Stall says why a running owner will not release its objects, however
// long one waits.
type Stall struct {
	Cause StallCause
	// Said is what the holder said is missing (StallWaitsOnMissing).
	Said *Saying
	// Object (resource/name) was last written by field manager Manager at
	// LastWrite, long before it was marked for deletion at Deleted, and
	// never since (StallNoWriteSinceDeletion).
	Object    string
	Manager   string
	LastWrite time.Time
	Deleted   time.Time
}

// StallCause is why waiting for a running owner will not help.
type StallCause string

// Stall causes.
const (
	// StallWaitsOnMissing: the holder says what its owner waits for does
	// not exist; it cannot appear by itself.
	StallWaitsOnMissing StallCause = "WaitsOnMissing"
	// StallNoWriteSinceDeletion: the field manager that set the finalizer
	// last wrote the holder long before its deletion and not since: its
	// owner runs, but is not acting on it.
	StallNoWriteSinceDeletion StallCause = "NoWriteSinceDeletion"
)

// Why is the first thing the holders said that reports a failure: what
// the next step acts on.
func (f *FinalizerFacts) Why() *Saying {
	for k := range f.Said {
		if f.Said[k].Error {
			return &f.Said[k]
		}
	}
	return nil
}

// ForegroundWait is an owner waiting (foregroundDeletion) for a dependent.
type ForegroundWait struct {
	Owner     string // resource/name
	Dependent string // resource/name
}

// WebhookFacts: a fail-closed webhook whose backend is down catches what
// the deletion sends (BlockingWebhook, SelfHostedWebhook).
type WebhookFacts struct {
	Webhook Webhook
	Service ServiceState
	// Caught is what of the namespace's content its rules catch.
	Caught []Caught
}

// Caught is a resource type and the operations a webhook catches on it.
type Caught struct {
	Resource   string
	Operations []string
}

// DenialFacts: an admission webhook that answers, and denies deleting
// or un-finalizing the namespace's content (WebhookDenies): a policy.
type DenialFacts struct {
	// Webhook names the admission webhook, or the ValidatingAdmissionPolicy
	// when Policy is set.
	Webhook string
	// Policy: a ValidatingAdmissionPolicy denied, through Binding when the
	// server named it.
	Policy  bool
	Binding string
	// Static: its name ends in .static.k8s.io on a 1.37+ server: loaded
	// from kube-apiserver's disk (KEP-5793), with no API object to delete
	// or bypass; only whoever runs the control plane changes it.
	Static bool
	// Failing: the static webhook could not be called (BlockingWebhook);
	// Message is then the controller's error.
	Failing bool
	// Configuration and its kind, when the cluster's webhooks name it.
	Configuration     string
	ConfigurationKind string
	// Message is the webhook's own words (the policy's author's text).
	Message string
	// Source says where the denial was seen: the namespace controller's
	// condition, or a request purge sent.
	Source DenialSource
}

// DenialSource says who met a webhook's denial.
type DenialSource string

// Denial sources.
const (
	DeniedController DenialSource = "NamespaceController"
	DeniedPurge      DenialSource = "Purge"
)

// ControllerFacts: no namespace controller seems to act.
type ControllerFacts struct {
	Since time.Duration
	// NoConditions: the namespace has no deletion conditions at all.
	NoConditions bool
	// Deletable names (resource/name) the first objects a pass would
	// delete at once; DeletableMore how many more types hold such.
	Deletable     []string
	DeletableMore int
}

// UnexplainedFacts: the controller's failing condition, which ns-doctor's
// own pass does not reproduce (UnexplainedControllerFailure).
type UnexplainedFacts struct {
	// Condition is the condition's type; Controller the controller's
	// value of it, Computed ns-doctor's (nil when it computed none).
	Condition  string
	Controller ConditionValue
	Computed   *ConditionValue
	// Probed are the types listed across namespaces to find the cause
	// (resource.group), none of which failed.
	Probed []string
}

func (*APIServiceFacts) facts()         {}
func (*UnexplainedFacts) facts()        {}
func (*NamespaceFinalizerFacts) facts() {}
func (*PodFacts) facts()                {}
func (*DenialFacts) facts()             {}
func (*ListFacts) facts()               {}
func (*FinalizerFacts) facts()          {}
func (*WebhookFacts) facts()            {}
func (*ControllerFacts) facts()         {}

// ActionKind is a kind of next step.
type ActionKind string

// Next steps. Purge is a purge command line, the others what to do outside
// ns-doctor.
const (
	// ActionPurge: kubectl ns-doctor purge NAMESPACE [Flag[=Value]].
	ActionPurge ActionKind = "Purge"
	// ActionRestoreService: bring back Service Target (namespace/name),
	// the backend of Of.
	ActionRestoreService ActionKind = "RestoreService"
	// ActionMakeBackendReady: the Service behind Of... is there, but what
	// it selects is not ready: make workload Target (kind/name, or
	// service/name when its selector matches no workload) in namespace
	// Value ready.
	ActionMakeBackendReady ActionKind = "MakeBackendReady"
	// ActionRestoreMissing: bring back what holder Target (resource/name)
	// says its owner waits for and does not exist (Of: its words).
	ActionRestoreMissing ActionKind = "RestoreMissing"
	// ActionDeleteAPIService: kubectl delete apiservice Target.
	ActionDeleteAPIService ActionKind = "DeleteAPIService"
	// ActionGetAPIService: kubectl get apiservice Target.
	ActionGetAPIService ActionKind = "GetAPIService"
	// ActionCheckAPIServer: apiservice Target is served by kube-apiserver
	// itself: its logs tell.
	ActionCheckAPIServer ActionKind = "CheckAPIServer"
	// ActionCheckBackend: the pods and logs behind apiservice Target.
	ActionCheckBackend ActionKind = "CheckBackend"
	// ActionPatchCRDConversion: set CRD Target's conversion strategy to None.
	ActionPatchCRDConversion ActionKind = "PatchCRDConversion"
	// ActionDeleteWebhookConfiguration: kubectl delete Target (kind/name).
	ActionDeleteWebhookConfiguration ActionKind = "DeleteWebhookConfiguration"
	// ActionPatchNamespaceFinalizers: empty the namespace's metadata.finalizers.
	ActionPatchNamespaceFinalizers ActionKind = "PatchNamespaceFinalizers"
	// ActionCheckOwner: check that Target (finalizers, a token) is still
	// removed by a running owner: Of, when known (kind namespace/name),
	// its workload, found not ready or not at all.
	ActionCheckOwner ActionKind = "CheckOwner"
	// ActionCheckNodes: the pods' nodes.
	ActionCheckNodes ActionKind = "CheckNodes"
	// ActionCheckAccess: kubectl auth can-i list Target.
	ActionCheckAccess ActionKind = "CheckAccess"
	// ActionGetResource: kubectl get Target -n NAMESPACE.
	ActionGetResource ActionKind = "GetResource"
	// ActionCheckController: kube-controller-manager's namespace controller.
	ActionCheckController ActionKind = "CheckController"
	// ActionExplainOrphans: kubectl ns-doctor explain --orphans.
	ActionExplainOrphans ActionKind = "ExplainOrphans"
	// ActionCleanUpByHand: delete by hand what the finalizers Target guard
	// (outside the cluster, often), since their owner cannot.
	ActionCleanUpByHand ActionKind = "CleanUpByHand"
	// ActionUnsafeDelete: DELETE Target (an API path) with
	// ignoreStoreReadErrorWithClusterBreakingPotential (KEP-3926).
	ActionUnsafeDelete ActionKind = "UnsafeDelete"
	// ActionEnableUnsafeDelete: turn on kube-apiserver's gate
	// AllowUnsafeMalformedObjectDeletion, so a list of Target names what
	// it cannot read.
	ActionEnableUnsafeDelete ActionKind = "EnableUnsafeDelete"
	// ActionGrantAccess: give user Target what it was refused, cluster-wide
	// (a RoleBinding in a terminating namespace cannot be created).
	ActionGrantAccess ActionKind = "GrantAccess"
	// ActionEtcdDelete: remove storage key Target from etcd itself (the
	// object cannot be read, the gate that allows its unsafe DELETE is
	// off).
	ActionEtcdDelete ActionKind = "EtcdDelete"
	// ActionOwnerLogs: read the log of the owner's workload Target
	// (kind/name) in namespace Of: it runs, and does not release them.
	ActionOwnerLogs ActionKind = "OwnerLogs"
	// ActionReleaseRescue: kubectl ns-doctor rescue NAMESPACE --release,
	// which removes the hold (policy Target) and lets the deletion finish.
	ActionReleaseRescue ActionKind = "ReleaseRescue"
	// ActionCheckAPIServicePath: apiservice Target's backend, Service Of,
	// has ready endpoints, and kube-apiserver's discovery check of it
	// fails: the path between them (a network policy, a proxy, the
	// certificates either side trusts).
	ActionCheckAPIServicePath ActionKind = "CheckAPIServicePath"
	// ActionServerDryRun: kubectl ns-doctor purge NAMESPACE
	// --dry-run=server, which sends the controller's requests as dry runs:
	// each answer says what fails.
	ActionServerDryRun ActionKind = "ServerDryRun"
	// ActionControllerLogs: the namespace controller's errors for the
	// namespace, in kube-controller-manager's log.
	ActionControllerLogs ActionKind = "ControllerLogs"
	// ActionGetResourceEverywhere: kubectl get Target --all-namespaces: the
	// type fails across namespaces, not only in this one.
	ActionGetResourceEverywhere ActionKind = "GetResourceEverywhere"
)

// Purge flags a next step may name (purge.Escalations() is the list of
// them all).
const (
	FlagRemoveFinalizers          = "--remove-finalizers"
	FlagRemoveAllFinalizers       = "--remove-all-finalizers"
	FlagDeleteNamespace           = "--delete-namespace"
	FlagDeleteAPIService          = "--delete-apiservice"
	FlagRemoveNamespaceFinalizers = "--remove-namespace-finalizers"
	FlagForceDeletePods           = "--force-delete-pods"
	FlagBypassWebhook             = "--bypass-webhook"
	FlagFinalizeDespiteDiscovery  = "--finalize-despite-discovery-failure"
)

// Action is one next step. Namespace is the namespace it is for; Flag and
// Value a purge flag (ActionPurge); Target what it acts on; Of what Target
// serves (an APIService, a webhook configuration, a CRD).
type Action struct {
	Kind      ActionKind `json:"kind"`
	Namespace string     `json:"namespace,omitempty"`
	Flag      string     `json:"flag,omitempty"`
	Value     string     `json:"value,omitempty"`
	Target    string     `json:"target,omitempty"`
	Of        string     `json:"of,omitempty"`
}

// PurgeAction is the purge command line with one flag (none: the pass
// alone).
func PurgeAction(namespace, flag, value string) Action {
	return Action{Kind: ActionPurge, Namespace: namespace, Flag: flag, Value: value}
}

// WaitingWillNotHelp tells a blocker that time alone will not clear: a
// running owner that waits on what does not exist or does not act, an
// owner that cannot finish or went with the namespace, a namespace
// finalizer whose object is gone or no longer selects the namespace.
func (b Blocker) WaitingWillNotHelp() bool {
	switch f := b.Facts.(type) {
	case *FinalizerFacts:
		return f.Stall != nil || b.Kind == BlockerOwnerCannotFinish || b.Kind == BlockerOwnerDeleted
	case *NamespaceFinalizerFacts:
		return f.Token == "" && len(f.Released) > 0 && len(f.Released) == len(f.Metadata)
	}
	return false
}

// PurgeStep is the first purge action of a blocker, if any: the flag that
// gets past it.
func (b Blocker) PurgeStep() (Action, bool) {
	for _, a := range b.Actions {
		if a.Kind == ActionPurge && a.Flag != "" {
			return a, true
		}
	}
	return Action{}, false
}
