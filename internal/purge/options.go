package purge

import (
	"fmt"
	"path"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
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
