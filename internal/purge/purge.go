// Package purge finishes a namespace's deletion with the namespace
// controller's own Delete (internal/deletion): as a plan (client dry run),
// as dry-run requests the server answers (server dry run), or for real,
// with the escalations the user asked for, a backup of everything it
// changes, and a check of its permissions before the first change. Every
// mode runs the same code; the writer seam (writer.go) decides what a write
// does. It returns data (Report, Event); internal/printer says it.
package purge

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/inspect"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// Errors the command layer maps to exit codes; missing permissions are a
// *access.MissingError (access.ErrMissing), and the report lists them.
var (
	ErrNotFound = errors.New("namespace not found")
	ErrActive   = errors.New("namespace is Active")
	// ErrNamespaceExists: --orphans names a namespace that exists; its
	// content is not orphaned, and purging it is an ordinary purge.
	ErrNamespaceExists = errors.New("the namespace exists")
)

// UsageError is bad input found only by reading the cluster (a webhook
// configuration that does not exist); nothing was changed.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

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
	// shared are reads the runs of several namespaces share (the
	// escalations' leftovers of killed runs).
	shared *sharedReads
	// listed are the terminating namespaces RunMany's census listed.
	listed map[string]*v1.Namespace
}

// Precheck reads what the escalations' values name across the cluster
// and refuses bad input (a UsageError) before the confirmation is asked:
// nothing is written, and no namespace is read.
func (p *Purger) Precheck(ctx context.Context) error {
	a := &runActor{w: clusterReader{clients: p.Clients}, l: newLedger(&Report{}, time.Now)}
	for _, act := range startActions(p.Opts.Escalations) {
		if c, ok := act.(prechecker); ok {
			if err := c.precheck(ctx, a); err != nil {
				return err
			}
		}
	}
	return nil
}

// discoveryCache is a discovery a few seconds old at most: namespaces
// purged together run their passes at about the same time, and one
// discovery serves them all, as one would serve the controller's workers.
type discoveryCache struct {
	mu   sync.Mutex
	at   time.Time
	disc *kube.Discovery
	// derived is what the deleter derives from each discovery in use
	// (a run's first pass has the snapshot's, later ones the shared one).
	derived map[*kube.Discovery]*deletion.Deletable
}

// deletable is the deleter's derivation of disc (the resources it may
// delete), made once for every pass of the runs sharing disc: made per
// pass, it allocated 40 KB a pass. Nil alone: each pass derives its own,
// as upstream.
func (c *discoveryCache) deletable(disc *kube.Discovery) *deletion.Deletable {
	if c == nil || disc == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.derived[disc]; ok {
		return d
	}
	if len(c.derived) >= derivedMax {
		c.derived = nil // older discoveries' runs have ended, or derive again
	}
	if c.derived == nil {
		c.derived = map[*kube.Discovery]*deletion.Deletable{}
	}
	c.derived[disc] = deletion.DeletableOf(disc.Resources)
	return c.derived[disc]
}

// derivedMax bounds the derivations kept: a discovery is replaced every
// discoveryMaxAge.
const derivedMax = 8

// discoveryMaxAge bounds how stale a shared discovery may be.
const discoveryMaxAge = 5 * time.Second

func (c *discoveryCache) get(ctx context.Context, clients *kube.Clients) (*kube.Discovery, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.disc != nil && time.Since(c.at) < discoveryMaxAge {
		return c.disc, nil
	}
	disc, err := kube.Discover(ctx, clients.Discovery)
	if err != nil {
		return nil, err
	}
	c.disc, c.at = disc, time.Now()
	return disc, nil
}

// rediscoverer is a later pass's discovery: afresh, as the controller
// does, or shared with the other namespaces purged together (c not nil);
// ending with the run's ctx.
func (c *discoveryCache) rediscoverer(ctx context.Context, clients *kube.Clients) func() (*kube.Discovery, error) {
	return func() (*kube.Discovery, error) {
		if c != nil {
			return c.get(ctx, clients)
		}
		return kube.Discover(ctx, clients.Discovery)
	}
}

// sharedReads are reads the runs of RunMany share, each made once for
// all: what a killed earlier run left is there before any of them starts.
// A nil one shares nothing.
type sharedReads struct {
	mu    sync.Mutex
	reads map[string]*sharedRead
}

type sharedRead struct {
	once sync.Once
	v    any
}

