package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// explain measures explain of one stuck namespace per size against its
// floor (whose LISTs are the sweep's pages), kubectl's own start-up (to
// read the gap between the first two) and the shell recipe.
func (b *bench) explain(ctx context.Context) error {
	for _, s := range b.o.sizes {
		if err := b.explainOn(ctx, "explain", s, b.paths[:1], 3); err != nil {
			return err
		}
	}
	return nil
}

// explainLink is the same on one stuck fixture, on loopback and through
// the slow link; the recipe once each way: over the link every kubectl the
// loop starts pays its own connection, handshake and list in round trips.
func (b *bench) explainLink(ctx context.Context) error {
	return b.explainOn(ctx, "explain-link", b.size(1), b.paths, 1)
}

func (b *bench) explainOn(ctx context.Context, phase string, s size, paths []path, recipes int) error {
	sec, err := b.stuck(ctx, phase, s)
	var cs []contender
	for _, p := range paths {
		key, on, ns := "", "", sec.Namespace
		if p.m != b.meter {
			key, on, sec.Delay = "link-", " ["+p.name+"]", b.o.linkDelay
		}
		cs = append(cs, b.cmd(sec.series(key+"explain", "`kubectl ns-doctor explain "+ns+" -o json`"+on), p.m, 3, "kubectl", "ns-doctor", "explain", ns, "-o", "json"),
			b.cmd(sec.series(key+"plugin", "`kubectl-ns_doctor explain "+ns+" -o json` (plugin binary)"+on), p.m, 3, b.plugin, "explain", ns, "-o", "json"),
			b.cmd(sec.series(key+"floor", "floor (discovery + metadata sweep)"+on), p.m, 0, b.floor, ns),
			b.cmd(sec.series(key+"version", "`kubectl ns-doctor version` (no API call)"+on), p.m, 0, "kubectl", "ns-doctor", "version"),
			b.recipe(sec.series(key+"recipe", "shell recipe"+on), p.m, ns, recipes))
	}
	if err == nil {
		err = race(ctx, phase+"-"+s.Name, b.runsAt(s), settle, cs...)
	}
	return err
}

// many is explain with no name over many terminating namespaces against
// explain of one of them.
func (b *bench) many(ctx context.Context) (err error) {
	n, c, t0 := b.scaled(50), content{Objects: 20, FinalizerEvery: 4, Pods: 1}, time.Now()
	sec := b.section("many", fmt.Sprintf("%d namespaces", n))
	sec.Namespaces, sec.Content = n, c
	if err = b.fx.ensureTypes(ctx, 150); err == nil {
		err = b.fx.namespaces(ctx, numbered("many", n, 2), nil, false, c)
	}
	sec.Builds = floats{since(t0)}
	if err == nil {
		sec.Types, err = b.fx.types()
	}
	if err != nil {
		return err
	}
	// 3 runs: explain over 50 namespaces is client-rate-limited.
	return race(ctx, "many", b.runs(3), settle,
		b.cmd(sec.series("all", "`kubectl ns-doctor explain -o json`"), b.meter, 3, "kubectl", "ns-doctor", "explain", "-o", "json"),
		b.cmd(sec.series("one", "`kubectl ns-doctor explain many-00 -o json`"), b.meter, 3, "kubectl", "ns-doctor", "explain", "many-00", "-o", "json"))
}

// runsAt is the runs per contender on a fixture of s: fewer at 100k objects.
func (b *bench) runsAt(s size) int {
	if s.Objects >= 100_000 {
		return b.runs(3)
	}
	return b.runs(5)
}

