// Package purge finishes a namespace's deletion with the namespace
// controller's own Delete (internal/deletion): as a plan (client dry run),
// as dry-run requests the server answers (server dry run), or for real,
// with the escalations the user asked for, a backup of everything it
// changes, and a check of its permissions before the first change.
package purge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/kube"
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

// Escalations are the steps beyond the controller's own pass, each opted
// into by a flag and shown in the plan first.
type Escalations struct {
	// RemoveFinalizers are patterns (path.Match) of object finalizers to
	// strip from what remains after a pass; RemoveAllFinalizers strips all.
	RemoveFinalizers    []string
	RemoveAllFinalizers bool
	// FinalizeDespiteDiscoveryFailure finalizes although some groups could
	// not be discovered (their content is orphaned in storage).
	FinalizeDespiteDiscoveryFailure bool
	// RemoveNamespaceFinalizers drops spec.finalizers tokens other than
	// "kubernetes" and the namespace's metadata.finalizers.
	RemoveNamespaceFinalizers bool
	// ForceDeletePods deletes, with grace period 0, the namespace's pods
	// whose grace period is over (a lost node's kubelet never confirms).
	ForceDeletePods bool
	// BypassWebhooks are webhook configurations (validating or mutating)
	// this namespace is excluded from for the run.
	BypassWebhooks []string
}

// strips tells whether finalizers of objects are to be removed.
func (e Escalations) strips() bool { return e.RemoveAllFinalizers || len(e.RemoveFinalizers) > 0 }

// match returns the finalizers of an object to strip: all of them, or
// those matching a pattern (path.Match globs, e.g. "example.com/*").
func (e Escalations) match(finalizers []string) []string {
	var out []string
	for _, f := range finalizers {
		if e.RemoveAllFinalizers {
			out = append(out, f)
			continue
		}
		for _, p := range e.RemoveFinalizers {
			if ok, _ := path.Match(p, f); ok {
				out = append(out, f)
				break
			}
		}
	}
	return out
}

// Options are what the user asked for.
type Options struct {
	Namespace   string
	DryRun      DryRun
	Escalations Escalations
	// Timeout bounds a force run; passes repeat until the namespace is
	// gone or it expires.
	Timeout time.Duration
	// DeleteNamespace issues the namespace DELETE first when it is Active.
	DeleteNamespace bool
	BackupDir       string
	// Ordering follows the cluster's controller (pods first, or not).
	Ordering deletion.Ordering
	// Workers bounds the resource types a pass deletes at once.
	Workers int
	// Progress receives one line per pass (stderr).
	Progress io.Writer
}

// Errors the command layer maps to exit codes.
var (
	ErrNotFound           = errors.New("namespace not found")
	ErrActive             = errors.New("namespace is Active")
	ErrMissingPermissions = errors.New("missing permissions")
)

// Purger runs purge with one set of clients; each Run keeps its own state.
type Purger struct {
	Clients *kube.Clients
	Opts    Options
	Now     func() time.Time
}

func (p *Purger) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Run plans or purges, per Opts.DryRun. The report is returned also with
// an error, so whatever was done is reported.
func (p *Purger) Run(ctx context.Context) (*Report, error) {
	r := newReport(p.Opts.Namespace, p.Opts.DryRun)
	r.Ordering = p.Opts.Ordering
	ns, err := p.Clients.Kube.CoreV1().Namespaces().Get(ctx, p.Opts.Namespace, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return r, ErrNotFound
	}
	if err != nil {
		return r, fmt.Errorf("reading namespace %s: %w", p.Opts.Namespace, err)
	}
	if ns.DeletionTimestamp == nil && !p.Opts.DeleteNamespace {
		return r, ErrActive
	}
	run := &run{Purger: p, report: r}
	if p.Opts.DryRun == DryRunNone {
		return r, run.force(ctx, ns)
	}
	return r, run.plan(ctx, ns)
}

func (p *Purger) progress(format string, args ...any) {
	if p.Opts.Progress != nil {
		_, _ = fmt.Fprintf(p.Opts.Progress, format+"\n", args...)
	}
}
