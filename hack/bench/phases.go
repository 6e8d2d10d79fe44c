package main

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/ns-doctor/ns-doctor/test/support/scenario"
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

func (b *bench) explainOn(ctx context.Context, phase string, s size, paths []*meter, recipes int) error {
	sec, err := b.stuck(ctx, phase, s)
	var cs []contender
	for _, m := range paths {
		key, on := b.via(sec, m)
		ns := sec.Namespace
		cs = append(cs, b.cmd(sec.series(key+"explain", "`kubectl ns-doctor explain "+ns+" -o json`"+on), m, 3, "kubectl", "ns-doctor", "explain", ns, "-o", "json"),
			b.cmd(sec.series(key+"plugin", "`kubectl-ns_doctor explain "+ns+" -o json` (plugin binary)"+on), m, 3, b.plugin, "explain", ns, "-o", "json"),
			b.cmd(sec.series(key+"floor", "floor (discovery + metadata sweep)"+on), m, 0, b.floor, ns),
			b.cmd(sec.series(key+"version", "`kubectl ns-doctor version` (no API call)"+on), m, 0, "kubectl", "ns-doctor", "version"))
		// The loop users run by hand to see what a namespace holds: a
		// kubectl per listable type; at most recipes runs.
		c := b.cmd(sec.series(key+"recipe", "shell recipe"+on), m, 123, "bash", "-c", "kubectl api-resources --verbs=list --namespaced -o name | xargs -n 1 kubectl get --show-kind --ignore-not-found -n "+ns+" >/dev/null 2>&1")
		c.max, cs = recipes, append(cs, c)
	}
	runs := b.runs(5)
	if s.Objects >= 100_000 {
		runs = b.runs(3)
	}
	if err == nil {
		err = race(ctx, phase+"-"+s.Name, runs, settle, cs...)
	}
	return err
}

// many is explain with no name over many terminating namespaces against
// explain of one of them.
func (b *bench) many(ctx context.Context) (err error) {
	n, c := b.scaled(50), content{Objects: 20, FinalizerEvery: 4, Pods: 1}
	sec := b.section("many", fmt.Sprintf("%d namespaces", n))
	sec.Namespaces, sec.Content = n, c
	if err := b.fill(ctx, sec, 150, numbered("many", n, 2), false, c); err != nil {
		return err
	}
	// 3 runs: explain over 50 namespaces is client-rate-limited.
	return race(ctx, "many", b.runs(3), settle,
		b.cmd(sec.series("all", "`kubectl ns-doctor explain -o json`"), b.meter, 3, "kubectl", "ns-doctor", "explain", "-o", "json"),
		b.cmd(sec.series("one", "`kubectl ns-doctor explain many-00 -o json`"), b.meter, 3, "kubectl", "ns-doctor", "explain", "many-00", "-o", "json"))
}

// stuck adds the section of a phase on the stuck namespace of size s,
// built unless this control plane holds it already (the explain phases
// share it).
func (b *bench) stuck(ctx context.Context, phase string, s size) (*Section, error) {
	sec := b.section(phase, s.Name)
	sec.Size, sec.Namespace, sec.Content = s, "bench-"+s.Name, content{Objects: s.Objects, FinalizerEvery: 10, Pods: 10}
	var names []string
	if !b.built[sec.Namespace] {
		names = []string{sec.Namespace}
		logf("[%s] creating %d objects (+%d pods) in %s", s.Name, s.Objects, sec.Content.Pods, sec.Namespace)
	}
	err := b.fill(ctx, sec, s.Types, names, false, sec.Content)
	b.built[sec.Namespace] = err == nil
	return sec, err
}

// fill ensures types, creates names with c (deleted unless active), then
// counts the namespaced types discovery serves.
func (b *bench) fill(ctx context.Context, sec *Section, types int, names []string, active bool, c content) error {
	err := b.fx.ensureTypes(ctx, types)
	if err == nil {
		err = b.fx.namespaces(ctx, names, nil, active, c)
	}
	if err == nil {
		sec.Types, err = b.fx.types()
	}
	return err
}

