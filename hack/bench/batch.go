package main

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// BatchResult is purge of a batch of namespaces an uninstalled operator
// left stuck: purge -l over the batch (this tree's and the -purge-compare
// build's) against the per-namespace loop users write, and explain with
// no name on each fixture (purge-1000).
type BatchResult struct {
	Namespaces, Types, CRDs int
	Holds                   string // what each namespace holds, in words
	Builds                  floats
	Settle, LoopMax         time.Duration
	Explain, One, Compare   Series
	Loops                   []Loop
	OneCommand, LoopCommand string
}

// Loop is one run of the per-namespace loop: Ran namespaces purged one
// command each, measured; Of is the batch's size.
type Loop struct {
	Ran, Of int
	Sample
}

// Scaled is the loop over all Of namespaces: measured when it ran them
// all, else Ran's time, CPU and requests scaled up.
func (l Loop) Scaled() Sample {
	f := float64(l.Of) / float64(l.Ran)
	return Sample{Seconds: l.Seconds * f, Requests: l.Requests * f, Lists: l.Lists * f, Discoveries: l.Discoveries * f, CPU: l.CPU * f, ServerCPU: l.ServerCPU * f, MaxRSS: l.MaxRSS}
}

// Loop is the per-namespace loop's runs, each scaled up to all the
// namespaces (nil when it did not run).
func (r *BatchResult) Loop() *Series {
	if len(r.Loops) == 0 {
		return nil
	}
	loop := &Series{Name: fmt.Sprintf("the per-namespace loop, %d commands", r.Namespaces)}
	if r.Loops[0].Ran < r.Loops[0].Of {
		loop.Name += fmt.Sprintf(" (%d measured, scaled up)", r.Loops[0].Ran)
	}
	for _, l := range r.Loops {
		loop.add(l.Scaled())
	}
	return loop
}

func (r *BatchResult) Table() []*Series {
	return slices.DeleteFunc([]*Series{&r.Explain, &r.One, &r.Compare, r.Loop()}, func(s *Series) bool { return s == nil || len(s.Runs) == 0 })
}

// batchSpec is how a batch phase builds and purges its namespaces.
type batchSpec struct {
	name, holds       string
	n, runs, sample   int      // sample: the loop's namespaces, scaled up to all (0: all)
	plugin, selectors []string // how commands reach the plugin; flags beside -l
	finalizer         string   // --remove-finalizers
	explain, compare  bool
	settle            time.Duration
	fill              func(ns string) error
}

// batch builds, per run and contender, a fresh batch labelled batch=ID,
// explains it if asked, lets the contender empty it and checks every
// namespace is gone.
func (b *bench) batch(ctx context.Context, sp batchSpec) (*BatchResult, error) {
	types, err := b.fx.types()
	if err != nil {
		return nil, err
	}
	res := &BatchResult{Namespaces: sp.n, Types: types, CRDs: len(b.fx.crds), Holds: sp.holds, Settle: sp.settle, LoopMax: b.o.p1kLoopMax}
	named(&res.Explain, fmt.Sprintf("`explain` (no name, %d terminating)", sp.n))
	named(&res.One, "`purge -l`, one run")
	named(&res.Compare, "`purge -l`, the -purge-compare build")
	one := func(plugin []string, id, backup string) []string {
		return append(slices.Concat(plugin, []string{"purge", "-l", "batch=" + id}, sp.selectors), "--force", "--yes", "--remove-finalizers="+sp.finalizer, "--backup-dir", backup)
	}
	shown := []string{strings.Join(sp.plugin, " ")}
	if sp.plugin[0] == b.plugin {
		shown = []string{"kubectl-ns_doctor"}
	}
	res.OneCommand, res.LoopCommand = strings.Join(one(shown, "ID", "DIR"), " "), strings.Join(perNamespace(shown, []string{"NAME"}, sp.finalizer, "DIR")[0], " ")
	who := []string{"one", "loop"}
	if sp.compare && b.compare != "" {
		who = append(who, "compare")
	}
	for r := range sp.runs {
		for _, w := range order(r, len(who)) {
			id := fmt.Sprintf("%s-%d-%d", sp.name, r, w)
			label, names, backup, t0 := sp.name+" "+id+" "+who[w], numbered(id, sp.n, 4), filepath.Join(b.tmp, "backup", id), time.Now()
			if err := b.fx.stuckBatch(ctx, names, map[string]string{"batch": id}, sp.fill); err != nil {
				return nil, err
			}
			res.Builds = append(res.Builds, since(t0))
			time.Sleep(sp.settle) // the API server's own work after the burst is not the commands'
			if sp.explain {
				x, err := b.meter.run(ctx, [][]string{{b.plugin, "explain"}}, 3)
				if err != nil {
					return nil, err
				}
				res.Explain.add(x)
				logf("[%s] explain (no name) %.2fs, %.0f requests, %d KiB", label, x.Seconds, x.Requests, x.MaxRSS)
				time.Sleep(settle)
			}
			var x Sample
			switch who[w] {
			case "one":
				x, err = b.meter.run(ctx, [][]string{one(sp.plugin, id, backup)}, 0)
				res.One.add(x)
			case "compare":
				x, err = b.meter.run(ctx, [][]string{one([]string{b.compare}, id, backup)}, 0)
				res.Compare.add(x)
			case "loop":
				var l Loop
				l, err = b.loop(ctx, sp, names, backup, one(sp.plugin, id, backup))
				res.Loops, x = append(res.Loops, l), l.Sample
			}
			if err == nil {
				err = b.fx.gone(ctx, "batch="+id)
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", label, err)
			}
			logf("[%s] %.2fs, %.0f requests, %.0f discoveries, %d KiB", label, x.Seconds, x.Requests, x.Discoveries, x.MaxRSS)
		}
	}
	return res, nil
}

