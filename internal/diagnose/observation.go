package diagnose

import (
	"github.com/ns-doctor/ns-doctor/internal/installers"

	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ServiceRef names an in-cluster backend (APIService, webhook, conversion).
type ServiceRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Port      int32  `json:"port,omitempty"`
	Path      string `json:"path,omitempty"`
}

// Key is namespace/name.
func (s ServiceRef) Key() string { return s.Namespace + "/" + s.Name }

// ServiceState is what was found of a backend Service.
type ServiceState struct {
	Exists         bool `json:"exists"`
	ReadyEndpoints int  `json:"readyEndpoints"`
	// ExternalName is set for a Service of that type (it has no endpoints).
	ExternalName string `json:"externalName,omitempty"`
	// Unknown is true when the Service could not be read (forbidden).
	Unknown bool `json:"unknown,omitempty"`
	// NamespaceTerminating: its namespace is being deleted, so a Service
	// missing or without endpoints cannot come back there
	// (NamespaceLifecycle admission refuses new content).
	NamespaceTerminating bool `json:"namespaceTerminating,omitempty"`
	// Behind is what a Service that exists, with no ready endpoint,
	// selects: the workload to make ready, rather than a Service to
	// restore.
	Behind *ServiceBackend `json:"behind,omitempty"`
}

// ServiceBackend is what a Service's selector selects.
type ServiceBackend struct {
	Selector string `json:"selector"`
	// Workloads are those whose pod template the selector matches.
	Workloads []WorkloadState `json:"workloads,omitempty"`
	// Pods is how many pods it selects (up to 100 are counted).
	Pods int `json:"pods"`
	// NotReady are a few of those pods, not ready, and why.
	NotReady []PodNotReady `json:"notReady,omitempty"`
}

// PodNotReady is a pod that is not ready, in its own words.
type PodNotReady struct {
	Name  string `json:"name"`
	Phase string `json:"phase"`
	Why   string `json:"why,omitempty"`
}

// NotReadyBehind is what a Service that is there, and down, selects: nil
// when it is missing (restore it), up, or selects nothing it knows of.
func (s ServiceState) NotReadyBehind() *ServiceBackend {
	if !s.Exists || !s.Down() {
		return nil
	}
	return s.Behind
}

// Unrestorable tells a backend that is down and cannot be brought back:
// its namespace is being deleted (the one diagnosed, or another), and
// accepts no new content. It is the one fact both the evidence ("it
// cannot be restored there") and the steps (no restore, no workload to
// make ready) are made from.
func (s ServiceState) Unrestorable() bool {
	return s.Down() && s.NamespaceTerminating
}

// Down tells whether a backend certainly cannot answer.
func (s ServiceState) Down() bool {
	return !s.Unknown && (!s.Exists || (s.ReadyEndpoints == 0 && s.ExternalName == ""))
}

// Webhook is one admission webhook, validating or mutating alike.
type Webhook struct {
	Configuration     string
	Name              string
	Type              string // Validating or Mutating
	FailurePolicy     string
	TimeoutSeconds    int32
	Service           *ServiceRef
	Rules             []admissionregv1.RuleWithOperations
	NamespaceSelector *metav1.LabelSelector
	ObjectSelector    *metav1.LabelSelector
	// Installer is what installed its configuration (its lifecycle
	// manager's marks on it), with that manager's records read when its
	// backend is down; nil when nothing marks it.
	Installer *installers.Installer
}

// CRD is what matters of a CustomResourceDefinition for a stuck namespace.
type CRD struct {
	Name           string
	Group          string
	Plural         string
	Kind, Singular string
	ShortNames     []string
	// Cluster: its objects are cluster-scoped; Version is the one it
	// stores (served).
	Cluster           bool
	Version           string
	Deleting          bool
	ConversionService *ServiceRef
}

// Probe is a resource type listed across every namespace (Err nil when
// the list succeeded): read when the controller says its last pass failed
// to delete this namespace's content, to find a type whose failure
// elsewhere explains it (unexplained.go).
type Probe struct {
	Resource schema.GroupVersionResource
	Err      error
}

// Evidence is what explain reads beyond what the controller reads: the
// finalizers' owners, the holders' conditions, the namespace's events.
type Evidence struct {
	// Owners maps a finalizer to its owner's state.
	Owners map[string]OwnerState
	// NamespaceOwners maps each of the namespace's own finalizers
	// (spec.finalizers tokens but kubernetes, metadata.finalizers) to its
	// owner's state.
	NamespaceOwners map[string]OwnerState
	Holders         []Holder
	Events          []Event
	// OwnerLogs are the recent log lines of running owners' pods that
	// name the namespace.
	OwnerLogs []OwnerLog
	// PodNodes are the nodes of the pods past their grace period (the
	// first few), and their states.
	PodNodes []PodNode
	// Unchecked is what of it could not be read.
	Unchecked []Unchecked
	// Writes are, for the holders whose status was read, when each field
	// manager last wrote them (any operation, any subresource).
	Writes []HolderWrites
	// ForegroundOwners are the cluster-scoped owners being deleted in the
	// foreground that held objects of the namespace block
	// (blockOwnerDeletion).
	ForegroundOwners []WaitingOwner
}

// WaitingOwner is an owner being deleted in the foreground that waits on
// a held object of the namespace: it keeps its foregroundDeletion
// finalizer until that dependent is gone.
type WaitingOwner struct {
	Owner     string // resource/name
	Dependent string // resource/name, in the namespace
	// ClusterScoped: the owner is not in the namespace (nor deleted with
	// it).
	ClusterScoped bool
}

// HolderWrites are the last writes of each field manager to one holder.
type HolderWrites struct {
	Resource string // resource.group
	Name     string
	Last     map[string]time.Time // field manager: its latest write
}

// OwnerLog is what one pod of a finalizer's running owner logged about the
// namespace: the lines of its recent log that name it.
type OwnerLog struct {
	Finalizer string
	// Pod is namespace/name; Container the container read.
	Pod, Container string
	Lines          []string
}
