package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// purgeRun is what one path (loopback or the link) measured in the purge
// phase, run after run.
type purgeRun struct {
	path  path
	pops  []float64 // seconds to build each fixture
	ctrl  []float64 // namespace controller: delete to gone
	pur   []float64 // purge: delete to exit
	floor []float64 // purge's floor: delete to exit
	ps    []sample  // the purge command alone
	fs    []sample  // the floor command alone
	cmp   []float64 // the -purge-compare build: delete to exit
	cs    []sample  // the -purge-compare build alone
}

// purgeVsController empties the same content three times per path and
// run: by the real namespace controller (kube-controller-manager, default
// settings, always on its direct in-cluster connection), by `kubectl
// ns-doctor purge --force` and by purge's floor (hack/bench/floor -purge),
// the last two with the controller stopped. Objects have no finalizers and
// no pods are bound to nodes, so all can finish. On the link, the user's
// `kubectl delete namespace` goes through it too, for every contender.
func (b *bench) purgeVsController(ctx context.Context, s size) error {
	c := content{Objects: s.Objects}
	var runs []*purgeRun
	for _, p := range b.paths() {
		runs = append(runs, &purgeRun{path: p})
	}
	for r := range b.o.purgeRuns {
		// Each run starts with a different path and contender, so drift
		// (compaction, the API server's GC) hits them alike.
		for k := range runs {
			pr := runs[(r+k)%len(runs)]
			label := "purge " + pr.path.short
			names := map[string]string{}
			for _, who := range b.purgeContenders() {
				ns := fmt.Sprintf("%s-%s-%d", who, pr.path.short, r)
				t0 := time.Now()
				if err := b.fx.populate(ctx, ns, c); err != nil {
					return err
				}
				pr.pops = append(pr.pops, since(t0))
				names[who] = ns
			}
			logf("[%s] run %d: %d fixtures of %d objects built in %s s", label, r+1, len(names), c.Objects, list(pr.pops[len(pr.pops)-len(names):], "%.1f"))
			steps := map[string]func() error{
				"ctrl": func() error {
					t, err := b.timeController(ctx, pr.path.m, names["ctrl"])
					pr.ctrl = append(pr.ctrl, t)
					logf("[%s] run %d: namespace controller %.2fs", label, r+1, t)
					return err
				},
				"purge": func() error {
					ns := names["purge"]
					t, smp, err := b.timeCommand(ctx, pr.path.m, ns, "kubectl", "ns-doctor", "purge", ns, "--force", "--yes", "-o", "json", "--backup-dir", filepath.Join(b.tmp, "backup", ns))
					pr.pur, pr.ps = append(pr.pur, t), append(pr.ps, smp)
					logf("[%s] run %d: purge %.2fs (command %.2fs, CPU %.2fs, server CPU %.2fs, %.0f requests, %d KiB)", label, r+1, t, smp.Seconds, smp.CPU, smp.ServerCPU, smp.Requests, smp.MaxRSS)
					return err
				},
				"compare": func() error {
					ns := names["compare"]
					t, smp, err := b.timeCommand(ctx, pr.path.m.withPath(filepath.Dir(b.compare)), ns,
						"kubectl", "ns-doctor", "purge", ns, "--force", "--yes", "-o", "json", "--backup-dir", filepath.Join(b.tmp, "backup", ns))
					pr.cmp, pr.cs = append(pr.cmp, t), append(pr.cs, smp)
					logf("[%s] run %d: purge (-purge-compare) %.2fs (command %.2fs, CPU %.2fs, server CPU %.2fs, %.0f requests, %d KiB)", label, r+1, t, smp.Seconds, smp.CPU, smp.ServerCPU, smp.Requests, smp.MaxRSS)
					return err
				},
				"floor": func() error {
					ns := names["floor"]
					t, smp, err := b.timeCommand(ctx, pr.path.m, ns, b.floor, "-purge", ns)
					pr.floor, pr.fs = append(pr.floor, t), append(pr.fs, smp)
					logf("[%s] run %d: floor %.2fs (command %.2fs, CPU %.2fs, server CPU %.2fs, %.0f requests)", label, r+1, t, smp.Seconds, smp.CPU, smp.ServerCPU, smp.Requests)
					return err
				},
			}
			// Each contender takes each place in turn: the first (right
			// after the fixtures are built), and the one right after the
			// controller, whose run leaves the API server busier. The
			// order rotates, and every other cycle it runs backwards, so
			// over len(who)*2 runs every order is run once (for 3).
			who := b.purgeContenders()
			if (r/len(who))%2 == 1 {
				who = slices.Clone(who)
				slices.Reverse(who)
			}
			for i := range who {
				if err := steps[who[(r+i)%len(who)]](); err != nil {
					return err
				}
			}
		}
	}
	b.rep.purgeSection(s, b.o.linkDelay, len(b.fx.crds), runs)
	if b.o.purgeLog != "" {
		return b.purgeLogs(ctx, s)
	}
	return nil
}