// loop runs the per-namespace loop on a sample, then on the rest too
// when the sample says the whole loop takes under -purge1000-loop-max;
// whatever the loop left is purged, unmeasured, with rest.
func (b *bench) loop(ctx context.Context, sp batchSpec, names []string, backup string, rest []string) (l Loop, err error) {
	l.Ran, l.Of = len(names), len(names)
	if sp.sample > 0 {
		l.Ran = min(l.Of, sp.sample)
	}
	if l.Sample, err = b.meter.run(ctx, perNamespace(sp.plugin, names[:l.Ran], sp.finalizer, backup), 0); err != nil {
		return l, err
	}
	if l.Ran < l.Of && l.Scaled().Seconds < b.o.p1kLoopMax.Seconds() {
		more, err := b.meter.run(ctx, perNamespace(sp.plugin, names[l.Ran:], sp.finalizer, backup), 0)
		l.Ran, l.Sample = l.Of, addSamples(l.Sample, more)
		return l, err
	}
	if l.Ran < l.Of {
		return l, b.meter.exec(ctx, rest...)
	}
	return l, nil
}

// addSamples is a and b measured one after the other, as one.
func addSamples(a, b Sample) Sample {
	a.ByVerb = maps.Clone(a.ByVerb)
	for k, v := range b.ByVerb {
		a.ByVerb[k] += v
	}
	a.Seconds, a.Requests, a.Lists, a.Discoveries, a.CPU, a.ServerCPU, a.MaxRSS = a.Seconds+b.Seconds, a.Requests+b.Requests,
		a.Lists+b.Lists, a.Discoveries+b.Discoveries, a.CPU+b.CPU, a.ServerCPU+b.ServerCPU, max(a.MaxRSS, b.MaxRSS)
	return a
}

// perNamespace is the shell loop users write, as commands: purge NAME
// --force --yes --remove-finalizers=F for each, through plugin (kubectl
// ns-doctor, or the binary itself), each backed up under backup/NAME.
func perNamespace(plugin, names []string, finalizer, backup string) [][]string {
	out := make([][]string, len(names))
	for i, ns := range names {
		out[i] = append(slices.Clone(plugin), "purge", ns, "--force", "--yes", "--remove-finalizers="+finalizer, "--backup-dir", filepath.Join(backup, ns))
	}
	return out
}

// operatorGroup is the API group of an operator that was uninstalled with
// its custom resources still out there: nobody removes its finalizer.
const operatorGroup = "uninstalled.bench.ns-doctor.io"

// purgeMany batches namespaces as test/purge/many_test.go does.
func (b *bench) purgeMany(ctx context.Context) (*BatchResult, error) {
	if err := b.fx.ensureTypes(ctx, 150); err != nil {
		return nil, err
	}
	gvr, err := b.fx.EnsureCRD(ctx, operatorGroup, "Leftover", "leftovers")
	if err != nil {
		return nil, err
	}
	return b.batch(ctx, batchSpec{name: "pmany", n: b.o.manyPurgeNS, runs: b.o.manyPurgeRuns, plugin: []string{"kubectl", "ns-doctor"},
		selectors: []string{"--all-terminating"}, finalizer: operatorGroup + "/*", settle: settle,
		holds: "one custom resource of `leftovers." + operatorGroup + "` with finalizer `" + operatorGroup + "/cleanup` and 5 plain ConfigMaps",
		fill: func(ns string) error {
			if err := b.fx.CreateCustomResource(ctx, gvr, "Leftover", ns, "leftover", operatorGroup+"/cleanup"); err != nil {
				return err
			}
			return b.fx.configMaps(ctx, ns, "plain", 5)
		}})
}

// purge1000 is issue #26's target: a thousand such namespaces, explained
// and purged by the plugin binary as a script would run it.
func (b *bench) purge1000(ctx context.Context) (*BatchResult, error) {
	const finalizer = "example.com/uninstalled"
	if err := b.fx.ensureTypes(ctx, b.o.p1kTypes); err != nil {
		return nil, err
	}
	return b.batch(ctx, batchSpec{name: "p1k", n: b.o.p1kNS, runs: b.o.p1kRuns, sample: b.o.p1kLoopSample, plugin: []string{b.plugin},
		finalizer: finalizer, explain: true, compare: true, settle: 5 * time.Second,
		holds: "3 ConfigMaps with finalizer `" + finalizer + "` and one plain ConfigMap",
		fill: func(ns string) error {
			if err := b.fx.configMaps(ctx, ns, "held", 3, finalizer); err != nil {
				return err
			}
			return b.fx.configMaps(ctx, ns, "plain", 1)
		}})
}