// cmd measures argv through m; ok is an exit code it may end with
// besides 0 (explain's 3 on a stuck namespace).
func (b *bench) cmd(s *Series, m *meter, ok int, argv ...string) contender {
	return contender{Series: s, measure: func(ctx context.Context, _ string) (Sample, error) { return m.run(ctx, ok, argv) }}
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
	var cs []contender
	for _, m := range b.paths {
		key, on := b.via(sec, m)
		cs = append(cs, b.emptying(sec.series(key+"controller", "namespace controller"+on), m, c, nil),
			b.emptying(sec.series(key+"purge", "`kubectl ns-doctor purge --force`"+on), m, c, purge),
			b.emptying(sec.series(key+"floor", "purge's floor"+on), m, c, floor))
		if b.o.compare != "" {
			cs = append(cs, b.emptying(sec.series(key+"compare", "the -purge-compare build"+on), m.withPath(filepath.Dir(b.o.compare)), c, purge))
		}
	}
	return race(ctx, "purge", b.runs(6), settle, cs...)
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
		del, err := m.spawn(ctx, []string{"kubectl", "delete", "namespace", ns, "--wait=false"}, 0)
		if err == nil && argv == nil {
			err = b.fx.waitGone(ctx, ns, 15*time.Minute)
			return Sample{FromDelete: since(t0)}, err
		} else if err == nil {
			if x, err = m.run(ctx, 0, argv(ns)); err == nil {
				err = b.fx.waitGone(ctx, ns, time.Minute)
			}
		}
		x.FromDelete = del.Seconds + x.Seconds
		return x, err
	}}
}

// batchSpec is how a batch phase builds and purges its namespaces: n per
// run and contender, of content, over types; plugin is how commands reach
// the plugin, remove their --remove-finalizers, selectors the flags beside -l.
type batchSpec struct {
	id                string
	n, runs, types    int
	pause             time.Duration
	content           content
	explain           bool
	plugin, selectors []string
	remove            string
}

// batch purges namespaces an uninstalled operator left stuck: per run and
// contender a fresh batch labelled batch=ID, explained with no name first
// if asked, emptied by purge -l (this tree's, and the -purge-compare
// build's) or by the per-namespace loop users write, then checked gone.
func (b *bench) batch(ctx context.Context, phase string, sp batchSpec) error {
	n, c, plugin, explain := sp.n, sp.content, sp.plugin, sp.explain
	sec := b.section(phase, "")
	if err := b.fill(ctx, sec, sp.types, nil, false, c); err != nil {
		return err
	}
	sec.Scope, sec.Namespaces, sec.CRDs, sec.Pause, sec.Content = fmt.Sprintf("%d namespaces, %d types", n, sec.Types), n, b.fx.crds(), sp.pause, c
	// The commands that empty batch id: purge -l, or (loop) each namespace's purge.
	argvs := func(plugin []string, loop bool, id, backup string) (out [][]string) {
		flags := []string{"--force", "--yes", "--remove-finalizers=" + sp.remove, "--backup-dir"}
		if !loop {
			return [][]string{slices.Concat(plugin, []string{"purge", "-l", "batch=" + id}, sp.selectors, flags, []string{backup})}
		}
		for _, ns := range numbered(id, n, 4) {
			out = append(out, slices.Concat(plugin, []string{"purge", ns}, flags, []string{filepath.Join(backup, ns)}))
		}
		return out
	}
	sec.Commands = []string{strings.Join(argvs(plugin, false, "ID", "DIR")[0], " "), strings.ReplaceAll(strings.Join(argvs(plugin, true, "ID", "DIR")[0], " "), "ID-0000", "NAME")}
	var explained *Series
	if explain {
		explained = sec.series("explain", fmt.Sprintf("`explain` (no name, %d terminating)", n))
	}
	emptying := func(s *Series, plugin []string, loop bool) contender {
		return contender{Series: s, fresh: func(ctx context.Context, id string) error {
			return b.fx.namespaces(ctx, numbered(id, n, 4), map[string]string{"batch": id}, false, c)
		}, measure: func(ctx context.Context, id string) (x Sample, err error) {
			if explained != nil {
				if x, err = b.meter.run(ctx, 3, []string{b.plugin, "explain"}); err != nil {
					return x, err
				}
				explained.add(x)
				time.Sleep(settle)
			}
			if x, err = b.meter.run(ctx, 0, argvs(plugin, loop, id, filepath.Join(b.tmp, "backup", id))...); err == nil {
				err = b.fx.gone(ctx, "batch="+id)
			}
			return x, err
		}}
	}
	cs := []contender{emptying(sec.series("one", "`purge -l`, one run"), plugin, false)}
	if b.o.compare != "" {
		cs = append(cs, emptying(sec.series("compare", "`purge -l`, the -purge-compare build"), []string{b.o.compare}, false))
	}
	cs = append(cs, emptying(sec.series("loop", fmt.Sprintf("the per-namespace loop, %d commands", n)), plugin, true))
	return race(ctx, sp.id, sp.runs, sp.pause, cs...)
}

