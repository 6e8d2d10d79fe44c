package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"
)

const (
	// p1kFinalizer is the uninstalled operator's finalizer on the
	// ConfigMaps of the purge-1000 phase.
	p1kFinalizer = "example.com/uninstalled"
	// p1kHeld ConfigMaps per namespace carry it, beside one plain one.
	p1kHeld = 3
	// p1kSelector chooses the phase's namespaces.
	p1kSelector = "team=ci"
	// p1kSettle is the pause after a fixture of a thousand namespaces is
	// built: the API server's own work after the burst (watch cache, GC)
	// is not the measured command's.
	p1kSettle = 5 * time.Second
)

// p1kLoop is one run of the per-namespace loop: Ran namespaces purged one
// command each, measured; Of is the fixture's size.
type p1kLoop struct {
	Ran, Of int
	s       sample // Seconds and requests of the Ran commands
}

// Estimate is the loop's time over all Of namespaces: measured when it
// ran them all, else Ran's time scaled up.
func (l p1kLoop) Estimate() float64 { return l.s.Seconds * float64(l.Of) / float64(l.Ran) }

// Extrapolated tells whether Estimate is scaled up from a sample.
func (l p1kLoop) Extrapolated() bool { return l.Ran < l.Of }

// p1kResult is what the purge-1000 phase measured.
type p1kResult struct {
	N, Types int
	pops     []float64 // fixture build seconds
	explain  []sample  // explain with no name, once per fixture
	purge    []sample  // purge -l, this tree
	compare  []sample  // purge -l, the -purge-compare build
	loops    []p1kLoop
	argv     map[string][]string // one command line of each contender, for the report
}

// purge1000 is issue #26's target: a thousand namespaces an uninstalled
// operator left stuck, each with p1kHeld ConfigMaps held by p1kFinalizer
// and one plain ConfigMap, labelled team=ci, the namespace controller
// stopped. Per run it builds the fixture afresh for each contender and
// measures, side by side: explain with no name (on every fixture, before
// the contender), `purge -l team=ci` (this tree's and the -purge-compare
// build's) and the per-namespace loop users write, on a sample scaled up
// unless the whole loop takes under -purge1000-loop-max.
func (b *bench) purge1000(ctx context.Context) error {
	o := b.o
	if err := b.fx.ensureTypes(ctx, o.p1kTypes); err != nil {
		return err
	}
	types, _, err := b.fx.listPages(ctx, "default")
	if err != nil {
		return err
	}
	res := &p1kResult{N: o.p1kNS, Types: types, argv: map[string][]string{}}
	who := []string{"purge", "loop"}
	if b.compare != "" {
		who = []string{"purge", "compare", "loop"}
	}
	for r := range o.p1kRuns {
		for k := range who {
			// Each run starts with a different contender, as elsewhere.
			if err := b.p1kOne(ctx, res, r, who[(r+k)%len(who)]); err != nil {
				return fmt.Errorf("purge-1000, run %d: %w", r+1, err)
			}
		}
	}
	b.rep.purge1000Section(res, b.compare != "")
	return nil
}

// p1kOne builds a fresh fixture, explains it and lets one contender
// empty it.
func (b *bench) p1kOne(ctx context.Context, res *p1kResult, r int, who string) error {
	label := fmt.Sprintf("purge-1000 run %d %s", r+1, who)
	prefix := fmt.Sprintf("p1k-%d%s", r, who[:1])
	t0 := time.Now()
	names, err := b.ciFixture(ctx, prefix, res.N)
	if err != nil {
		return err
	}
	res.pops = append(res.pops, since(t0))
	logf("[%s] %d namespaces (%d ConfigMaps each) built in %.1fs", label, res.N, p1kHeld+1, since(t0))
	backup := filepath.Join(b.tmp, "backup", prefix)
	defer func() { _ = os.RemoveAll(backup) }()

	time.Sleep(p1kSettle)
	explain := []string{b.plugin, "explain"}
	res.argv["explain"] = explain
	s, err := b.meter.run(ctx, explain, 3)
	if err != nil {
		return err
	}
	res.explain = append(res.explain, s)
	logf("[%s] explain (no name) %7.2fs %6.0f requests %7d KiB", label, s.Seconds, s.Requests, s.MaxRSS)

	time.Sleep(settle)
	switch who {
	case "purge", "compare":
		plugin := b.plugin
		if who == "compare" {
			plugin = b.compare
		}
		argv := []string{plugin, "purge", "-l", p1kSelector, "--force", "--yes", "--remove-finalizers=" + p1kFinalizer, "--backup-dir", backup}
		res.argv[who] = append(slices.Clone(argv[:len(argv)-1]), "DIR")
		s, err := b.meter.run(ctx, argv)
		if err != nil {
			return err
		}
		if err := b.batchGone(ctx, p1kSelector, res.N); err != nil {
			return err
		}
		if who == "purge" {
			res.purge = append(res.purge, s)
		} else {
			res.compare = append(res.compare, s)
		}
		logf("[%s] purge -l %7.2fs %6.0f requests %7d KiB (CPU %.2fs, server CPU %.2fs)", label, s.Seconds, s.Requests, s.MaxRSS, s.CPU, s.ServerCPU)
	case "loop":
		l, err := b.p1kLoop(ctx, label, names, backup)
		if err != nil {
			return err
		}
		res.loops = append(res.loops, l)
		res.argv["loop"] = perNamespaceArgvs([]string{b.plugin}, []string{"$ns"}, p1kFinalizer, "DIR")[0]
	}
	return nil
}

