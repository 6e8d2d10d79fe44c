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
	"path/filepath"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/finalizers"
	"github.com/ns-doctor/ns-doctor/internal/inspect"
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
	// Orphans purges what a namespace that no longer exists left in
	// storage, instead of a terminating namespace.
	Orphans bool
	// Ordering follows the cluster's controller (pods first, or not).
	Ordering deletion.Ordering
	// Workers bounds the resource types a pass deletes at once.
	Workers int
	// Progress receives one line per pass (stderr).
	Progress io.Writer
	// Observer receives where a force run is, as it goes, for a live
	// display.
	Observer func(Progress)
}

// Progress is where a force run is.
type Progress struct {
	Namespace string
	Pass      int
	// Types this pass sends requests for, and how many of them are done.
	Types, TypesDone int
	// Deleted counts the objects deleted (each saved first) so far.
	Deleted int
	// Remaining is what the last pass left, largest first.
	Remaining []Remaining
	// Until and For: between passes, until when purge waits, and for what.
	Until time.Time
	For   string
	Done  bool
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
	// Inspector is shared by the runs of several namespaces: one discovery,
	// one read of webhooks, CRDs and APIServices. Nil: a run makes its own.
	Inspector *inspect.Inspector
	// discoveries shares the later passes' discovery between the runs of
	// several namespaces; nil: each pass discovers afresh.
	discoveries *discoveryCache
}

// discoveryCache is a discovery a few seconds old at most: namespaces
// purged together run their passes at about the same time, and one
// discovery serves them all, as one would serve the controller's workers.
type discoveryCache struct {
	mu   sync.Mutex
	at   time.Time
	disc *kube.Discovery
}

// discoveryMaxAge bounds how stale a shared discovery may be.
const discoveryMaxAge = 5 * time.Second

func (c *discoveryCache) get(clients *kube.Clients) (*kube.Discovery, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.disc != nil && time.Since(c.at) < discoveryMaxAge {
		return c.disc, nil
	}
	disc, err := kube.Discover(clients.Discovery)
	if err != nil {
		return nil, err
	}
	c.disc, c.at = disc, time.Now()
	return disc, nil
}

// seed makes the first passes' discovery the cache's, when it has none:
// the later passes reuse it while it is fresh.
func (c *discoveryCache) seed(disc *kube.Discovery) {
	if c == nil || disc == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.disc == nil {
		c.disc, c.at = disc, time.Now()
	}
}

// namespacesAtOnce bounds the namespaces RunMany purges concurrently;
// each run has its own bound of requests in flight.
const namespacesAtOnce = 4

// Outcome of one namespace among several.
type Result struct {
	Report *Report
	Err    error
}

// RunMany purges several namespaces, a few at a time, with the options of
// p for each (a backup folder each: BackupDir/NAME when BackupDir is set).
// The results are in the order of names.
func (p *Purger) RunMany(ctx context.Context, names []string) []Result {
	if p.Inspector == nil {
		p.Inspector = inspect.New(p.Clients)
		p.Inspector.Compact = true
	}
	if p.discoveries == nil && len(names) > 1 {
		p.discoveries = &discoveryCache{}
	}
	out := make([]Result, len(names))
	sem := make(chan struct{}, namespacesAtOnce)
	var wg sync.WaitGroup
	for i, name := range names {
		one := *p
		one.Opts.Namespace = name
		if p.Opts.BackupDir != "" && len(names) > 1 {
			one.Opts.BackupDir = filepath.Join(p.Opts.BackupDir, name)
		}
		if len(names) > 1 && p.Opts.Progress != nil {
			one.Opts.Progress = prefixed{w: p.Opts.Progress, prefix: name + ": "}
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r, err := one.Run(ctx)
			out[i] = Result{Report: r, Err: err}
		})
	}
	wg.Wait()
	return out
}

// prefixed writes each progress line with the namespace first; lines from
// concurrent runs stay whole (one Write each).
type prefixed struct {
	w      io.Writer
	prefix string
}

func (p prefixed) Write(b []byte) (int, error) {
	if _, err := p.w.Write(append([]byte(p.prefix), b...)); err != nil {
		return 0, err
	}
	return len(b), nil
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
	r.Ordering, r.Orphans = p.Opts.Ordering, p.Opts.Orphans
	ns, err := p.Clients.Kube.CoreV1().Namespaces().Get(ctx, p.Opts.Namespace, metav1.GetOptions{})
	switch {
	case p.Opts.Orphans && err == nil:
		return r, ErrNamespaceExists
	case p.Opts.Orphans && apierrors.IsNotFound(err):
		ns = formerNamespace(p.Opts.Namespace, p.now())
	case apierrors.IsNotFound(err):
		return r, ErrNotFound
	case err != nil:
		return r, fmt.Errorf("reading namespace %s: %w", p.Opts.Namespace, err)
	case ns.DeletionTimestamp == nil && !p.Opts.DeleteNamespace:
		return r, ErrActive
	}
	run := &run{Purger: p, report: r}
	defer func() { r.Leaks = leaksOf(r.Strips) }()
	if p.Opts.DryRun == DryRunNone {
		return r, run.force(ctx, ns)
	}
	return r, run.plan(ctx, ns)
}

// leaksOf says, for each finalizer stripped (or to strip), what it costs.
func leaksOf(strips []Strip) []Leak {
	seen := map[string]bool{}
	var out []Leak
	for _, s := range strips {
		for _, f := range s.Finalizers {
			if seen[f] || (s.Status != StripPlanned && s.Status != StripRemoved) {
				continue
			}
			seen[f] = true
			l := Leak{Finalizer: f}
			if e := finalizers.Lookup(f); e != nil {
				l.Owner, l.Leak, l.Source = e.Owner, e.Leak, e.Source
			}
			out = append(out, l)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Finalizer < out[j].Finalizer })
	return out
}

func (p *Purger) progress(format string, args ...any) {
	if p.Opts.Progress != nil {
		_, _ = fmt.Fprintf(p.Opts.Progress, format+"\n", args...)
	}
}