// purgeContenders are who empties a fixture in each run of the purge
// phase.
func (b *bench) purgeContenders() []string {
	out := []string{"purge", "floor"}
	if b.compare != "" {
		out = append(out, "compare")
	}
	if b.o.purgeController {
		out = append(out, "ctrl")
	}
	return out
}

// timeController times the namespace controller: started (its informers
// and discovery warm up) 10 s before the clock, timed from the delete
// (sent through m) to the namespace gone, polled every 100 ms directly.
func (b *bench) timeController(ctx context.Context, m *meter, ns string) (float64, error) {
	if err := b.cp.StartControllerManager(); err != nil {
		return 0, err
	}
	defer b.cp.StopControllerManager()
	time.Sleep(10 * time.Second)
	t0 := time.Now()
	if err := m.exec(ctx, nil, "kubectl", "delete", "namespace", ns, "--wait=false"); err != nil {
		return 0, err
	}
	if err := b.waitGone(ctx, ns, 15*time.Minute); err != nil {
		return 0, err
	}
	return since(t0), nil
}

// timeCommand times a command that empties and finishes ns, with the
// controller stopped: after a settle pause, from the delete (through m) to
// the command's exit. It returns that time and the command's own sample.
// The meter's reads of /metrics before the command are left out of it:
// the time is the delete's plus the command's own.
func (b *bench) timeCommand(ctx context.Context, m *meter, ns string, argv ...string) (float64, sample, error) {
	time.Sleep(settle)
	t0 := time.Now()
	if err := m.exec(ctx, nil, "kubectl", "delete", "namespace", ns, "--wait=false"); err != nil {
		return 0, sample{}, err
	}
	del := since(t0)
	smp, err := m.run(ctx, argv)
	if err != nil {
		return 0, smp, err
	}
	if err := b.waitGone(ctx, ns, time.Minute); err != nil {
		return 0, smp, fmt.Errorf("%s exited but: %w", strings.Join(argv, " "), err)
	}
	return del + smp.Seconds, smp, nil
}

// purgeLogs runs one more, unmeasured purge --force and floor per path
// with -v=6 (every request with its latency, as kubectl logs them) on the
// same content, and writes each log to -purge-log's folder.
func (b *bench) purgeLogs(ctx context.Context, s size) error {
	if err := os.MkdirAll(b.o.purgeLog, 0o755); err != nil {
		return err
	}
	for _, p := range b.paths() {
		for _, who := range []string{"purge", "floor"} {
			ns := "log-" + who + "-" + p.short
			if err := b.fx.populate(ctx, ns, content{Objects: s.Objects}); err != nil {
				return err
			}
			if err := p.m.exec(ctx, nil, "kubectl", "delete", "namespace", ns, "--wait=false"); err != nil {
				return err
			}
			argv := []string{"kubectl", "ns-doctor", "purge", ns, "--force", "--yes", "-o", "json", "-v=6", "--backup-dir", filepath.Join(b.tmp, "backup", ns)}
			if who == "floor" {
				argv = []string{b.floor, "-purge", "-v=6", ns}
			}
			path := filepath.Join(b.o.purgeLog, who+"-"+p.short+".log")
			f, err := os.Create(path)
			if err != nil {
				return err
			}
			err = p.m.exec(ctx, f, argv...)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			logf("[purge %s] -v=6 log of one %s written to %s", p.short, who, path)
		}
	}
	return nil
}

