// Package fleet runs one read over many clusters at once, each under its
// own kubeconfig context: a cluster that cannot be reached or read is
// reported as such and never stops the others.
package fleet

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ns-doctor/ns-doctor/internal/apierror"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// Concurrency bounds the clusters read at once: each read is itself a
// burst of requests, and they share this machine's CPU and network.
const Concurrency = 8

// Context is one kubeconfig context and the cluster it names.
type Context struct {
	Name    string `json:"context"`
	Cluster string `json:"cluster,omitempty"`
}

// Contexts are the kubeconfig's contexts whose names match any of the
// patterns (path.Match globs, as a shell's), sorted by name; every context
// with no pattern. A pattern that is not a valid glob is an error.
func Contexts(cfg clientcmdapi.Config, patterns []string) ([]Context, error) {
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("invalid context pattern %q: %w", p, err)
		}
	}
	var out []Context
	for name, c := range cfg.Contexts {
		if len(patterns) == 0 || slices.ContainsFunc(patterns, func(p string) bool { ok, _ := path.Match(p, name); return ok }) {
			out = append(out, Context{Name: name, Cluster: c.Cluster})
		}
	}
	slices.SortFunc(out, func(a, b Context) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Reach says whether a cluster could be read.
type Reach string

// Reach states: Forbidden and Unauthorized are the cluster's answer;
// Unreachable is anything else that stopped the read (no answer in
// --request-timeout, a refused connection, a bad kubeconfig entry).
const (
	Reachable    Reach = "Reachable"
	Unreachable  Reach = "Unreachable"
	Forbidden    Reach = "Forbidden"
	Unauthorized Reach = "Unauthorized"
)

// Result is one cluster's reports, or why it could not be read.
type Result struct {
	Context
	Reach   Reach
	Reports []diagnose.Report
	Err     error
}

// Read runs read for each context at once (Concurrency at most), and
// returns a result per context, in their order.
func Read(ctx context.Context, contexts []Context, read func(context.Context, Context) ([]diagnose.Report, error)) []Result {
	out := make([]Result, len(contexts))
	var g errgroup.Group
	g.SetLimit(Concurrency)
	for i, c := range contexts {
		g.Go(func() error {
			reports, err := read(ctx, c)
			out[i] = Result{Context: c, Reach: ReachOf(err), Reports: reports, Err: err}
			return nil
		})
	}
	_ = g.Wait() // each result carries its own error
	return out
}

// ReachOf says whether a cluster could be read, from the error reading it.
func ReachOf(err error) Reach {
	if err == nil {
		return Reachable
	}
	switch apierror.Classify(err).Kind {
	case apierror.Forbidden, apierror.NamespaceTerminating:
		return Forbidden
	case apierror.Unauthorized:
		return Unauthorized
	}
	return Unreachable
}

// Failed are the results of the clusters that could not be read.
func Failed(results []Result) []Result {
	var out []Result
	for _, r := range results {
		if r.Err != nil {
			out = append(out, r)
		}
	}
	return out
}