// stuck adds the section of a phase on the stuck namespace of size s,
// built unless this control plane holds it already (the explain phases
// share it).
func (b *bench) stuck(ctx context.Context, phase string, s size) (sec *Section, err error) {
	sec = b.section(phase, s.Name)
	sec.Size, sec.Namespace, sec.Content = s, "bench-"+s.Name, content{Objects: s.Objects, FinalizerEvery: 10, Pods: 10}
	if ns, c, t0 := sec.Namespace, sec.Content, time.Now(); !b.built[ns] {
		if err := b.fx.ensureTypes(ctx, s.Types); err != nil {
			return sec, err
		}
		sec.Builds, t0 = floats{since(t0)}, time.Now()
		logf("[%s] creating %d objects (+%d pods) in %s", s.Name, c.Objects, c.Pods, ns)
		if err := b.fx.namespaces(ctx, []string{ns}, nil, false, c); err != nil {
			return sec, err
		}
		sec.Builds, b.built[ns] = append(sec.Builds, since(t0)), true
		// One unmeasured floor run checks the content is all there, and
		// lets the API server settle after the burst of creates.
		cmd := exec.CommandContext(ctx, b.floor, ns)
		cmd.Env = b.meter.env
		out, err := cmd.Output()
		if got := strings.TrimSpace(string(out)); err != nil || got != fmt.Sprint(c.Objects+c.Pods) {
			return sec, fmt.Errorf("floor counted %q objects in %s (%v), want %d", got, ns, err, c.Objects+c.Pods)
		}
	}
	sec.Types, err = b.fx.types()
	return sec, err
}

// cmd measures argv through m; ok is an exit code it may end with
// besides 0 (explain's 3 on a stuck namespace).
func (b *bench) cmd(s *Series, m *meter, ok int, argv ...string) contender {
	return contender{Series: s, measure: func(ctx context.Context, _ string) (Sample, error) { return m.run(ctx, ok, argv) }}
}

// recipe is the loop users run by hand to see what a namespace holds, at
// most runs times: a kubectl per listable type (its RSS would be the
// shell's, not read).
func (b *bench) recipe(s *Series, m *meter, ns string, runs int) contender {
	c := b.cmd(s, m, 123, "bash", "-c", "kubectl api-resources --verbs=list --namespaced -o name | xargs -n 1 kubectl get --show-kind --ignore-not-found -n "+ns+" >/dev/null 2>&1")
	run := c.measure
	c.max, c.measure = runs, func(ctx context.Context, id string) (Sample, error) {
		x, err := run(ctx, id)
		x.MaxRSS = 0
		return x, err
	}
	return c
}