// purgeMany batches namespaces as test/purge/many_test.go does: each holds
// a custom resource of an operator that was uninstalled with its custom
// resources still out there, so nobody removes their finalizer.
func (b *bench) purgeMany(ctx context.Context) error {
	if err := b.fx.ensureTypes(ctx, 150); err != nil {
		return err
	}
	return b.batch(ctx, "purge-many", batchSpec{id: "pmany", n: b.scaled(20), runs: b.runs(3), pause: settle, plugin: []string{"kubectl", "ns-doctor"},
		selectors: []string{"--all-terminating"}, remove: "uninstalled.bench.ns-doctor.io/*",
		content: content{Held: 1, Of: b.fx.kinds[2].gvr.GroupResource().String(), Finalizer: "uninstalled.bench.ns-doctor.io/cleanup", Plain: 5}})
}

// purge1000 is issue #26's target: a thousand such namespaces, explained
// and purged by the plugin binary (first on the meter's PATH) as a script
// would run it.
func (b *bench) purge1000(ctx context.Context) error {
	const finalizer = "example.com/uninstalled"
	return b.batch(ctx, "purge-1000", batchSpec{id: "p1k", n: b.scaled(1000), runs: b.runs(1), types: b.size(len(b.o.sizes)).Types, pause: 5 * time.Second,
		plugin: []string{"kubectl-ns_doctor"}, remove: finalizer, explain: true, content: content{Held: 3, Finalizer: finalizer, Plain: 1}})
}

// size is one fixture: Types namespaced resource types served in total
// (built-ins plus generated CRDs) and Objects objects spread over them.
type size struct {
	Name           string
	Types, Objects int
}

var sizes = map[string]size{"small": {"small", 40, 200}, "medium": {"medium", 150, 10_000}, "large": {"large", 150, 100_000}}

// sizeOf reads a size: a name of sizes, or a number of objects over 150
// types (a quick check of a phase, e.g. 1000).
func sizeOf(name string) (size, error) {
	if n, err := strconv.Atoi(name); err == nil && n > 0 {
		return size{name, 150, n}, nil
	} else if s, ok := sizes[name]; ok {
		return s, nil
	}
	return size{}, fmt.Errorf("unknown size %q (small, medium, large, or a number of objects)", name)
}

// createWorkers bounds concurrent creates: enough to keep both cores busy,
// few enough to stay clear of priority and fairness rejections.
const createWorkers = 32

// fixtures creates content fast: the scenarios' clients, with a client
// rate limit high enough that the API server is the bottleneck; the
// guard's warnings at each of its DELETEs are not printed.
type fixtures struct {
	*scenario.Cluster
	kinds []kind // ConfigMaps, Secrets, then every CRD generated so far
}

// kind is a namespaced type objects are made of.
type kind struct {
	gvr  schema.GroupVersionResource
	name string
}

func newFixtures(cfg *rest.Config) (*fixtures, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst, cfg.WarningHandler = 1000, 2000, rest.NoWarnings{}
	cl, err := scenario.NewCluster(cfg)
	core := func(r, k string) kind { return kind{schema.GroupVersionResource{Version: "v1", Resource: r}, k} }
	return &fixtures{Cluster: cl, kinds: []kind{core("configmaps", "ConfigMap"), core("secrets", "Secret")}}, err
}

func (f *fixtures) crds() int { return len(f.kinds) - 2 }

// types counts the namespaced types a sweep walks: those that can be
// listed and deleted, in their preferred versions.
func (f *fixtures) types() (n int, err error) {
	lists, err := discovery.ServerPreferredNamespacedResources(f.Kube.Discovery())
	for _, rl := range discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list", "delete"}}, lists) {
		n += len(rl.APIResources)
	}
	return n, err
}