// get is key's read, made by read the first time.
func (s *sharedReads) get(key string, read func() any) any {
	if s == nil {
		return read()
	}
	s.mu.Lock()
	if s.reads == nil {
		s.reads = map[string]*sharedRead{}
	}
	one, ok := s.reads[key]
	if !ok {
		one = &sharedRead{}
		s.reads[key] = one
	}
	s.mu.Unlock()
	one.once.Do(func() { one.v = read() })
	return one.v
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

// Result is the outcome of one namespace among several.
type Result struct {
	Report *Report
	Err    error
}

// RunMany purges several namespaces, as many at a time as the server lets
// through (atonce.go), with the options of p for each (a backup folder
// each: BackupDir/NAME when BackupDir is set). With enough of them, one
// census first tells which types each holds (inspect.Census). The results
// are in the order of names.
func (p *Purger) RunMany(ctx context.Context, names []string) []Result {
	if p.Inspector == nil {
		p.Inspector = inspect.New(p.Clients, inspect.Config{Compact: true})
	}
	if p.discoveries == nil && len(names) > 1 {
		p.discoveries = &discoveryCache{}
	}
	if p.shared == nil && len(names) > 1 {
		p.shared = &sharedReads{}
	}
	if len(names) >= inspect.CensusMin && p.Inspector.Census() == nil {
		p.takeCensus(ctx, names)
	}
	checked := p.Opts.AccessChecked
	if !checked && len(names) > 1 {
		// One question for all, when its answer covers each run's own
		// check; else each run checks its namespace, as alone.
		checked, _ = access.Everything(ctx, p.Clients.Kube.AuthorizationV1())
	}
	out := make([]Result, len(names))
	// The census's reads told whether the server runs priority and
	// fairness: the bound on runs at once follows it.
	bound := newAtOnce(p.Clients)
	workqueue.ParallelizeUntil(context.WithoutCancel(ctx), namespacesAtOnceMax, len(names), func(i int) {
		bound.acquire()
		defer bound.release()
		one := *p
		one.Opts.AccessChecked = checked
		if p.Opts.BackupDir != "" && len(names) > 1 {
			one.Opts.BackupDir = filepath.Join(p.Opts.BackupDir, names[i])
		}
		r, err := one.Run(ctx, names[i])
		out[i] = Result{Report: r, Err: err}
	})
	return out
}

func (p *Purger) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Run plans or purges one namespace, per Opts.DryRun. The report is
// returned also with an error, so whatever was done is reported.
func (p *Purger) Run(ctx context.Context, name string) (*Report, error) {
	r := &Report{Namespace: name, Mode: p.Opts.DryRun, Ordering: p.Opts.OrderedDeletion, Orphans: p.Opts.Orphans,
		Context: p.Opts.Context, Cluster: p.Opts.Cluster}
	ns, err := p.namespace(ctx, name)
	switch {
	case p.Opts.Orphans && err == nil:
		return r, ErrNamespaceExists
	case p.Opts.Orphans && apierrors.IsNotFound(err):
		ns = formerNamespace(name, p.now())
	case apierrors.IsNotFound(err):
		return r, ErrNotFound
	case err != nil:
		return r, fmt.Errorf("reading namespace %s: %w", name, err)
	case ns.DeletionTimestamp == nil && !p.Opts.Escalations.Has(diagnose.FlagDeleteNamespace):
		return r, ErrActive
	}
	run := newRun(p, r)
	// The API server's warnings on purge's writes are the user's.
	ctx = kube.WithWarnings(ctx, run.serverWarning)
	defer run.emit(Event{Kind: EventDone})
	defer func() {
		run.l.update(func(rep *Report) {
			rep.Leaks = leaksOf(rep.Rows)
		})
	}()
	return r, run.do(ctx, ns)
}

// takeCensus reads which of the namespaces hold which types, and what
// each holds, once for all (inspect.Census): each run's first snapshot is
// then the census's, and its passes ask only about those types. The
// namespaces are read first, so that only those already terminating are
// covered. It is an optimisation: when it cannot be taken, every run reads
// its namespace and asks about every type, as the controller does.
func (p *Purger) takeCensus(ctx context.Context, names []string) {
	list, err := p.Clients.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	chosen := map[string]bool{}
	for _, n := range names {
		chosen[n] = true
	}
	var terminating []v1.Namespace
	p.listed = map[string]*v1.Namespace{}
	for k, ns := range list.Items {
		if chosen[ns.Name] && ns.DeletionTimestamp != nil {
			terminating = append(terminating, ns)
			p.listed[ns.Name] = &list.Items[k]
		}
	}
	_, _ = p.Inspector.TakeCensusOfContent(ctx, terminating)
}

// namespace is the namespace a run starts from: the census's read of it
// (seconds old; the run's first pass reads it again, as the controller's
// does), else read now.
func (p *Purger) namespace(ctx context.Context, name string) (*v1.Namespace, error) {
	if ns := p.listed[name]; ns != nil {
		return ns.DeepCopy(), nil
	}
	return p.Clients.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
}
