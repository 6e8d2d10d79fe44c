package purge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/inspect"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// Options are what the user asked for.
type Options struct {
	Namespace string
	Mode      string
	// Timeout bounds a force run; passes repeat until the namespace is
	// gone or it expires.
	Timeout time.Duration
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
	// DeleteNamespace issues the namespace DELETE first when it is Active.
	DeleteNamespace bool
	BackupDir       string
	// Progress receives one line per pass (stderr).
	Progress io.Writer
}

// Errors the command layer maps to exit codes.
var (
	ErrNotFound           = errors.New("namespace not found")
	ErrActive             = errors.New("namespace is Active")
	ErrMissingPermissions = errors.New("missing permissions")
)

// Purger runs purge with one set of clients.
type Purger struct {
	Clients *kube.Clients
	Opts    Options
	Now     func() time.Time

	// reported remembers the resources whose deletion is already listed
	// among the changes: later passes re-send the same request.
	reported map[string]bool
	// rc notices content created anew while purge deletes it.
	rc *recreations
	// stripped remembers the finalizers purge removed per object, so one
	// a live controller puts back is reported, not removed again.
	stripped map[string][]string
}

func (p *Purger) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Purger) strips() bool { return p.Opts.RemoveAllFinalizers || len(p.Opts.RemoveFinalizers) > 0 }

// Run plans or purges, per Opts.Mode. The report is returned also with an
// error, so whatever was done is reported.
func (p *Purger) Run(ctx context.Context) (*Report, error) {
	r := newReport(p.Opts.Namespace, p.Opts.Mode)
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
	if p.Opts.Mode == ModeNone {
		return r, p.force(ctx, r, ns)
	}
	return r, p.plan(ctx, r, ns)
}

// snapshot discovers the API and reads what the namespace holds, the same
// way explain does (shared discovery, metadata sweep, webhooks, backends).
func (p *Purger) snapshot(ctx context.Context, ns *v1.Namespace) (*kube.Discovery, diagnose.Observation, error) {
	in := inspect.New(p.Clients)
	obs, err := in.Observe(ctx, ns)
	if err != nil {
		return nil, obs, err
	}
	return in.Discovery(), obs, nil
}

func (p *Purger) contentDeleter(disc *kube.Discovery, ops deletion.Operations, pods deletion.PodLister) *deletion.ContentDeleter {
	return &deletion.ContentDeleter{Ops: ops, Pods: pods, Resources: disc.Resources, DiscoveryErr: disc.Err, OrderedDeletion: true, Now: p.now}
}

// recordPass fills the report from one pass's result.
func recordPass(r *Report, rec *recorder, result deletion.Result) {
	r.Steps = rec.steps
	r.Remaining = []Remaining{}
	for gvr, n := range result.Totals.GVRToNumRemaining {
		r.Remaining = append(r.Remaining, Remaining{Resource: resourceName(gvr), Count: n, Finalizers: rec.finalizers[gvr]})
	}
	sort.Slice(r.Remaining, func(i, j int) bool { return r.Remaining[i].Resource < r.Remaining[j].Resource })
	r.Conditions = []Condition{}
	for _, c := range result.Conditions {
		r.Conditions = append(r.Conditions, Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
}

// finalizeDecision says whether a pass's result lets the namespace be
// finalized, as upstream decides (nothing left, no error), or with the
// discovery escalation (the only error is a partial discovery failure).
func (p *Purger) finalizeDecision(result deletion.Result, disc *kube.Discovery) (bool, string) {
	if result.Estimate > 0 {
		return false, fmt.Sprintf("content remains (estimate %ds)", result.Estimate)
	}
	if result.Err == nil {
		return true, "nothing remains"
	}
	if discoveryOnly(result.Err, disc) {
		if p.Opts.FinalizeDespiteDiscoveryFailure {
			return true, "discovery failed for some groups; finalizing anyway as asked (their content stays orphaned in storage)"
		}
		return false, "discovery failed for some groups: the controller never finalizes then (add --finalize-despite-discovery-failure to do it anyway)"
	}
	return false, "deletion errors: " + result.Err.Error()
}

// discoveryOnly tells whether a pass's only error is the partial discovery
// failure.
func discoveryOnly(err error, disc *kube.Discovery) bool {
	var agg interface{ Errors() []error }
	if disc.Err == nil || !errors.As(err, &agg) {
		return false
	}
	for _, e := range agg.Errors() {
		var gd *discovery.ErrGroupDiscoveryFailed
		if !errors.As(e, &gd) {
			return false
		}
	}
	return true
}

func dropTokens(ns *v1.Namespace, all bool) map[v1.FinalizerName]bool {
	drop := map[v1.FinalizerName]bool{deletion.FinalizerToken: true}
	if all {
		for _, f := range ns.Spec.Finalizers {
			drop[f] = true
		}
	}
	return drop
}

func tokenNames(drop map[v1.FinalizerName]bool, ns *v1.Namespace) []string {
	var out []string
	for _, f := range ns.Spec.Finalizers {
		if drop[f] {
			out = append(out, string(f))
		}
	}
	return out
}

func (p *Purger) progress(format string, args ...any) {
	if p.Opts.Progress != nil {
		fmt.Fprintf(p.Opts.Progress, format+"\n", args...)
	}
}