// explainOverLink measures explain and explain's floor on one stuck
// fixture, on loopback and through the slow link, interleaved.
func (b *bench) explainOverLink(ctx context.Context, s size) error {
	ns, err := b.stuck(ctx, s)
	if err != nil {
		return err
	}
	types, pages, err := b.expectedLists(ctx, ns)
	if err != nil {
		return err
	}
	lp := b.paths()[1]
	cs := []contender{
		{name: "kubectl ns-doctor explain " + ns + " -o json [loopback]", argv: []string{"kubectl", "ns-doctor", "explain", ns, "-o", "json"}, ok: []int{3}},
		{name: "floor (discovery + metadata sweep) [loopback]", argv: []string{b.floor, ns}},
		{name: "kubectl ns-doctor explain " + ns + " -o json [" + lp.name + "]", argv: []string{"kubectl", "ns-doctor", "explain", ns, "-o", "json"}, ok: []int{3}, m: lp.m},
		{name: "kubectl-ns_doctor explain " + ns + " -o json (plugin binary) [" + lp.name + "]", argv: []string{b.plugin, "explain", ns, "-o", "json"}, ok: []int{3}, m: lp.m},
		{name: "floor (discovery + metadata sweep) [" + lp.name + "]", argv: []string{b.floor, ns}, m: lp.m},
		// The usual shell loop, once each way: over the link every kubectl
		// it starts pays its own connection, handshake and list in round
		// trips, which is what a user on a laptop waits for.
		{name: "shell recipe [loopback]", argv: []string{"bash", "-c", shellRecipe(ns)}, ok: []int{123}, maxRuns: 1},
		{name: "shell recipe [" + lp.name + "]", argv: []string{"bash", "-c", shellRecipe(ns)}, ok: []int{123}, maxRuns: 1, m: lp.m},
	}
	if err := b.measureRuns(ctx, "explain "+lp.short, cs, b.runsFor(s)); err != nil {
		return err
	}
	b.rep.explainLinkSection(s, ns, b.o.linkDelay, types, pages, cs)
	return nil
}

// stuck returns the stuck fixture of size s (as explain's phase builds
// it), building it unless this control plane already holds it.
func (b *bench) stuck(ctx context.Context, s size) (string, error) {
	ns := "bench-" + s.Name
	if b.built[ns] {
		return ns, nil
	}
	if err := b.fx.ensureTypes(ctx, s.Types); err != nil {
		return "", err
	}
	c := content{Objects: s.Objects, FinalizerEvery: 10, Pods: 10}
	logf("[%s] creating %d objects (+%d pods) in %s", s.Name, c.Objects, c.Pods, ns)
	t0 := time.Now()
	if err := b.fx.populate(ctx, ns, c); err != nil {
		return "", err
	}
	if err := b.fx.DeleteNamespace(ctx, ns); err != nil {
		return "", err
	}
	logf("[%s] built in %.1fs", s.Name, since(t0))
	b.built[ns] = true
	// One unmeasured floor run lets the API server settle after the
	// burst of creates, as in explainSize.
	if _, err := b.meter.run(ctx, []string{b.floor, ns}); err != nil {
		return "", err
	}
	return ns, nil
}

// purgeMemory measures purge --force's peak memory (and time) on a
// namespace of s's objects, on loopback, the controller stopped.
func (b *bench) purgeMemory(ctx context.Context, s size) error {
	c := content{Objects: s.Objects}
	var pops, totals []float64
	var smps []sample
	for r := range b.o.memoryRuns {
		ns := fmt.Sprintf("memory-%s-%d", s.Name, r)
		t0 := time.Now()
		if err := b.fx.populate(ctx, ns, c); err != nil {
			return err
		}
		pops = append(pops, since(t0))
		logf("[memory] run %d: %d objects built in %.1fs", r+1, c.Objects, pops[r])
		t, smp, err := b.timeCommand(ctx, b.meter, ns, "kubectl", "ns-doctor", "purge", ns, "--force", "--yes", "-o", "json", "--backup-dir", filepath.Join(b.tmp, "backup", ns))
		if err != nil {
			return err
		}
		totals, smps = append(totals, t), append(smps, smp)
		logf("[memory] run %d: purge %.2fs (command %.2fs, %.0f requests, %d KiB)", r+1, t, smp.Seconds, smp.Requests, smp.MaxRSS)
	}
	b.rep.memorySection(s, len(b.fx.crds), pops, totals, smps)
	return nil
}
