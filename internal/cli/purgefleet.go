package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/consent"
	"github.com/ns-doctor/ns-doctor/internal/fleet"
	"github.com/ns-doctor/ns-doctor/internal/kube"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// clusterPurge is one cluster of a purge across clusters: what -l or
// --all-terminating chose there, and what became of it.
type clusterPurge struct {
	fleet.Context
	clients *kube.Clients
	names   []string
	err     error
	results []purge.Result
}

// runFleet purges the namespaces -l or --all-terminating choose in each
// chosen cluster: every cluster is read first, one confirmation names
// them all, then each cluster runs on its own, at once.
func (o *PurgeOptions) runFleet(ctx context.Context) error {
	chosen, err := o.Fleet.contexts(o.factory)
	if err != nil {
		return err
	}
	clusters := o.readFleet(ctx, chosen)
	total := 0
	for _, c := range clusters {
		total += len(c.names)
	}
	if o.Purge.DryRun == purge.DryRunNone && total > 0 {
		for _, c := range clusters {
			if c.err != nil || len(c.names) == 0 {
				continue
			}
			if err := o.precheck(ctx, c.clients); err != nil {
				return fmt.Errorf("context %q: %w", c.Name, err)
			}
		}
		if err := o.confirmFleet(ctx, clusters); err != nil {
			return err
		}
	}
	now := time.Now()
	stop := o.showProgress(true, "")
	var g errgroup.Group
	g.SetLimit(fleet.Concurrency)
	for _, c := range clusters {
		if c.err != nil || len(c.names) == 0 {
			continue
		}
		g.Go(func() error {
			c.results = o.purgeCluster(ctx, c, now)
			return nil
		})
	}
	_ = g.Wait() // each result carries its own error
	stop()
	return o.finishFleet(clusters)
}

// readFleet connects to each cluster and lists what it would purge there.
func (o *PurgeOptions) readFleet(ctx context.Context, chosen []fleet.Context) []*clusterPurge {
	out := make([]*clusterPurge, len(chosen))
	var g errgroup.Group
	g.SetLimit(fleet.Concurrency)
	for i, c := range chosen {
		out[i] = &clusterPurge{Context: c}
		g.Go(func() error {
			cp := out[i]
			if cp.clients, cp.err = o.factory.ClientsFor(contextFlags(o.flags, c.Name)); cp.err == nil {
				cp.names, cp.err = o.chosen(ctx, cp.clients)
			}
			return nil
		})
	}
	_ = g.Wait()
	return out
}

// purgeCluster runs one cluster's namespaces, its backups under a folder
// of its context: the same namespace name in two clusters never shares one.
func (o *PurgeOptions) purgeCluster(ctx context.Context, c *clusterPurge, now time.Time) []purge.Result {
	opts := o.Purge
	opts.Context, opts.Cluster = c.Name, c.Cluster
	base := opts.BackupDir
	if base != "" {
		base = filepath.Join(base, c.Name)
	} else if dir, err := backup.DefaultDir(c.Name, now); err == nil {
		base = dir
	}
	opts.BackupDir = base
	if len(c.names) == 1 && base != "" {
		opts.BackupDir = filepath.Join(base, c.names[0])
	}
	var err error
	if opts.OrderedDeletion, err = o.Ordering.resolve(ctx, c.clients); err != nil {
		out := make([]purge.Result, len(c.names))
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	p := &purge.Purger{Clients: c.clients, Opts: opts, Inspector: prefetchDiscovery(ctx, c.clients)}
	return p.RunMany(ctx, c.names)
}

// confirmFleet asks once, naming every cluster and its namespaces; the
// answer is their total number.
func (o *PurgeOptions) confirmFleet(ctx context.Context, clusters []*clusterPurge) error {
	if o.Flags.Yes {
		for _, c := range clusters {
			if len(c.names) > 0 {
				_, _ = fmt.Fprintf(o.ErrOut, "purge --force --yes: writing to context %q, cluster %q (%d namespace(s))\n", c.Name, c.Cluster, len(c.names))
			}
		}
		return nil
	}
	if !isTerminal(o.In) {
		return usageErrorf("refusing to act without confirmation and no terminal to ask on: add --yes (or run the plan first: drop --force)")
	}
	req := o.fleetConfirmation(clusters)
	_, _ = fmt.Fprint(o.ErrOut, req.Prompt())
	return o.expectAnswer(ctx, req)
}

// fleetConfirmation is what the fleet's confirmation says: every cluster
// with its namespaces, asked once.
func (o *PurgeOptions) fleetConfirmation(clusters []*clusterPurge) consent.Request {
	c := printer.FleetConfirmation{Consent: o.Purge.Escalations.Consent()}
	for _, cl := range clusters {
		c.Clusters = append(c.Clusters, printer.FleetTarget{Context: cl.Name, Cluster: cl.Cluster, Names: cl.names})
	}
	return c.Request()
}

// finishFleet prints every cluster's reports as one list (the human view:
// a block per cluster) and exits with the worst: a cluster not read is an
// error, as for explain.
func (o *PurgeOptions) finishFleet(clusters []*clusterPurge) error {
	pr := o.PrintFlags.toPrinter(o.Out)
	var reports []*purge.Report
	var errs []error
	var names, failed []string
	for _, c := range clusters {
		if c.err != nil {
			failed = append(failed, fmt.Sprintf("%s (%s)", c.Name, strings.ToLower(string(fleet.ReachOf(c.err)))))
			continue
		}
		var mine []*purge.Report
		for i, res := range c.results {
			err := purgeError(c.names[i], res)
			if err == nil || res.Report != nil && !isPreflight(err) {
				mine = append(mine, res.Report)
			}
			errs, names = append(errs, err), append(names, c.Name+"/"+c.names[i])
		}
		if !o.PrintFlags.isMachine() && len(mine) > 0 {
			if err := pr.Purges(o.Out, mine); err != nil {
				return err
			}
			_, _ = fmt.Fprintln(o.Out)
		}
		reports = append(reports, mine...)
	}
	if o.PrintFlags.isMachine() {
		if err := pr.Purges(o.Out, reports); err != nil {
			return err
		}
	} else if len(reports) == 0 {
		_, _ = fmt.Fprintf(o.Out, "no namespace to purge in %d cluster(s): none is terminating (among those selected)\n", len(clusters))
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d clusters could not be read: %s; the others' namespaces are above", len(failed), len(clusters), strings.Join(failed, ", "))
	}
	if len(errs) == 0 {
		return nil
	}
	return worst(errs, names)
}
