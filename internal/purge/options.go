package purge

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// DryRun is kubectl's dry-run strategy: client (the default here: a plan),
// server (dry-run requests) or none (act).
type DryRun int

// Dry-run strategies.
const (
	DryRunClient DryRun = iota
	DryRunServer
	DryRunNone
)

func (d DryRun) String() string {
	switch d {
	case DryRunServer:
		return "server"
	case DryRunNone:
		return "none"
	}
	return "client"
}

// MarshalText renders the strategy as its flag value.
func (d DryRun) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads a flag value.
func (d *DryRun) UnmarshalText(b []byte) error {
	v, err := ParseDryRun(string(b))
	*d = v
	return err
}

// ParseDryRun reads --dry-run's value.
func ParseDryRun(s string) (DryRun, error) {
	switch s {
	case "client":
		return DryRunClient, nil
	case "server":
		return DryRunServer, nil
	case "none":
		return DryRunNone, nil
	}
	return DryRunClient, fmt.Errorf("invalid --dry-run %q: use client, server or none", s)
}

// Options are what purge's command line asks for, each under its flag's
// name; the command layer validates them (cli's PurgeFlags.ToOptions).
type Options struct {
	// DryRun is --dry-run (--force: none).
	DryRun DryRun
	// The escalations, each opted into by its flag and shown in the plan
	// first.
	//
	// RemoveFinalizers are path.Match globs of object finalizers to strip
	// from what a pass leaves; RemoveAllFinalizers strips all of them.
	RemoveFinalizers    []string
	RemoveAllFinalizers bool
	// FinalizeDespiteDiscoveryFailure finalizes although some groups
	// could not be discovered (their content is orphaned in storage).
	FinalizeDespiteDiscoveryFailure bool
	// RemoveNamespaceFinalizers drops spec.finalizers tokens other than
	// kubernetes, and the namespace's own metadata.finalizers.
	RemoveNamespaceFinalizers bool
	// ForceDeletePods deletes with grace period 0 the pods whose grace
	// period is over (a lost node's kubelet never confirms).
	ForceDeletePods bool
	// BypassWebhook names webhook configurations (validating or mutating)
	// this namespace is excluded from for the run.
	BypassWebhook []string
	// DeleteNamespace issues the namespace DELETE first when it is Active.
	DeleteNamespace bool
	BackupDir       string
	// Timeout bounds a run; passes repeat until the namespace is gone or
	// it expires.
	Timeout time.Duration
	// Orphans purges what a namespace that no longer exists left in
	// storage, instead of a terminating namespace.
	Orphans bool
	// OrderedDeletion is --ordered-deletion resolved against the cluster's
	// version: the controller's order, pods first or not.
	OrderedDeletion deletion.Ordering
	// Workers bounds the resource types a pass deletes at once.
	Workers int
	// Context and Cluster name where the run writes, for the report.
	Context, Cluster string
	// Events receives where a run is, as it goes; nil: nobody listens.
	Events chan<- Event
}

// strips tells whether finalizers of objects are to be removed.
func (o Options) strips() bool { return o.RemoveAllFinalizers || len(o.RemoveFinalizers) > 0 }

// match returns the finalizers of an object to strip: all of them, or
// those matching a pattern (path.Match globs, e.g. "example.com/*").
func (o Options) match(finalizers []string) []string {
	var out []string
	for _, f := range finalizers {
		if o.RemoveAllFinalizers {
			out = append(out, f)
			continue
		}
		for _, p := range o.RemoveFinalizers {
			if ok, _ := path.Match(p, f); ok {
				out = append(out, f)
				break
			}
		}
	}
	return out
}

// escalations are the run's escalation flags as purge actions, so that a
// next step's command line repeats them.
func (o Options) escalations(namespace string) []diagnose.Action {
	var out []diagnose.Action
	flag := func(name, value string) { out = append(out, diagnose.PurgeAction(namespace, name, value)) }
	if o.Orphans {
		flag("--orphans", "")
	}
	if o.DeleteNamespace {
		flag("--delete-namespace", "")
	}
	if len(o.RemoveFinalizers) > 0 {
		flag(diagnose.FlagRemoveFinalizers, strings.Join(o.RemoveFinalizers, ","))
	}
	if o.RemoveAllFinalizers {
		flag("--remove-all-finalizers", "")
	}
	if o.FinalizeDespiteDiscoveryFailure {
		flag(diagnose.FlagFinalizeDespiteDiscovery, "")
	}
	if o.RemoveNamespaceFinalizers {
		flag(diagnose.FlagRemoveNamespaceFinalizers, "")
	}
	if o.ForceDeletePods {
		flag(diagnose.FlagForceDeletePods, "")
	}
	for _, name := range o.BypassWebhook {
		flag(diagnose.FlagBypassWebhook, name)
	}
	return out
}

// gives tells whether the run already does what a purge action asks.
func (o Options) gives(a diagnose.Action) bool {
	switch a.Flag {
	case diagnose.FlagRemoveFinalizers:
		wanted := strings.Split(a.Value, ",")
		return len(o.match(wanted)) == len(wanted)
	case diagnose.FlagBypassWebhook:
		return slices.Contains(o.BypassWebhook, a.Value)
	case diagnose.FlagForceDeletePods:
		return o.ForceDeletePods
	case diagnose.FlagRemoveNamespaceFinalizers:
		return o.RemoveNamespaceFinalizers
	case diagnose.FlagFinalizeDespiteDiscovery:
		return o.FinalizeDespiteDiscoveryFailure
	}
	return a.Flag == "" // the pass alone: this run is one
}

// escalation acts on what a pass left; it returns how many changes it
// made (or would).
type escalation func(ctx context.Context, content *deletion.ContentResult) int

// afterPassEscalations are the escalations the options ask for, in the
// order they act after each pass. A new escalation is its option above, a
// line here, and a file of its own.
func (r *run) afterPassEscalations() []escalation {
	var out []escalation
	if r.Opts.strips() {
		out = append(out, r.strip)
	}
	if r.Opts.ForceDeletePods {
		out = append(out, r.forceDeletePods)
	}
	return out
}

// systemNamespaces hold the cluster itself: purge refuses them unless
// asked in so many words (--allow-system-namespace), and watch's janitor
// never touches them.
var systemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// SystemNamespaces are the namespaces purge protects.
func SystemNamespaces() []string { return slices.Clone(systemNamespaces) }

// IsSystemNamespace tells whether name is one of SystemNamespaces.
func IsSystemNamespace(name string) bool { return slices.Contains(systemNamespaces, name) }