// purge empties the same content per path, run and contender: by the
// real namespace controller (default settings, on its direct in-cluster
// connection), by purge --force, by the floor and by the -purge-compare
// build, the last three with the controller stopped. Objects have no
// finalizers and no pods are bound to nodes, so all can finish.
func (b *bench) purge(ctx context.Context) error {
	s := b.size(1)
	sec := b.section("purge", s.Name)
	if err := b.fx.ensureTypes(ctx, s.Types); err != nil {
		return err
	}
	sec.Size, sec.CRDs = s, b.fx.crds()
	c, purge, floor := content{Objects: s.Objects}, b.purgeArgv("kubectl", "ns-doctor"), func(ns string) []string { return []string{b.floor, "-purge", ns} }
	var paths [][]contender
	for _, p := range b.paths {
		part, cs := &Section{Phase: "purge", Scope: p.name}, []contender(nil)
		if sec.Parts = append(sec.Parts, part); p.m != b.meter {
			sec.Delay = b.o.linkDelay
		}
		if b.o.controller {
			cs = append(cs, b.emptying(part.series("controller", "namespace controller"), p.m, c, nil))
		}
		cs = append(cs, b.emptying(part.series("purge", "`kubectl ns-doctor purge --force`"), p.m, c, purge),
			b.emptying(part.series("floor", "purge's floor"), p.m, c, floor))
		if b.compare != "" {
			cs = append(cs, b.emptying(part.series("compare", "the -purge-compare build"), p.m.withPath(filepath.Dir(b.compare)), c, purge))
		}
		paths = append(paths, cs)
	}
	for r := range b.runs(6) {
		for k := range paths { // each run starts with a different path
			i := (r + k) % len(paths)
			if err := round(ctx, fmt.Sprintf("purge-%d", i), r, settle, paths[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// purgeMemory is purge --force's peak memory on a big namespace.
func (b *bench) purgeMemory(ctx context.Context) error {
	s := b.size(len(b.o.sizes))
	sec := b.section("purge-memory", fmt.Sprintf("%s, %d objects", s.Name, s.Objects))
	if err := b.fx.ensureTypes(ctx, s.Types); err != nil {
		return err
	}
	sec.Size, sec.CRDs = s, b.fx.crds()
	return race(ctx, "memory", 1, settle, b.emptying(sec.series("purge", "`kubectl ns-doctor purge NAME --force --yes`"), b.meter, content{Objects: s.Objects}, b.purgeArgv("kubectl", "ns-doctor")))
}

// purgeArgv is `purge NS --force` through plugin, backed up apart.
func (b *bench) purgeArgv(plugin ...string) func(ns string) []string {
	return func(ns string) []string {
		return slices.Concat(plugin, []string{"purge", ns, "--force", "--yes", "-o", "json", "--backup-dir", filepath.Join(b.tmp, "backup", ns)})
	}
}

// emptying times argv(NS), a command that empties and finishes NS, on a
// fresh Active namespace of c, with the controller stopped: from the
// delete (through m) to the command's exit, leaving out the meter's reads
// between them. With no argv it times the namespace controller instead:
// started (its informers and discovery warm up) 10 s before the clock,
// from the delete to the namespace gone, polled directly.
func (b *bench) emptying(s *Series, m *meter, c content, argv func(ns string) []string) contender {
	fresh := func(ctx context.Context, ns string) error { return b.fx.namespaces(ctx, []string{ns}, nil, true, c) }
	return contender{Series: s, fresh: fresh, measure: func(ctx context.Context, ns string) (x Sample, err error) {
		if argv == nil {
			if err := b.cp.StartControllerManager(); err != nil {
				return x, err
			}
			defer b.cp.StopControllerManager()
			time.Sleep(10 * time.Second)
		}
		t0 := time.Now()
		if err := m.exec(ctx, "kubectl", "delete", "namespace", ns, "--wait=false"); err != nil {
			return x, err
		}
		del := since(t0)
		if argv == nil {
			err = b.fx.waitGone(ctx, ns, 15*time.Minute)
			return Sample{FromDelete: since(t0)}, err
		}
		if x, err = m.run(ctx, 0, argv(ns)); err == nil {
			err = b.fx.waitGone(ctx, ns, time.Minute)
		}
		x.FromDelete = del + x.Seconds
		return x, err
	}}
}

// batchSpec is how a batch phase builds and purges its namespaces.
type batchSpec struct {
	name              string
	n, runs           int
	plugin, selectors []string // how commands reach the plugin; flags beside -l
	remove            string   // --remove-finalizers
	explain           bool
	pause             time.Duration
	content           content
}

// batch purges namespaces an uninstalled operator left stuck: per run and
// contender a fresh batch labelled batch=ID, explained with no name if
// asked, emptied by purge -l (this tree's, and the -purge-compare build's)
// or by the per-namespace loop users write, then checked gone.
func (b *bench) batch(ctx context.Context, phase string, sp batchSpec) (err error) {
	sec := b.section(phase, "")
	if sec.Types, err = b.fx.types(); err != nil {
		return err
	}
	sec.Scope, sec.Namespaces, sec.CRDs, sec.Pause, sec.Content = fmt.Sprintf("%d namespaces, %d types", sp.n, sec.Types), sp.n, b.fx.crds(), sp.pause, sp.content
	one := func(plugin []string, id, backup string) []string {
		return append(slices.Concat(plugin, []string{"purge", "-l", "batch=" + id}, sp.selectors), "--force", "--yes", "--remove-finalizers="+sp.remove, "--backup-dir", backup)
	}
	shown := []string{strings.Join(sp.plugin, " ")}
	if sp.plugin[0] == b.plugin {
		shown = []string{"kubectl-ns_doctor"}
	}
	sec.Commands = []string{strings.Join(one(shown, "ID", "DIR"), " "), strings.Join(perNamespace(shown, []string{"NAME"}, sp.remove, "DIR")[0], " ")}
	var explain *Series
	if sp.explain {
		explain = sec.series("explain", fmt.Sprintf("`explain` (no name, %d terminating)", sp.n))
	}
	// Each contender's commands empty a batch of their own, explained first if asked.
	emptying := func(s *Series, argvs func(id, backup string) [][]string) contender {
		return contender{Series: s, fresh: func(ctx context.Context, id string) error {
			return b.fx.namespaces(ctx, numbered(id, sp.n, 4), map[string]string{"batch": id}, false, sp.content)
		}, measure: func(ctx context.Context, id string) (x Sample, err error) {
			if explain != nil {
				if x, err = b.meter.run(ctx, 3, []string{b.plugin, "explain"}); err != nil {
					return x, err
				}
				explain.add(x)
				time.Sleep(settle)
			}
			if x, err = b.meter.run(ctx, 0, argvs(id, filepath.Join(b.tmp, "backup", id))...); err == nil {
				err = b.fx.gone(ctx, "batch="+id)
			}
			return x, err
		}}
	}
	cs := []contender{emptying(sec.series("one", "`purge -l`, one run"), func(id, backup string) [][]string { return [][]string{one(sp.plugin, id, backup)} })}
	if b.compare != "" {
		cs = append(cs, emptying(sec.series("compare", "`purge -l`, the -purge-compare build"), func(id, backup string) [][]string { return [][]string{one([]string{b.compare}, id, backup)} }))
	}
	cs = append(cs, emptying(sec.series("loop", fmt.Sprintf("the per-namespace loop, %d commands", sp.n)), func(id, backup string) [][]string {
		return perNamespace(sp.plugin, numbered(id, sp.n, 4), sp.remove, backup)
	}))
	return race(ctx, sp.name, sp.runs, sp.pause, cs...)
}

// perNamespace is the shell loop users write, as commands: purge NAME
// --force --yes --remove-finalizers=F for each, through plugin (kubectl
// ns-doctor, or the binary itself), each backed up under backup/NAME.
func perNamespace(plugin, names []string, remove, backup string) [][]string {
	out := make([][]string, len(names))
	for i, ns := range names {
		out[i] = append(slices.Clone(plugin), "purge", ns, "--force", "--yes", "--remove-finalizers="+remove, "--backup-dir", filepath.Join(backup, ns))
	}
	return out
}

// operatorGroup is the API group of an operator that was uninstalled with
// its custom resources still out there: nobody removes its finalizer.
const operatorGroup = "uninstalled.bench.ns-doctor.io"

// purgeMany batches namespaces as test/purge/many_test.go does.
func (b *bench) purgeMany(ctx context.Context) error {
	err := b.fx.ensureTypes(ctx, 150)
	if err == nil {
		err = b.fx.ensureCRD(ctx, operatorGroup, "Leftover", "leftovers")
	}
	if err != nil {
		return err
	}
	return b.batch(ctx, "purge-many", batchSpec{name: "pmany", n: b.scaled(20), runs: b.runs(3), plugin: []string{"kubectl", "ns-doctor"},
		selectors: []string{"--all-terminating"}, remove: operatorGroup + "/*", pause: settle,
		content: content{Held: 1, Of: "leftovers." + operatorGroup, Finalizer: operatorGroup + "/cleanup", Plain: 5}})
}

// purge1000 is issue #26's target: a thousand such namespaces, explained
// and purged by the plugin binary as a script would run it.
func (b *bench) purge1000(ctx context.Context) error {
	const finalizer = "example.com/uninstalled"
	if err := b.fx.ensureTypes(ctx, b.size(len(b.o.sizes)).Types); err != nil {
		return err
	}
	return b.batch(ctx, "purge-1000", batchSpec{name: "p1k", n: b.scaled(1000), runs: b.runs(1), plugin: []string{b.plugin},
		remove: finalizer, explain: true, pause: 5 * time.Second, content: content{Held: 3, Finalizer: finalizer, Plain: 1}})
}