// p1kLoop runs the per-namespace loop on a sample, then on the rest too
// when the sample says the whole loop takes under -purge1000-loop-max;
// whatever the loop left is purged (unmeasured) with purge -l.
func (b *bench) p1kLoop(ctx context.Context, label string, names []string, backup string) (p1kLoop, error) {
	n := len(names)
	if b.o.p1kLoopSample > 0 {
		n = min(n, b.o.p1kLoopSample)
	}
	l := p1kLoop{Ran: n, Of: len(names)}
	var err error
	l.s, err = b.meter.runAll(ctx, perNamespaceArgvs([]string{b.plugin}, names[:n], p1kFinalizer, backup))
	if err != nil {
		return l, err
	}
	logf("[%s] per-namespace loop over %d: %.2fs (%.3fs each), %.0f requests; %.0fs for all %d at that pace",
		label, n, l.s.Seconds, l.s.Seconds/float64(n), l.s.Requests, l.Estimate(), len(names))
	if n < len(names) && l.Estimate() < b.o.p1kLoopMax.Seconds() {
		rest, err := b.meter.runAll(ctx, perNamespaceArgvs([]string{b.plugin}, names[n:], p1kFinalizer, backup))
		if err != nil {
			return l, err
		}
		l.s, l.Ran = addSamples(l.s, rest), len(names)
		logf("[%s] per-namespace loop over all %d: %.2fs, %.0f requests", label, len(names), l.s.Seconds, l.s.Requests)
	}
	if l.Ran < len(names) {
		// Not measured: the rest of the fixture goes before the next one.
		t0 := time.Now()
		if err := b.meter.exec(ctx, nil, b.plugin, "purge", "-l", p1kSelector, "--force", "--yes", "--remove-finalizers="+p1kFinalizer, "--backup-dir", backup); err != nil {
			return l, err
		}
		logf("[%s] the other %d purged with purge -l (unmeasured) in %.1fs", label, len(names)-l.Ran, since(t0))
	}
	return l, b.batchGone(ctx, p1kSelector, len(names))
}

// addSamples is a and b measured one after the other, as one.
func addSamples(a, b sample) sample {
	out := sample{Seconds: a.Seconds + b.Seconds, Requests: a.Requests + b.Requests, Lists: a.Lists + b.Lists,
		ByVerb: maps.Clone(a.ByVerb), CPU: a.CPU + b.CPU, ServerCPU: a.ServerCPU + b.ServerCPU, MaxRSS: max(a.MaxRSS, b.MaxRSS)}
	if out.ByVerb == nil {
		out.ByVerb = map[string]float64{}
	}
	for k, v := range b.ByVerb {
		out.ByVerb[k] += v
	}
	return out
}

// ciFixture builds n namespaces prefix-NNNN labelled team=ci, each with
// p1kHeld ConfigMaps held by p1kFinalizer and one plain ConfigMap, then
// deleted (content first: NamespaceLifecycle). With the namespace
// controller stopped they stay Terminating with all four.
func (b *bench) ciFixture(ctx context.Context, prefix string, n int) ([]string, error) {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%04d", prefix, i)
	}
	labels := map[string]string{"team": "ci"}
	err := parallel(ctx, n, createWorkers, func(i int) error {
		ns := names[i]
		if err := b.fx.CreateNamespaceWithLabels(ctx, ns, labels); err != nil {
			return err
		}
		for j := range p1kHeld {
			if err := b.fx.CreateConfigMap(ctx, ns, fmt.Sprintf("held-%d", j), nil, p1kFinalizer); err != nil {
				return err
			}
		}
		if err := b.fx.CreateConfigMap(ctx, ns, "plain", nil); err != nil {
			return err
		}
		return b.fx.DeleteNamespace(ctx, ns)
	})
	return slices.Clip(names), err
}