// ensureTypes generates CRDs until discovery serves want such types.
func (f *fixtures) ensureTypes(ctx context.Context, want int) error {
	have, err := f.types()
	if err != nil || have >= want {
		return err
	}
	start := len(f.kinds)
	f.kinds = append(f.kinds, make([]kind, want-have)...)
	// EnsureCRD waits for each to serve; 8 at a time hides that wait.
	return parallel(ctx, want-have, 8, func(i int) (err error) {
		k := &f.kinds[start+i]
		k.name = fmt.Sprintf("Thing%03d", start+i)
		k.gvr, err = f.EnsureCRD(ctx, "bench.ns-doctor.io", k.name, fmt.Sprintf("thing%03ds", start+i))
		return err
	})
}

// namespaces creates each of names with labels and content c, then
// deletes it unless active (content first: NamespaceLifecycle). With the
// namespace controller stopped the deleted stay Terminating with all they hold.
func (f *fixtures) namespaces(ctx context.Context, names []string, labels map[string]string, active bool, c content) error {
	workers := max(1, createWorkers/max(1, len(names)))
	return parallel(ctx, len(names), createWorkers, func(i int) error {
		err := f.CreateNamespaceWithLabels(ctx, names[i], labels)
		if err == nil {
			err = f.fill(ctx, names[i], c, workers)
		}
		if err == nil && !active {
			err = f.DeleteNamespace(ctx, names[i])
		}
		return err
	})
}

// content says what goes into each namespace of a fixture: Objects over
// ConfigMaps, Secrets and every generated CRD, every FinalizerEvery-th
// held by a finalizer nobody removes (as an uninstalled operator's); Pods
// bound to a node that does not exist; Held objects of kind Of (a
// ConfigMap unless set) held by Finalizer, and Plain ConfigMaps.
type content struct {
	Objects, FinalizerEvery, Pods, Held, Plain int    `json:",omitempty"`
	Of, Finalizer                              string `json:",omitempty"`
}

func (f *fixtures) fill(ctx context.Context, ns string, c content, workers int) error {
	held := f.kinds[:1]
	for _, k := range f.kinds {
		if k.gvr.GroupResource().String() == c.Of {
			held = []kind{k}
		}
	}
	for _, o := range []struct {
		prefix    string
		n, every  int
		kinds     []kind
		finalizer string
	}{{"obj", c.Objects, c.FinalizerEvery, f.kinds, "bench.ns-doctor.io/hold"}, {"held", c.Held, 1, held, c.Finalizer}, {"plain", c.Plain, 0, f.kinds[:1], ""}} {
		if err := parallel(ctx, o.n, workers, func(i int) error {
			k, name, payload := o.kinds[i%len(o.kinds)], fmt.Sprintf("%s-%06d", o.prefix, i), "data"
			if k.name == "Secret" {
				payload = "stringData"
			}
			obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": k.gvr.GroupVersion().String(), "kind": k.name, payload: map[string]any{"k": name}}}
			obj.SetName(name)
			obj.SetLabels(map[string]string{"bench": "yes"})
			if o.every > 0 && i%o.every == 0 {
				obj.SetFinalizers([]string{o.finalizer})
			}
			_, err := f.Dynamic.Resource(k.gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("populating %s: %w", ns, err)
		}
	}
	// Grace periods vary so the controller's estimate has something to read.
	return parallel(ctx, c.Pods, workers, func(i int) error {
		return f.CreateBoundPod(ctx, ns, fmt.Sprintf("pod-%03d", i), int64(30+30*(i%10)))
	})
}

// gone fails naming the namespaces of selector still there: purge exits
// only once its namespaces are gone, so one left is a wrong result.
func (f *fixtures) gone(ctx context.Context, selector string) error {
	l, err := f.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil || len(l.Items) == 0 {
		return err
	}
	ns := l.Items[0]
	return fmt.Errorf("%d namespaces of %s still there after the commands exited, such as %s (%s, finalizers %v)", len(l.Items), selector, ns.Name, ns.Status.Phase, ns.Spec.Finalizers)
}

func (f *fixtures) waitGone(ctx context.Context, ns string, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := f.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// parallel runs fn(0..n-1) on workers goroutines and returns the first
// error, after which the items not started yet are skipped.
func parallel(ctx context.Context, n, workers int, fn func(i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i := 0; i < n && gctx.Err() == nil; i++ {
		g.Go(func() error { return fn(i) })
	}
	return cmp.Or(g.Wait(), ctx.Err())
}

// numbered is prefix-0..n-1, zero-padded to digits.
func numbered(prefix string, n, digits int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%0*d", prefix, digits, i)
	}
	return out
}

func since(t time.Time) float64 { return time.Since(t).Seconds() }
