package purge

import (
	"fmt"
	"slices"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/compat"
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

// Options are what purge's command line asks for; the command layer
// validates them (cli's PurgeFlags.ToOptions).
type Options struct {
	// DryRun is --dry-run (--force: none).
	DryRun DryRun
	// Escalations are the steps beyond the controller's pass the run may
	// take, each asked for by its flag (Escalations() lists them), and
	// shown in the plan first.
	Escalations Asked
	BackupDir   string
	// Timeout bounds a run; passes repeat until the namespace is gone or
	// it expires.
	Timeout time.Duration
	// Orphans purges what a namespace that no longer exists left in
	// storage, instead of a terminating namespace.
	Orphans bool
	// OrderedDeletion is --ordered-deletion resolved against the cluster's
	// version: the controller's order, pods first or not.
	OrderedDeletion compat.Ordering
	// Workers bounds the resource types a pass deletes at once.
	Workers int
	// Context and Cluster name where the run writes, for the report.
	Context, Cluster string
	// AccessChecked: the caller's own access check covered the run
	// (Needs), which then sends none: one check per command.
	AccessChecked bool
	// Events receives where a run is, as it goes; nil: nobody listens.
	Events chan<- Event
}

// flags are the run's flags as purge actions, so that a next step's
// command line repeats them: --orphans, then the escalations.
func (o Options) flags(namespace string) []diagnose.Action {
	var out []diagnose.Action
	if o.Orphans {
		out = append(out, diagnose.PurgeAction(namespace, "--orphans", ""))
	}
	return append(out, o.Escalations.Actions(namespace)...)
}

// systemNamespaces hold the cluster itself: purge refuses them unless
// asked in so many words (--allow-system-namespace), and watch's janitor
// never touches them.
var systemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// SystemNamespaces are the namespaces purge protects.
func SystemNamespaces() []string { return slices.Clone(systemNamespaces) }

// IsSystemNamespace tells whether name is one of SystemNamespaces.
func IsSystemNamespace(name string) bool { return slices.Contains(systemNamespaces, name) }
