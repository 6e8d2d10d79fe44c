// Package compat says what ns-doctor assumes of an API server and its
// namespace controller from the server's version. The behaviours that
// changed between the releases ns-doctor supports are one list (Changes):
// explain, purge and version report each as assumed or not for the
// server, purge and explain follow them, and docs/compatibility.md's table
// is checked against the list.
package compat

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
)

// Behaviour names one version-dependent behaviour.
type Behaviour string

// The behaviours, in the order of the releases that brought them.
const (
	// OrderedDeletion: the namespace controller deletes pods first and
	// nothing else while any remain (OrderedNamespaceDeletion, on by
	// default from 1.33).
	OrderedDeletion Behaviour = "OrderedDeletion"
	// OrderingGateRemoved: the gate is gone, so no controller of the
	// version can delete in one pass.
	OrderingGateRemoved Behaviour = "OrderingGateRemoved"
	// UpdateWithoutNamespace: NamespaceLifecycle admits UPDATE and PATCH
	// of an object whose namespace no longer exists, so an orphan's
	// finalizers can be removed without re-creating its namespace.
	UpdateWithoutNamespace Behaviour = "UpdateWithoutNamespace"
	// UnsafeDeleteDryRun: the unsafe DELETE of an object storage cannot
	// decode (KEP-3926) is on by default and accepts dryRun=All, so a
	// server dry run proves an object unreadable.
	UnsafeDeleteDryRun Behaviour = "UnsafeDeleteDryRun"
	// StorageErrorCause: a LIST failing on undecodable objects carries the
	// first cause, and so does the controller's ContentDeletionFailed.
	StorageErrorCause Behaviour = "StorageErrorCause"
	// StaticAdmission: webhooks and admission policies can be loaded from
	// kube-apiserver's disk (KEP-5793), named *.static.k8s.io, with no API
	// object to delete or bypass.
	StaticAdmission Behaviour = "StaticAdmission"
)

// Change is one behaviour, the release that brought it, and what it means
// for ns-doctor.
type Change struct {
	Behaviour Behaviour
	// Since is the first minor with the behaviour on by default.
	Since string
	// IfUnknown is assumed when the server's version cannot be read: the
	// safer side for what ns-doctor sends.
	IfUnknown bool
	// Upstream names where the change was made.
	Upstream string
	// Words say what holds from Since on.
	Words string
	// Short is the few words the human view lists.
	Short string
}

// Changes is the one list of what ns-doctor follows by version.
func Changes() []Change {
	return []Change{
		{OrderedDeletion, "1.33", true, "KEP-5080",
			"the namespace controller deletes pods first and nothing else while any remain", "pods first"},
		{OrderingGateRemoved, "1.37", false, "kubernetes PR 138907",
			"the OrderedNamespaceDeletion gate is removed: no controller of this version deletes all together", "no other deletion order"},
		{UpdateWithoutNamespace, "1.37", false, "kubernetes PR 140661",
			"NamespaceLifecycle admits UPDATE and PATCH of objects whose namespace is gone: an orphan's finalizers are removed without re-creating the namespace", "orphans updated in place"},
		{UnsafeDeleteDryRun, "1.37", false, "KEP-3926 (beta)",
			"the unsafe DELETE of an undecodable object is on by default and accepts dryRun=All", "unsafe delete dry runs"},
		{StorageErrorCause, "1.37", true, "KEP-3926 (beta)",
			"a LIST failing on undecodable objects names the first cause, and so does the controller's ContentDeletionFailed", "storage errors with their cause"},
		{StaticAdmission, "1.37", true, "KEP-5793 (beta)",
			"webhooks and admission policies named *.static.k8s.io are loaded from kube-apiserver's disk and have no API object", "admission from disk (*.static.k8s.io)"},
	}
}

// Server is what ns-doctor knows of a server's version and what it
// assumes from it.
type Server struct {
	// Version is the server's gitVersion; empty when /version could not be
	// read.
	Version string `json:"version,omitempty"`
	// Known: the version was read and parsed, so Assumed follows it.
	Known bool `json:"known"`
	// Assumed is each behaviour of Changes, in its order.
	Assumed []Assumption `json:"assumed"`
}

// Assumption is one behaviour as assumed for a server.
type Assumption struct {
	Behaviour Behaviour `json:"behaviour"`
	Holds     bool      `json:"holds"`
	// Since is the minor that brought it.
	Since string `json:"since"`
}

// For resolves every behaviour for a server reporting gitVersion (empty:
// not read). Builds without version ldflags (v0.0.0-master) count as
// unknown.
func For(gitVersion string) Server {
	s := Server{Version: gitVersion}
	v, err := version.ParseGeneric(gitVersion)
	s.Known = err == nil && v.Major() > 0
	for _, c := range Changes() {
		holds := c.IfUnknown
		if s.Known {
			holds = v.AtLeast(version.MustParseGeneric(c.Since))
		}
		s.Assumed = append(s.Assumed, Assumption{Behaviour: c.Behaviour, Holds: holds, Since: c.Since})
	}
	return s
}

// Has tells whether b is assumed of the server. The zero Server (nothing
// resolved) assumes what an unknown version does.
func (s Server) Has(b Behaviour) bool {
	if s.Assumed == nil {
		s = For("")
	}
	for _, a := range s.Assumed {
		if a.Behaviour == b {
			return a.Holds
		}
	}
	return false
}

// Minor is "1.37" for v1.37.2-eks-1, or "" when the version is unknown.
func (s Server) Minor() string {
	v, err := version.ParseGeneric(s.Version)
	if !s.Known || err != nil {
		return ""
	}
	return fmt.Sprintf("%d.%d", v.Major(), v.Minor())
}

// Words is a short human account: the version, and what of the releases
// after 1.36 is assumed ("v1.37.2: no other deletion order, orphans
// updated in place, ...").
func (s Server) Words() string {
	var held []string
	for _, c := range Changes() {
		if c.Behaviour != OrderedDeletion && s.Has(c.Behaviour) {
			held = append(held, c.Short)
		}
	}
	name := s.Version
	if !s.Known {
		name = "version unknown"
	}
	if len(held) == 0 {
		return name
	}
	return name + ": " + strings.Join(held, ", ")
}

// StaticName tells whether an admission webhook or policy of this name was
// loaded from kube-apiserver's disk rather than created through the API:
// from 1.37 the API server reserves the suffix for them.
func StaticName(name string) bool { return strings.HasSuffix(name, StaticSuffix) }

// StaticSuffix ends the names of manifest-based admission configurations.
const StaticSuffix = ".static.k8s.io"
