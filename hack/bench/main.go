// Command bench is `make bench`: it measures ns-doctor on the local control
// plane into one Result, written as JSON beside -out, and renders
// docs/benchmarks.md from it through benchmarks.md.tmpl (-render: from a JSON
// file alone). Nothing fails on a slow machine: each target is written down as
// met or MISSED with its numbers.
package main

import (
	"bytes"
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/template"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/procfs"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ns-doctor/ns-doctor/test/support/apimetrics"
	"github.com/ns-doctor/ns-doctor/test/support/controlplane"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
	"github.com/ns-doctor/ns-doctor/test/support/scenario"
)

// phases, in order; those of a plane share a control plane, controller off:
// the stuck fixtures and the thousands of namespaces meet no other phase.
var phases = []struct {
	name, plane string
	run         func(*bench, context.Context) error
}{
	{"explain", "stuck", (*bench).explain},
	{"explain-link", "stuck", (*bench).explainLink},
	{"guard", "stuck", (*bench).guard},
	{"purge", "purge", (*bench).purge},
	{"purge-memory", "purge", (*bench).purgeMemory},
	{"many", "purge", (*bench).many},
	{"purge-many", "purge", (*bench).purgeMany},
	{"purge-1000", "purge-1000", (*bench).purge1000},
	{"watch", "watch", (*bench).watch},
}

type options struct {
	phases               map[string]bool
	sizes                []size
	scale                float64
	runs                 int
	out, render, compare string
	linkDelay            time.Duration
}

func parseFlags() (o options, err error) {
	var names []string
	for _, p := range phases {
		names = append(names, p.name)
	}
	phaseList := flag.String("phases", strings.Join(names, ","), "phases to run, of "+strings.Join(names, ","))
	sizeList := flag.String("sizes", "small,medium,large", "explain's fixtures: small (40 types, 200 objects), medium (150, 10k), large (150, 100k), or a number of objects over 150 types; explain-link, guard and purge take the second (or only), purge-memory the last, purge-1000 the last one's types")
	flag.Float64Var(&o.scale, "scale", 1, "namespaces of many (50), purge-many (20), purge-1000 (1000) and watch (1000, 20 then 40 stuck), times this")
	flag.IntVar(&o.runs, "runs", 0, "runs per contender in every phase (0: explain 5, 3 at 100k objects; guard 30 DELETEs each way, 6 content deletions; purge 6; many and purge-many 3; purge-1000 1)")
	flag.StringVar(&o.out, "out", "docs/benchmarks.md", "the markdown to write; the results go beside it, as JSON")
	flag.StringVar(&o.render, "render", "", "render -out from this JSON file of an earlier run, measuring nothing")
	flag.StringVar(&o.compare, "purge-compare", "", "purge, purge-1000: a folder with another build of kubectl-ns_doctor, measured in the same runs")
	flag.DurationVar(&o.linkDelay, "link-delay", 25*time.Millisecond, "one-way delay of the slow link (0: loopback only, no explain-link)")
	flag.Parse()
	o.phases = map[string]bool{}
	for p := range strings.SplitSeq(*phaseList, ",") {
		if o.phases[p] = true; !slices.Contains(names, p) {
			return o, fmt.Errorf("unknown phase %q (phases: %s)", p, strings.Join(names, ","))
		}
	}
	o.phases["explain-link"] = o.phases["explain-link"] && o.linkDelay > 0 // no link, nothing to compare
	for name := range strings.SplitSeq(*sizeList, ",") {                   // a name of sizes, or a number of objects over 150 types
		s, ok := sizes[name]
		if n, err := strconv.Atoi(name); err == nil && n > 0 {
			s, ok = size{name, 150, n}, true
		}
		if !ok {
			return o, fmt.Errorf("unknown size %q (small, medium, large, or a number of objects)", name)
		}
		o.sizes = append(o.sizes, s)
	}
	if o.compare != "" {
		o.compare = filepath.Join(o.compare, "kubectl-ns_doctor")
		if _, err := os.Stat(o.compare); err != nil {
			return o, fmt.Errorf("-purge-compare: %w", err)
		}
	}
	if o.scale <= 0 || o.runs < 0 || o.linkDelay < 0 {
		return o, fmt.Errorf("-scale must be positive, -runs and -link-delay not negative")
	}
	return o, nil
}

func main() {
	if os.Getenv(spawnEnv) != "" {
		spawn(os.Args[1:])
	}
	o, err := parseFlags()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if o.render != "" {
		err = renderFile(o.render, o.out)
	} else {
		err = run(ctx, o)
	}
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

type bench struct {
	o                  options
	res                *Result
	tmp, plugin, floor string
	cp                 *controlplane.ControlPlane
	*scenario.Cluster                  // the fixtures' clients
	kinds              []kind          // what objects are made of: ConfigMaps, Secrets, then every CRD generated so far
	meter              *meter          // commands on loopback
	paths              []*meter        // the ways commands reach the API server: loopback, and the slow link (-link-delay)
	link               net.Listener    // the slow link's, if any
	built              map[string]bool // the stuck fixtures this control plane holds
}

func run(ctx context.Context, o options) (err error) {
	started := time.Now()
	tmp, err := os.MkdirTemp("", "ns-doctor-bench-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	b := &bench{o: o, tmp: tmp, res: &Result{Run: machine()}, plugin: filepath.Join(tmp, "kubectl-ns_doctor"), floor: filepath.Join(tmp, "floor")}
	// A plain build (no -ldflags -s -w): what `go install` gives users.
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", tmp+"/", "./cmd/kubectl-ns_doctor", "./hack/bench/floor").CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	defer b.stopControlPlane()
	// Saved after every phase: an interrupted run keeps what it measured.
	defer func() { err = cmp.Or(err, b.save()) }()
	plane := ""
	for _, p := range phases {
		if !o.phases[p.name] {
			continue
		} else if p.plane != plane {
			b.stopControlPlane()
			if err := b.startControlPlane(ctx); err != nil {
				return err
			}
			plane = p.plane
		}
		logf("phase %s", p.name)
		if err := p.run(b, ctx); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		_ = b.save()
	}
	b.res.Run.Minutes = time.Since(started).Minutes()
	return nil
}

func (b *bench) save() error {
	data, err := json.MarshalIndent(b.res, "", " ")
	if err == nil {
		err = os.WriteFile(strings.TrimSuffix(b.o.out, filepath.Ext(b.o.out))+".json", append(data, '\n'), 0o644)
	}
	return cmp.Or(err, writeMarkdown(b.res, b.o.out))
}

func (b *bench) startControlPlane(ctx context.Context) (err error) {
	logf("starting etcd and kube-apiserver (namespace controller off)")
	if b.cp, err = controlplane.Start(ctx, controlplane.Options{WithoutControllerManager: true}); err != nil {
		return err
	}
	// Fixtures: a rate limit leaving the API server the bottleneck; no warnings.
	cfg := rest.CopyConfig(b.cp.Config)
	cfg.QPS, cfg.Burst, cfg.WarningHandler = 1000, 2000, rest.NoWarnings{}
	if b.Cluster, err = scenario.NewCluster(cfg); err != nil {
		return err
	}
	b.kinds = []kind{{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "ConfigMap", "data"}, {schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, "Secret", "stringData"}}
	add := func(key, on, kubeconfig string) *meter {
		b.paths = append(b.paths, &meter{key: key, on: on, client: b.Kube, servers: b.cp.ServerPIDs, env: append(os.Environ(), "PATH="+b.tmp+string(os.PathListSeparator)+os.Getenv("PATH"),
			"KUBECONFIG="+kubeconfig, "KUBECACHEDIR="+filepath.Join(b.tmp, "kube-cache"))}) // kubectl's discovery cache, not ~/.kube's
		return b.paths[len(b.paths)-1]
	}
	b.built, b.paths = map[string]bool{}, nil
	b.meter = add("", "", b.cp.Kubeconfig)
	if b.o.linkDelay == 0 {
		return nil
	}
	// The admin kubeconfig with the link as its server: the API server's
	// certificate names 127.0.0.1, where the link listens, so its CA verifies it.
	kc := filepath.Join(b.tmp, "kubeconfig-link")
	admin, err := os.ReadFile(b.cp.Kubeconfig)
	if err == nil {
		b.link, err = linkTo(strings.TrimPrefix(b.cp.Server(), "https://"), b.o.linkDelay)
	}
	if err == nil {
		err = os.WriteFile(kc, bytes.ReplaceAll(admin, []byte(b.cp.Server()), []byte("https://"+b.link.Addr().String())), 0o600)
	}
	add("link-", fmt.Sprintf(" [link (%v RTT)]", 2*b.o.linkDelay), kc)
	return err
}

func (b *bench) stopControlPlane() {
	if b.link != nil {
		_ = b.link.Close()
	}
	if b.cp != nil {
		b.cp.Stop()
	}
	b.link, b.cp = nil, nil
}

// section adds a section for a phase to fill (half-filled if it fails).
func (b *bench) section(phase, scope string) *Section {
	s := &Section{Phase: phase, Scope: scope}
	b.res.Sections = append(b.res.Sections, s)
	return s
}

// -runs or def; n times -scale; the i-th of -sizes or the last; CRDs made.
func (b *bench) runs(def int) int { return cmp.Or(b.o.runs, def) }
func (b *bench) scaled(n int) int { return max(1, int(math.Round(float64(n)*b.o.scale))) }
func (b *bench) size(i int) size  { return b.o.sizes[min(i, len(b.o.sizes)-1)] }
func (b *bench) crds() int        { return len(b.kinds) - 2 }

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// explain measures explain against its floor, kubectl's start-up and a recipe.
func (b *bench) explain(ctx context.Context) error {
	return b.explainOn(ctx, "explain", b.o.sizes, b.paths[:1], 3)
}

// explainLink is the same on loopback and through the slow link.
func (b *bench) explainLink(ctx context.Context) error {
	return b.explainOn(ctx, "explain-link", []size{b.size(1)}, b.paths, 1)
}

// explainOn measures it on the stuck namespace of each size, built once.
func (b *bench) explainOn(ctx context.Context, phase string, sizes []size, paths []*meter, recipes int) error {
	for _, s := range sizes {
		ns, sec := "bench-"+s.Name, b.section(phase, s.Name)
		sec.Size, sec.Namespace, sec.Content = s, ns, content{Objects: s.Objects, FinalizerEvery: 10, Pods: 10}
		var names []string
		if !b.built[ns] {
			names, b.built[ns] = []string{ns}, true
			logf("[%s] creating %d objects (+%d pods) in %s", s.Name, s.Objects, sec.Content.Pods, ns)
		}
		if err := b.fill(ctx, sec, s.Types, names, false, sec.Content); err != nil {
			return err
		} else if len(paths) > 1 {
			sec.Delay = b.o.linkDelay
		}
		var cs []contender
		for _, m := range paths {
			cs = append(cs, b.cmd(sec.series(m.key+"explain", "`kubectl ns-doctor explain "+ns+" -o json`"+m.on), m, 3, "kubectl", "ns-doctor", "explain", ns, "-o", "json"),
				b.cmd(sec.series(m.key+"plugin", "`kubectl-ns_doctor explain "+ns+" -o json` (plugin binary)"+m.on), m, 3, b.plugin, "explain", ns, "-o", "json"),
				b.cmd(sec.series(m.key+"floor", "floor (discovery + metadata sweep)"+m.on), m, 0, b.floor, ns),
				b.cmd(sec.series(m.key+"version", "`kubectl ns-doctor version` (no API call)"+m.on), m, 0, "kubectl", "ns-doctor", "version"))
			// The loop users run by hand to see what a namespace holds.
			c := b.cmd(sec.series(m.key+"recipe", "shell recipe"+m.on), m, 123, "bash", "-c", "kubectl api-resources --verbs=list --namespaced -o name | xargs -n 1 kubectl get --show-kind --ignore-not-found -n "+ns+" >/dev/null 2>&1")
			c.max, cs = recipes, append(cs, c)
		}
		runs := b.runs(5)
		if s.Objects >= 100_000 {
			runs = b.runs(3)
		}
		if err := race(ctx, phase+"-"+s.Name, runs, settle, cs...); err != nil {
			return err
		}
	}
	return nil
}

// many is explain with no name over many terminating namespaces, and of one.
func (b *bench) many(ctx context.Context) error {
	n, c := b.scaled(50), content{Objects: 20, FinalizerEvery: 4, Pods: 1}
	sec := b.section("many", fmt.Sprintf("%d namespaces", n))
	sec.Namespaces, sec.Content = n, c
	if err := b.fill(ctx, sec, 150, numbered("many", n, 2), false, c); err != nil {
		return err
	}
	// 3 runs: explain over 50 namespaces is client-rate-limited.
	return race(ctx, "many", b.runs(3), settle, b.cmd(sec.series("all", "`kubectl ns-doctor explain -o json`"), b.meter, 3, "kubectl", "ns-doctor", "explain", "-o", "json"),
		b.cmd(sec.series("one", "`kubectl ns-doctor explain many-00 -o json`"), b.meter, 3, "kubectl", "ns-doctor", "explain", "many-00", "-o", "json"))
}

// fill ensures types, creates names of c (deleted unless active), counts types.
func (b *bench) fill(ctx context.Context, sec *Section, types int, names []string, active bool, c content) (err error) {
	if err = b.ensureTypes(ctx, types); err == nil {
		err = b.namespaces(ctx, names, nil, active, c)
	}
	if err == nil {
		sec.Types, err = b.types()
	}
	return err
}

// cmd measures argv through m; ok: an exit code accepted (explain's 3).
func (b *bench) cmd(s *Series, m *meter, ok int, argv ...string) contender {
	return contender{Series: s, measure: func(ctx context.Context, _ string) (Sample, error) { return m.run(ctx, ok, argv) }}
}

// purge empties the same content per path, run and contender: the namespace
// controller (on its direct connection), purge, the floor and -purge-compare's.
func (b *bench) purge(ctx context.Context) error {
	s := b.size(1)
	sec := b.section("purge", s.Name)
	if err := b.ensureTypes(ctx, s.Types); err != nil {
		return err
	}
	sec.Size, sec.CRDs, sec.Delay = s, b.crds(), b.o.linkDelay
	var cs []contender
	for _, m := range b.paths {
		cs = append(cs, b.emptying(sec.series(m.key+"controller", "namespace controller"+m.on), m, s.Objects, nil, false),
			b.emptying(sec.series(m.key+"purge", "`kubectl ns-doctor purge --force`"+m.on), m, s.Objects, b.purgeArgv, false),
			b.emptying(sec.series(m.key+"floor", "purge's floor"+m.on), m, s.Objects, b.floorArgv, false))
		if b.o.compare != "" { // first on PATH, where kubectl finds its plugins (os/exec keeps the last of duplicate keys)
			cm := *m
			cm.env = append(slices.Clone(m.env), "PATH="+filepath.Dir(b.o.compare)+string(os.PathListSeparator)+os.Getenv("PATH"))
			cs = append(cs, b.emptying(sec.series(m.key+"compare", "the -purge-compare build"+m.on), &cm, s.Objects, b.purgeArgv, false))
		}
	}
	return race(ctx, "purge", b.runs(6), settle, cs...)
}

// purgeMemory is purge --force's peak memory on a big namespace.
func (b *bench) purgeMemory(ctx context.Context) error {
	s := b.size(len(b.o.sizes))
	sec := b.section("purge-memory", fmt.Sprintf("%s, %d objects", s.Name, s.Objects))
	if err := b.ensureTypes(ctx, s.Types); err != nil {
		return err
	}
	sec.Size, sec.CRDs = s, b.crds()
	return race(ctx, "memory", 1, settle, b.emptying(sec.series("purge", "`kubectl ns-doctor purge NAME --force --yes`"), b.meter, s.Objects, b.purgeArgv, false))
}

// purgeArgv is `kubectl ns-doctor purge NS --force`; floorArgv purge's floor.
func (b *bench) purgeArgv(ns string) []string {
	return []string{"kubectl", "ns-doctor", "purge", ns, "--force", "--yes", "-o", "json", "--backup-dir", filepath.Join(b.tmp, "backup", ns)}
}

func (b *bench) floorArgv(ns string) []string { return []string{b.floor, "-purge", ns} }

// emptying times argv(NS), which empties and finishes a fresh namespace of that
// many objects, from the delete (through m) to its exit; with no argv, the
// namespace controller (started 10 s before, to warm up) until it is gone.
// With guard, the guard is registered from the namespace's creation on.
func (b *bench) emptying(s *Series, m *meter, objects int, argv func(ns string) []string, guard bool) contender {
	var w *watchProc
	return contender{Series: s, fresh: func(ctx context.Context, ns string) (err error) {
		if err = b.namespaces(ctx, []string{ns}, nil, true, content{Objects: objects}); err == nil && guard {
			w, err = b.startGuard(ctx, ns)
		}
		return err
	}, measure: func(ctx context.Context, ns string) (x Sample, err error) {
		if guard {
			defer func() { err = cmp.Or(err, b.stopGuard(ctx, w)) }()
		}
		if argv == nil {
			if err := b.cp.StartControllerManager(); err != nil {
				return x, err
			}
			defer b.cp.StopControllerManager()
			time.Sleep(10 * time.Second)
		}
		t0 := time.Now()
		del, err := m.spawn(ctx, []string{"kubectl", "delete", "namespace", ns, "--wait=false"}, 0)
		if err != nil {
			return x, err
		} else if argv == nil {
			err = b.waitGone(ctx, ns, 15*time.Minute)
			return Sample{FromDelete: time.Since(t0).Seconds()}, err
		}
		if x, err = m.run(ctx, 0, argv(ns)); err == nil {
			err = b.waitGone(ctx, ns, time.Minute)
		}
		x.FromDelete = del.Seconds + x.Seconds
		return x, err
	}}
}

// batchSpec is a batch phase's: n namespaces per run and contender, over types.
type batchSpec struct {
	id                string
	n, runs, types    int
	pause             time.Duration
	content           content
	explain           bool
	plugin, selectors []string
	remove            string
}

// batch purges a fresh batch=ID stuck by an uninstalled operator per run and
// contender, explained first if asked, by purge -l or the loop users write.
func (b *bench) batch(ctx context.Context, phase string, sp batchSpec) error {
	sec := b.section(phase, "")
	if err := b.fill(ctx, sec, sp.types, nil, false, sp.content); err != nil {
		return err
	}
	sec.Scope, sec.Namespaces, sec.CRDs, sec.Pause, sec.Content = fmt.Sprintf("%d namespaces, %d types", sp.n, sec.Types), sp.n, b.crds(), sp.pause, sp.content
	argvs := func(plugin []string, loop bool, id, backup string) (out [][]string) {
		flags := []string{"--force", "--yes", "--remove-finalizers=" + sp.remove, "--backup-dir"}
		if !loop {
			return [][]string{slices.Concat(plugin, []string{"purge", "-l", "batch=" + id}, sp.selectors, flags, []string{backup})}
		}
		for _, ns := range numbered(id, sp.n, 4) {
			out = append(out, slices.Concat(plugin, []string{"purge", ns}, flags, []string{filepath.Join(backup, ns)}))
		}
		return out
	}
	sec.Commands = []string{strings.Join(argvs(sp.plugin, false, "ID", "DIR")[0], " "), strings.ReplaceAll(strings.Join(argvs(sp.plugin, true, "ID", "DIR")[0], " "), "ID-0000", "NAME")}
	var explained *Series
	if sp.explain {
		explained = sec.series("explain", fmt.Sprintf("`explain` (no name, %d terminating)", sp.n))
	}
	emptying := func(s *Series, plugin []string, loop bool) contender {
		return contender{Series: s, fresh: func(ctx context.Context, id string) error {
			return b.namespaces(ctx, numbered(id, sp.n, 4), map[string]string{"batch": id}, false, sp.content)
		}, measure: func(ctx context.Context, id string) (x Sample, err error) {
			if explained != nil {
				if x, err = b.meter.run(ctx, 3, []string{b.plugin, "explain"}); err != nil {
					return x, err
				}
				explained.add(x)
				time.Sleep(settle)
			}
			if x, err = b.meter.run(ctx, 0, argvs(plugin, loop, id, filepath.Join(b.tmp, "backup", id))...); err != nil {
				return x, err
			}
			// purge exits once they are gone: one left is a wrong result.
			l, err := b.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: "batch=" + id})
			if err == nil && len(l.Items) > 0 {
				ns := l.Items[0]
				err = fmt.Errorf("%d namespaces of batch=%s still there after the commands exited, such as %s (%s, finalizers %v)", len(l.Items), id, ns.Name, ns.Status.Phase, ns.Spec.Finalizers)
			}
			return x, err
		}}
	}
	cs := []contender{emptying(sec.series("one", "`purge -l`, one run"), sp.plugin, false)}
	if b.o.compare != "" {
		cs = append(cs, emptying(sec.series("compare", "`purge -l`, the -purge-compare build"), []string{b.o.compare}, false))
	}
	cs = append(cs, emptying(sec.series("loop", fmt.Sprintf("the per-namespace loop, %d commands", sp.n)), sp.plugin, true))
	return race(ctx, sp.id, sp.runs, sp.pause, cs...)
}

// purgeMany is test/purge/many_test.go's: CRs of an uninstalled operator.
func (b *bench) purgeMany(ctx context.Context) error {
	if err := b.ensureTypes(ctx, 150); err != nil {
		return err
	}
	return b.batch(ctx, "purge-many", batchSpec{id: "pmany", n: b.scaled(20), runs: b.runs(3), pause: settle, plugin: []string{"kubectl", "ns-doctor"},
		selectors: []string{"--all-terminating"}, remove: "uninstalled.bench.ns-doctor.io/*",
		content: content{Held: 1, Of: b.kinds[2].gvr.GroupResource().String(), Finalizer: "uninstalled.bench.ns-doctor.io/cleanup", Plain: 5}})
}

// purge1000 is issue #26's: a thousand, explained then purged as scripts do.
func (b *bench) purge1000(ctx context.Context) error {
	const finalizer = "example.com/uninstalled"
	return b.batch(ctx, "purge-1000", batchSpec{id: "p1k", n: b.scaled(1000), runs: b.runs(1), types: b.size(len(b.o.sizes)).Types, pause: 5 * time.Second,
		plugin: []string{"kubectl-ns_doctor"}, remove: finalizer, explain: true, content: content{Held: 3, Finalizer: finalizer, Plain: 1}})
}

// The watch's --resync, windows in resyncs, and the quiet after a round.
const watchResync, watchResyncs, quietAfterRound = 15 * time.Second, 4, 2 * time.Second

// watch is issue #27's: memory and requests per resync as stuck ones grow.
func (b *bench) watch(ctx context.Context) (err error) {
	const diagnoses = "nsdoctor_diagnosis_duration_seconds"
	n, stuck := b.scaled(1000), []int{b.scaled(20), max(b.scaled(40), b.scaled(20)+1)}
	sec := b.section("watch", "")
	sec.Namespaces, sec.Content = n, content{Held: 1, Finalizer: "example.com/bench-gone", Plain: 50}
	// The ones that will be stuck also hold a ConfigMap nobody releases.
	names := numbered("w", n, 4)
	if err = b.namespaces(ctx, names[:stuck[1]], nil, true, sec.Content); err == nil {
		err = b.fill(ctx, sec, 0, names[stuck[1]:], true, content{Plain: sec.Content.Plain})
	}
	sec.Scope = fmt.Sprintf("%d namespaces, %d objects, up to %d stuck, %d types", n, n*sec.Content.Plain, stuck[1], sec.Types)
	if err == nil {
		err = b.strand(ctx, names[:stuck[0]])
	}
	if err != nil {
		return err
	}
	// The API server alone, before the watch starts, over the same time; the
	// ConfigMaps' grace (--grace) runs out meanwhile.
	sec.Idle = &WatchStep{Resyncs: 2}
	if sec.Idle.Sample, err = b.window(ctx, sec.Idle.Resyncs); err != nil {
		return err
	}
	w, err := b.startWatch(ctx, "--after=0s", "--resync="+watchResync.String())
	if err != nil {
		return err
	}
	defer func() { err = cmp.Or(err, w.stop()) }()
	sec.Commands = []string{w.String()}
	for i, k := range stuck {
		if i > 0 {
			if err := b.strand(ctx, names[stuck[i-1]:k]); err != nil {
				return err
			}
		}
		// A blocker series for every stuck namespace: their finalizers are
		// young, so this waits out --grace (30 s).
		if err := w.poll(ctx, time.Second, 2*time.Minute+4*watchResync, func(m fams) bool {
			return !slices.ContainsFunc(names[:k], func(ns string) bool { return sum(m["nsdoctor_namespace_blocker"], "namespace="+ns) == 0 })
		}); err != nil {
			return fmt.Errorf("waiting for a blocker series of each of the %d stuck namespaces: %w", k, err)
		}
		// Measured from the quiet gap after a round of diagnoses, so the window
		// ends in the same gap rounds later.
		last, changed, grew := -1.0, time.Now(), false
		if err := w.poll(ctx, 200*time.Millisecond, 3*watchResync+time.Minute, func(m fams) bool {
			if n := histogram(m[diagnoses]).Count; n != last {
				grew, last, changed = last >= 0, n, time.Now()
			}
			return grew && time.Since(changed) >= quietAfterRound
		}); err != nil {
			return fmt.Errorf("waiting for a round of diagnoses to end: %w", err)
		}
		step := WatchStep{Stuck: k, Resyncs: watchResyncs}
		m0, err := w.scrape(ctx)
		cpu0, _ := procStat(w.Process.Pid)
		if err == nil {
			step.Sample, err = b.window(ctx, step.Resyncs)
		}
		cpu1, hwm := procStat(w.Process.Pid)
		m1, err2 := w.scrape(ctx)
		if err := w.failed(cmp.Or(err, err2)); err != nil {
			return err
		}
		d, per := histogram(m1[diagnoses]).minus(histogram(m0[diagnoses])), 1/float64(step.Resyncs)
		step.CPU, step.MaxRSS = per*(cpu1-cpu0), hwm
		step.Diagnoses, step.DiagSeconds, step.Errors = per*d.Count, ratio(d.Sum, d.Count), sum(m1["nsdoctor_diagnosis_errors_total"])
		sec.Steps = append(sec.Steps, step)
		logf("[watch] %d stuck: %.0f requests per resync, %.0f diagnoses, VmHWM %d KiB", k, step.Requests, step.Diagnoses, step.MaxRSS)
	}
	return nil
}

// strand deletes names; the controller empties them but for the held ConfigMap.
func (b *bench) strand(ctx context.Context, names []string) error {
	if err := b.cp.StartControllerManager(); err != nil {
		return err
	}
	defer b.cp.StopControllerManager()
	return parallel(ctx, len(names), 8, func(i int) error {
		if err := b.DeleteNamespace(ctx, names[i]); err != nil {
			return err
		}
		if _, err := b.WaitForConditions(ctx, names[i], 5*time.Minute, "NamespaceFinalizersRemaining"); err != nil {
			return err
		}
		return wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
			cms, err := b.Kube.CoreV1().ConfigMaps(names[i]).List(ctx, metav1.ListOptions{})
			return err == nil && len(cms.Items) == 1, err
		})
	})
}

// window counts the API server's requests over resyncs, per resync.
func (b *bench) window(ctx context.Context, resyncs int) (Sample, error) {
	x, err := b.meter.count(ctx, func() error {
		window, cancel := context.WithTimeout(ctx, time.Duration(resyncs)*watchResync)
		defer cancel()
		<-window.Done()
		return ctx.Err()
	})
	f := 1 / float64(resyncs) // what adds up, per resync
	x.Seconds, x.Requests, x.Lists, x.Discoveries, x.ServerCPU = f*x.Seconds, f*x.Requests, f*x.Lists, f*x.Discoveries, f*x.ServerCPU
	for k := range x.ByVerb {
		x.ByVerb[k] *= f
	}
	return x, err
}

// watchProc is a running watch: the plugin binary, so its PID is the watch's.
type watchProc struct {
	*exec.Cmd
	cancel context.CancelFunc
	addr   string // its /metrics
	stderr plugintest.LockedBuffer
}

func (b *bench) startWatch(ctx context.Context, args ...string) (*watchProc, error) {
	w := &watchProc{addr: "127.0.0.1:0"}
	if ln, err := net.Listen("tcp", w.addr); err == nil { // a port nothing listens on right now
		w.addr = ln.Addr().String()
		_ = ln.Close()
	}
	ctx, w.cancel = context.WithCancel(ctx)
	w.Cmd = exec.CommandContext(ctx, b.plugin, append(append([]string{"watch"}, args...), "--metrics-addr="+w.addr)...)
	// A clean stop is SIGTERM (exit 0); one still there 30 s later is killed.
	w.Cancel = func() error { return w.Process.Signal(syscall.SIGTERM) }
	w.WaitDelay, w.Env, w.Stderr = 30*time.Second, b.meter.env, &w.stderr
	return w, w.Start()
}

func (w *watchProc) String() string { return "kubectl-ns_doctor " + strings.Join(w.Args[1:], " ") }

// stop sends SIGTERM: the watch must exit 0.
func (w *watchProc) stop() error {
	w.cancel()
	_ = w.Wait()
	if code := w.ProcessState.ExitCode(); code != 0 {
		return w.failed(fmt.Errorf("exit %d on SIGTERM (want 0)", code))
	}
	return nil
}

func (w *watchProc) poll(ctx context.Context, every, timeout time.Duration, done func(fams) bool) error {
	return w.failed(wait.PollUntilContextTimeout(ctx, every, timeout, true, func(ctx context.Context) (bool, error) {
		m, err := w.scrape(ctx)
		return err == nil && done(m), nil
	}))
}

// failed is err, if any, with the end of its stderr.
func (w *watchProc) failed(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w; its stderr:\n%s", w, err, plugintest.Tail(w.stderr.String(), 40))
}

func (w *watchProc) scrape(ctx context.Context) (fams, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+w.addr+"/metrics", nil) // a valid URL: no error
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	return parse(resp.Body)
}

// The guard's --guard-timeout; its webhook's label in kube-apiserver's metrics.
const guardBudget, guardWebhook = 2 * time.Second, "name=guard.ns-doctor.io"

// guard is issue #35's speed: dryRun=All DELETEs (webhooks see dry runs too)
// without `watch --guard=warn` and with it; then purge's floor with it
// registered and without (it is asked about the namespace, not its content).
func (b *bench) guard(ctx context.Context) error {
	s := b.size(1)
	sec := b.section("guard", s.Name)
	sec.Size, sec.Namespace, sec.Content = s, "guard-"+s.Name, content{Objects: s.Objects, FinalizerEvery: 10, Pods: 10}
	if err := b.fill(ctx, sec, s.Types, []string{sec.Namespace}, true, sec.Content); err != nil {
		return err
	}
	dryRun := func(s *Series) contender {
		return contender{Series: s, measure: func(ctx context.Context, _ string) (Sample, error) {
			return b.meter.count(ctx, func() error { return b.deleteDryRun(ctx, sec.Namespace) })
		}}
	}
	if err := race(ctx, "guard-without", b.runs(30), settle, dryRun(sec.series("without", "`DELETE` (dry run) without the guard"))); err != nil {
		return err
	}
	w, err := b.startGuard(ctx, sec.Namespace)
	if err != nil {
		return err
	}
	with := sec.series("with", "`DELETE` (dry run) with the guard")
	a0, err := b.apiserverMetrics(ctx)
	g0, err2 := w.scrape(ctx)
	if sec.Commands, err = []string{w.String()}, cmp.Or(err, err2); err == nil {
		err = race(ctx, "guard-with", b.runs(30), settle, dryRun(with))
	}
	a1, err2 := b.apiserverMetrics(ctx)
	g1, err3 := w.scrape(ctx)
	if err := cmp.Or(err, err2, err3, b.stopGuard(ctx, w)); err != nil {
		return err
	}
	const seen, failedOpen, answers, predictions = "apiserver_admission_webhook_admission_duration_seconds", "apiserver_admission_webhook_fail_open_count", "nsdoctor_guard_admissions_total", "nsdoctor_guard_prediction_duration_seconds"
	sec.Webhook = histogram(a1[seen], guardWebhook).minus(histogram(a0[seen], guardWebhook))
	sec.Predictions = histogram(g1[predictions]).minus(histogram(g0[predictions]))
	sec.FailedOpen = sum(a1[failedOpen], guardWebhook) - sum(a0[failedOpen], guardWebhook) + sum(g1[answers], "outcome=failed_open") - sum(g0[answers], "outcome=failed_open")
	if n := len(with.Runs); sec.Webhook.Count < float64(n) {
		return fmt.Errorf("kube-apiserver asked the guard about %v of the %d DELETEs", sec.Webhook.Count, n)
	}
	return race(ctx, "guard-content", b.runs(6), settle, b.emptying(sec.series("floor", "purge's floor, without the guard"), b.meter, s.Objects, b.floorArgv, false),
		b.emptying(sec.series("floor-guard", "purge's floor, the guard registered"), b.meter, s.Objects, b.floorArgv, true))
}

func (b *bench) deleteDryRun(ctx context.Context, ns string) error {
	return b.Kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
}

// startGuard starts the guard and waits until kube-apiserver asks it about ns.
func (b *bench) startGuard(ctx context.Context, ns string) (*watchProc, error) {
	w, err := b.startWatch(ctx, "--after=24h", "--guard=warn", "--guard-addr=127.0.0.1:0", "--guard-timeout="+guardBudget.String())
	if err == nil {
		err = w.poll(ctx, 200*time.Millisecond, time.Minute, func(m fams) bool {
			_ = b.deleteDryRun(ctx, ns) // answered by a later poll, once registered
			return sum(m["nsdoctor_guard_admissions_total"]) > 0
		})
	}
	if err != nil && w.Process != nil {
		_ = w.stop()
	}
	return w, err
}

// stopGuard stops it: it must exit 0 and remove its registration.
func (b *bench) stopGuard(ctx context.Context, w *watchProc) error {
	err := w.stop()
	if _, err2 := b.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "ns-doctor-guard", metav1.GetOptions{}); err == nil && !apierrors.IsNotFound(err2) {
		err = fmt.Errorf("ns-doctor-guard still there after the guard exited (%v)", err2)
	}
	return err
}

func (b *bench) apiserverMetrics(ctx context.Context) (fams, error) {
	raw, err := b.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver's /metrics: %w", err)
	}
	return parse(bytes.NewReader(raw))
}

// size is a fixture's: Types namespaced types served in all, Objects over them.
type size struct {
	Name           string
	Types, Objects int
}

var sizes = map[string]size{"small": {"small", 40, 200}, "medium": {"medium", 150, 10_000}, "large": {"large", 150, 100_000}}

// kind is a namespaced type objects are made of, and where their data goes.
type kind struct {
	gvr           schema.GroupVersionResource
	name, payload string
}

// types counts the namespaced types a sweep walks (list and delete).
func (b *bench) types() (n int, err error) {
	lists, err := discovery.ServerPreferredNamespacedResources(b.Kube.Discovery())
	for _, rl := range discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list", "delete"}}, lists) {
		n += len(rl.APIResources)
	}
	return n, err
}

// ensureTypes generates CRDs (8 at a time: each waits to serve) to want types.
func (b *bench) ensureTypes(ctx context.Context, want int) error {
	have, err := b.types()
	if err != nil || have >= want {
		return err
	}
	start := len(b.kinds)
	b.kinds = append(b.kinds, make([]kind, want-have)...)
	return parallel(ctx, want-have, 8, func(i int) (err error) {
		k := &b.kinds[start+i]
		k.name, k.payload = fmt.Sprintf("Thing%03d", start+i), "data"
		k.gvr, err = b.EnsureCRD(ctx, "bench.ns-doctor.io", k.name, fmt.Sprintf("thing%03ds", start+i))
		return err
	})
}

const createWorkers = 32 // both cores busy, clear of priority and fairness limits

// namespaces creates names with labels and c, then deletes them unless active
// (content first: NamespaceLifecycle): Terminating with all they hold.
func (b *bench) namespaces(ctx context.Context, names []string, labels map[string]string, active bool, c content) error {
	workers := max(1, createWorkers/max(1, len(names)))
	return parallel(ctx, len(names), createWorkers, func(i int) error {
		err := b.CreateNamespaceWithLabels(ctx, names[i], labels)
		if err == nil {
			err = b.populate(ctx, names[i], c, workers)
		}
		if err == nil && !active {
			err = b.DeleteNamespace(ctx, names[i])
		}
		return err
	})
}

// content is a fixture namespace's: Objects over every kind (each
// FinalizerEvery-th held), Pods bound to no node, Held of kind Of (ConfigMaps
// unless set) held by Finalizer, Plain ConfigMaps.
type content struct {
	Objects, FinalizerEvery, Pods, Held, Plain int    `json:",omitempty"`
	Of, Finalizer                              string `json:",omitempty"`
}

func (b *bench) populate(ctx context.Context, ns string, c content, workers int) error {
	held := b.kinds[:1]
	if i := slices.IndexFunc(b.kinds, func(k kind) bool { return k.gvr.GroupResource().String() == c.Of }); i >= 0 {
		held = b.kinds[i : i+1]
	}
	for _, o := range []struct {
		prefix    string
		n, every  int
		kinds     []kind
		finalizer string
	}{{"obj", c.Objects, c.FinalizerEvery, b.kinds, "bench.ns-doctor.io/hold"}, {"held", c.Held, 1, held, c.Finalizer}, {"plain", c.Plain, 0, b.kinds[:1], ""}} {
		if err := parallel(ctx, o.n, workers, func(i int) error {
			k, name := o.kinds[i%len(o.kinds)], fmt.Sprintf("%s-%06d", o.prefix, i)
			obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": k.gvr.GroupVersion().String(), "kind": k.name, k.payload: map[string]any{"k": name},
				"metadata": map[string]any{"name": name, "labels": map[string]any{"bench": "yes"}}}}
			if o.every > 0 && i%o.every == 0 {
				obj.SetFinalizers([]string{o.finalizer})
			}
			_, err := b.Dynamic.Resource(k.gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("populating %s: %w", ns, err)
		}
	}
	// Grace periods vary so the controller's estimate has something to read.
	return parallel(ctx, c.Pods, workers, func(i int) error {
		return b.CreateBoundPod(ctx, ns, fmt.Sprintf("pod-%03d", i), int64(30+30*(i%10)))
	})
}

func (b *bench) waitGone(ctx context.Context, ns string, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := b.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// parallel runs fn(0..n-1) on workers goroutines until the first error.
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

// contender is one measured command of a phase.
type contender struct {
	*Series
	max     int                                        // runs at most (0: every run)
	fresh   func(ctx context.Context, id string) error // builds its own fixture, named id, before each run (nil: none)
	measure func(ctx context.Context, id string) (Sample, error)
}

const settle = time.Second // the pause before each timed run: the API server's GC and such

// race runs each contender once per run, in order's order, fixture then pause.
func race(ctx context.Context, name string, runs int, pause time.Duration, cs ...contender) error {
	for r := range runs {
		for _, i := range order(r, len(cs)) {
			c, id := cs[i], fmt.Sprintf("%s-%d-%d", name, r, i)
			if c.max > 0 && r >= c.max {
				continue
			} else if c.fresh != nil {
				if err := c.fresh(ctx, id); err != nil {
					return fmt.Errorf("building %s: %w", id, err)
				}
			}
			time.Sleep(pause)
			x, err := c.measure(ctx, id)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", id, c.Name, err)
			}
			c.add(x)
			logf("[%s] %s: %.2fs (from the delete %.2fs), %.0f requests, %d KiB", id, c.Name, x.Seconds, x.FromDelete, x.Requests, x.MaxRSS)
		}
	}
	return nil
}

// order is n contenders' in run r: over 2n runs each takes each place, as
// whoever follows a heavy one finds the API server busier (GC, watch cache).
func order(r, n int) []int {
	out := make([]int, n)
	for k := range out {
		if out[k] = (r + k) % n; (r/n)%2 == 1 {
			out[k] = (r + n - k) % n
		}
	}
	return out
}

// meter reads kube-apiserver's request counter: every request, any client.
type meter struct {
	key, on string // its series' key prefix and name suffix: "link-", " [link (50ms RTT)]"
	client  kubernetes.Interface
	env     []string
	servers func() []int // etcd's and kube-apiserver's PIDs
}

// count measures fn: its time, its requests, etcd's and kube-apiserver's CPU.
func (m *meter) count(ctx context.Context, fn func() error) (Sample, error) {
	before, err := apimetrics.RequestCounts(ctx, m.client)
	if err != nil {
		return Sample{}, err
	}
	server0, t0 := m.serverCPU(), time.Now()
	if err := fn(); err != nil {
		return Sample{}, err
	}
	took := time.Since(t0).Seconds()
	after, err := apimetrics.RequestCounts(ctx, m.client)
	s := Sample{Seconds: took, ByVerb: apimetrics.Delta(before, after), ServerCPU: m.serverCPU() - server0}
	s.Requests, s.Discoveries = apimetrics.Total(s.ByVerb), s.ByVerb["GET /apis"]
	for k, v := range s.ByVerb {
		if strings.HasPrefix(k, "LIST ") {
			s.Lists += v
		}
	}
	return s, err
}

// run runs the commands one after another, as a script would, measured as one.
func (m *meter) run(ctx context.Context, ok int, argvs ...[]string) (Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	var own Sample
	s, err := m.count(ctx, func() error {
		for _, argv := range argvs {
			one, err := m.spawn(ctx, argv, ok)
			if err != nil {
				return err
			}
			own.Seconds, own.CPU, own.MaxRSS = own.Seconds+one.Seconds, own.CPU+one.CPU, max(own.MaxRSS, one.MaxRSS)
		}
		return nil
	})
	s.Seconds, s.CPU, s.MaxRSS = own.Seconds, own.CPU, own.MaxRSS
	return s, err
}

const spawnEnv = "NSDOCTOR_BENCH_SPAWN" // switches the bench binary into spawn

func (m *meter) spawn(ctx context.Context, argv []string, ok int) (s Sample, err error) {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "/proc/self/exe", argv...)
	cmd.Env, cmd.Stderr = append(m.env, spawnEnv+"=1"), &stderr
	out, err := cmd.Output()
	if err != nil && (ok == 0 || cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != ok) {
		return s, fmt.Errorf("%s: %v\n%s", strings.Join(argv, " "), err, plugintest.Tail(stderr.String(), 40))
	}
	_, err = fmt.Sscan(string(out), &s.Seconds, &s.MaxRSS, &s.CPU)
	return s, err
}

// spawn runs a command, output unread, and prints its time, ru_maxrss (KiB) and
// CPU. Go starts children with vfork, and Linux charges the parent's peak RSS
// to the child's: from the bench, which holds 100k objects.
func spawn(argv []string) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	start := time.Now()
	err := cmd.Run()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		fmt.Fprintln(os.Stderr, "spawn:", err)
		os.Exit(127)
	}
	ps := cmd.ProcessState
	fmt.Printf("%f %d %f\n", time.Since(start).Seconds(), ps.SysUsage().(*syscall.Rusage).Maxrss, (ps.UserTime() + ps.SystemTime()).Seconds())
	os.Exit(ps.ExitCode())
}

func (m *meter) serverCPU() (total float64) {
	for _, pid := range m.servers() {
		cpu, _ := procStat(pid)
		total += cpu
	}
	return total
}

// procStat is a process's CPU seconds so far and VmHWM (KiB), or zeros.
func procStat(pid int) (cpu float64, hwm int64) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, 0
	}
	if st, err := p.Stat(); err == nil {
		cpu = st.CPUTime()
	}
	if st, err := p.NewStatus(); err == nil {
		hwm = int64(st.VmHWM / 1024)
	}
	return cpu, hwm
}

// fams are the metric families of a /metrics text, by name.
type fams = map[string]*dto.MetricFamily

func parse(r io.Reader) (fams, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(r)
}

// series are f's with each name=value of want.
func series(f *dto.MetricFamily, want ...string) []*dto.Metric {
	return slices.DeleteFunc(slices.Clone(f.GetMetric()), func(m *dto.Metric) bool {
		return slices.ContainsFunc(want, func(w string) bool {
			return !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName()+"="+l.GetValue() == w })
		})
	})
}

// sum adds up the counters and gauges of f's series with want.
func sum(f *dto.MetricFamily, want ...string) (t float64) {
	for _, m := range series(f, want...) {
		t += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return t
}

func histogram(f *dto.MetricFamily, want ...string) (h Histogram) {
	for _, m := range series(f, want...) {
		for i, b := range m.GetHistogram().GetBucket() {
			if i == len(h.Bounds) && !math.IsInf(b.GetUpperBound(), 1) {
				h.Bounds, h.Counts = append(h.Bounds, b.GetUpperBound()), append(h.Counts, 0)
			}
			if i < len(h.Counts) {
				h.Counts[i] += float64(b.GetCumulativeCount())
			}
		}
		h.Count, h.Sum = h.Count+float64(m.GetHistogram().GetSampleCount()), h.Sum+m.GetHistogram().GetSampleSum()
	}
	return h
}

// linkTo starts a TCP proxy to target, holding every chunk delay each way.
func linkTo(target string, delay time.Duration) (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	// Each connection, both ways, until the link is closed.
	go func() {
		for client, err := ln.Accept(); err == nil; client, err = ln.Accept() {
			go func() {
				if server, err := net.Dial("tcp", target); err == nil {
					var wg sync.WaitGroup
					wg.Go(func() { pipe(server, client, delay) })
					pipe(client, server, delay)
					wg.Wait()
					_ = server.Close()
				}
				_ = client.Close()
			}()
		}
	}()
	return ln, nil
}

// pipe copies src to dst, each chunk delay after it was read: a waiting chunk
// never holds up the reads behind it, so throughput is not limited.
func pipe(dst, src net.Conn, delay time.Duration) {
	type chunk struct {
		data []byte
		at   time.Time // when it was read
	}
	queue := make(chan chunk, 4096)
	go func() {
		defer close(queue)
		buf := make([]byte, 64<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 { // a copy of exactly what arrived
				queue <- chunk{append([]byte(nil), buf[:n]...), time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	var err error
	for c := range queue {
		if err == nil { // else drained, so the reader is never stuck
			time.Sleep(time.Until(c.at.Add(delay)))
			if _, err = dst.Write(c.data); err != nil {
				_, _ = src.Close(), dst.Close()
			}
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok && err == nil {
		_ = tc.CloseWrite()
	}
}

// Result is what a run measured: docs/benchmarks.md is rendered from it alone.
type Result struct {
	Run      Run
	Sections []*Section
}

// Run is how and where the bench ran.
type Run struct {
	Command, CPUs, CPU, Kernel, Memory, Go, Kubectl string
	Date                                            time.Time
	Minutes                                         float64 // the whole run; 0 while it runs
}

func machine() Run {
	sh := func(cmd string) string {
		out, _ := exec.Command("bash", "-c", cmd).CombinedOutput()
		return strings.TrimSpace(string(out))
	}
	return Run{Command: strings.TrimSpace("go run ./hack/bench " + strings.Join(os.Args[1:], " ")), Date: time.Now().UTC(),
		CPUs: sh("nproc"), CPU: sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs"), Kernel: sh("uname -sr"),
		Memory: sh("free -h"), Go: sh("go version"), Kubectl: sh("kubectl version --client 2>/dev/null | head -1")}
}

// Section is what a phase measured at one scope: series, and facts to show.
type Section struct {
	Phase, Scope            string
	Size                    size          `json:",omitzero"`
	Content                 content       `json:",omitzero"`  // of each namespace of its fixture
	Namespace               string        `json:",omitempty"` // its one namespace
	Namespaces, Types, CRDs int           `json:",omitempty"` // its namespaces; namespaced types in discovery; of them generated CRDs
	Delay, Pause            time.Duration `json:",omitempty"` // the link's one-way delay; the pause after building a batch
	Commands                []string      `json:",omitempty"`
	Series                  []*Series     `json:",omitempty"`
	Idle                    *WatchStep    `json:",omitempty"` // the watch's steps; Idle: the API server alone
	Steps                   []WatchStep   `json:",omitempty"`
	Webhook, Predictions    Histogram     `json:",omitzero"`  // the guard's answers as kube-apiserver timed them; its predictions
	FailedOpen              float64       `json:",omitempty"` // the guard's and kube-apiserver's counts
	Cols                    []string      `json:"-"`          // the metrics of its table being rendered
}

func (s *Section) series(key, name string) *Series {
	s.Series = append(s.Series, &Series{Key: key, Name: name})
	return s.Series[len(s.Series)-1]
}

// S is the series of key, empty when s has none.
func (s *Section) S(key string) *Series {
	if i := slices.IndexFunc(s.Series, func(x *Series) bool { return x.Key == key }); i >= 0 {
		return s.Series[i]
	}
	return &Series{}
}

func (s *Section) Med(key, metric string) float64 { return s.S(key).Of(metric).Median() }
func (s *Section) RTT() time.Duration             { return 2 * s.Delay }
func (s *Section) Last() WatchStep                { return s.Steps[len(s.Steps)-1] }

// Paired is a's times over b's run by run: runs drift more than they differ.
func (s *Section) Paired(a, b string) floats {
	xs, ys := s.S(a).Of("s"), s.S(b).Of("s")
	out := make(floats, min(len(xs), len(ys)))
	for i := range out {
		out[i] = ratio(xs[i], ys[i])
	}
	return out
}

// Sample is one measured run of a command, or of several run as one.
type Sample struct {
	Seconds                      float64            // the command's own wall time
	FromDelete                   float64            `json:",omitempty"` // from the `kubectl delete namespace` before it to its exit (the controller's: to gone)
	Requests, Lists, Discoveries float64            // all it caused, of which LIST, and GET /apis (one per discovery)
	MaxRSS                       int64              `json:",omitempty"` // KiB, the child's ru_maxrss
	CPU, ServerCPU               float64            `json:",omitempty"` // its user + system s, and etcd's and kube-apiserver's meanwhile
	ByVerb                       map[string]float64 `json:",omitempty"` // by "VERB resource"; a series' first run only
}

// Series is one contender's runs; its Key names it to targets and the template.
type Series struct {
	Key, Name string
	Runs      []Sample
}

func (s *Series) add(x Sample) {
	if len(s.Runs) > 0 {
		x.ByVerb = nil
	}
	s.Runs = append(s.Runs, x)
}

func (s *Series) Of(metric string) floats {
	out := make(floats, len(s.Runs))
	for i, x := range s.Runs {
		out[i] = metrics[metric].of(x)
	}
	return out
}

func (s *Series) First() Sample { return append(s.Runs, Sample{})[0] }

// metrics are a sample's numbers, with their table heads and precision.
var metrics = map[string]struct {
	head string
	prec int
	of   func(Sample) float64
}{
	"s":           {"s", 3, func(x Sample) float64 { return x.Seconds }},
	"delete":      {"s from the delete", 2, func(x Sample) float64 { return x.FromDelete }},
	"requests":    {"requests", 0, func(x Sample) float64 { return x.Requests }},
	"lists":       {"LIST", 0, func(x Sample) float64 { return x.Lists }},
	"discoveries": {"discoveries (`GET /apis`)", 0, func(x Sample) float64 { return x.Discoveries }},
	"rss":         {"max RSS MiB", 1, func(x Sample) float64 { return float64(x.MaxRSS) / 1024 }},
	"cpu":         {"CPU s", 2, func(x Sample) float64 { return x.CPU }},
	"server":      {"etcd + kube-apiserver CPU s", 2, func(x Sample) float64 { return x.ServerCPU }},
}

// floats are one metric over runs.
type floats []float64

// Median is the middle value, or the mean of the middle two.
func (xs floats) Median() float64 {
	s := append(slices.Sorted(slices.Values(xs)), 0) // 0 for no runs
	return (s[(len(xs)-1)/2] + s[len(xs)/2]) / 2
}

// Quantile is the q-quantile by nearest rank (p99 of 30: the highest).
func (xs floats) Quantile(q float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	return append(s, 0)[max(0, int(math.Ceil(q*float64(len(s))))-1)]
}

func (xs floats) Max() float64 { return slices.Max(append(xs, 0)) }

func (xs floats) List(prec int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.*f", prec, x)
	}
	return strings.Join(parts, ", ")
}

// ratio is a over b, 0 when b is: what was not measured has no ratio.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// Histogram is a Prometheus histogram: counts by finite bound, count, sum.
type Histogram struct {
	Bounds, Counts []float64
	Count, Sum     float64
}

// minus is what h counted since o, an earlier read of the same series.
func (h Histogram) minus(o Histogram) Histogram {
	d := Histogram{Bounds: h.Bounds, Counts: slices.Clone(h.Counts), Count: h.Count - o.Count, Sum: h.Sum - o.Sum}
	for i := range min(len(d.Counts), len(o.Counts)) {
		d.Counts[i] -= o.Counts[i]
	}
	return d
}

// Quantile is PromQL's histogram_quantile: linear within the rank's bucket.
func (h Histogram) Quantile(q float64) float64 {
	rank, lower, below := q*h.Count, 0.0, 0.0
	for i, upper := range h.Bounds {
		if h.Counts[i] >= rank {
			return lower + (upper-lower)*ratio(rank-below, h.Counts[i]-below)
		}
		lower, below = upper, h.Counts[i]
	}
	return lower
}

// WatchStep is a window with Stuck stuck namespaces (none: no watch), per
// resync; MaxRSS is the watch's VmHWM at its end.
type WatchStep struct {
	Stuck, Resyncs int
	Sample
	Diagnoses, DiagSeconds, Errors float64 `json:",omitempty"` // per resync; the watch's seconds per diagnosis; its errors at the end
}

// Own is the watch's requests per resync beyond the API server alone's.
func (s *Section) Own(st WatchStep) (t float64) {
	for k, v := range st.ByVerb {
		t += max(v-s.Idle.ByVerb[k], 0)
	}
	return t
}

//go:embed benchmarks.md.tmpl
var tmplText string

var tmpl = template.Must(template.New("benchmarks").Funcs(template.FuncMap{
	"breakdown": breakdown, "g": g, "cell": cell, "spread": spread,
	"head":  func(c string) string { return metrics[c].head },
	"quiet": func() time.Duration { return quietAfterRound },
	"add":   func(a, b any) float64 { return num(a) + num(b) },
	"sub":   func(a, b any) float64 { return num(a) - num(b) },
	"mul":   func(a, b any) float64 { return num(a) * num(b) },
	"div":   func(a, b any) float64 { return ratio(num(a), num(b)) },
}).Parse(tmplText))

func num(x any) float64 {
	if d, ok := x.(time.Duration); ok {
		return d.Seconds()
	}
	return reflect.ValueOf(x).Convert(reflect.TypeFor[float64]()).Float()
}

// render writes the head (run, targets), then each section by its block.
func render(w io.Writer, r *Result) error {
	err := tmpl.Execute(w, r)
	for _, s := range r.Sections {
		err = cmp.Or(err, tmpl.ExecuteTemplate(w, s.Phase, s))
	}
	return err
}

func writeMarkdown(r *Result, path string) error {
	var md bytes.Buffer
	return cmp.Or(render(&md, r), os.WriteFile(path, md.Bytes(), 0o644))
}

func renderFile(in, out string) error {
	var r Result
	data, err := os.ReadFile(in)
	if err == nil {
		err = json.Unmarshal(data, &r)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	return writeMarkdown(&r, out)
}

// Table is s with the metrics of its table (the "table" block).
func (s *Section) Table(cols ...string) *Section {
	s.Cols = cols
	return s
}

// cell is x's median of metric c, and for times the spread; "–" for none.
func cell(x *Series, c string) string {
	xs, p, med, spr := x.Of(c), metrics[c].prec, "–", "–"
	if xs.Max() > 0 {
		med, spr = fmt.Sprintf("%.*f", p, xs.Median()), fmt.Sprintf("%.*f–%.*f", p, slices.Min(xs), p, xs.Max())
	}
	if spread(c) {
		return med + " | " + spr
	}
	return med
}

func spread(metric string) bool { return metric == "s" || metric == "delete" }

// breakdown is requests by verb and resource, most first; over 4 of a verb and
// count are one entry.
func breakdown(m map[string]float64) (rows []row) {
	groups := map[row][]string{} // verb and count -> resources
	for _, k := range slices.Sorted(maps.Keys(m)) {
		verb, res, _ := strings.Cut(k, " ")
		groups[row{verb, m[k]}] = append(groups[row{verb, m[k]}], res)
	}
	for r, names := range groups {
		if len(names) > 4 {
			r.Name, names = r.Name+",", []string{fmt.Sprintf("each of %d resources (%s, …)", len(names), strings.Join(names[:4], ", "))}
		}
		for _, res := range names {
			rows = append(rows, row{r.Name + " " + res, r.N})
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return cmp.Or(cmp.Compare(b.N, a.N), strings.Compare(a.Name, b.Name)) })
	return rows
}

// row is a line of a breakdown, and its count.
type row struct {
	Name string
	N    float64
}

// g prints a number to three significant digits, bigger ones whole.
func g(x float64) string {
	if math.Abs(x) >= 100 {
		return strconv.FormatFloat(math.Round(x), 'f', -1, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

// target is a goal: a value read on a phase's sections, against a threshold.
type target struct {
	phase, What, Op string // Op: "<=", "<", ">=", ">"; "": written down for comparison only (info)
	Limit           float64
	Unit            string
	read            reader // not ok: the section lacks what it reads
	Why             string // under a MISSED line: why, and what would fix it
}

type reader func(*Section) (v float64, detail string, ok bool)

// at reads only the section of one scope.
func at(scope string, read reader) reader {
	return func(s *Section) (float64, string, bool) {
		v, detail, ok := read(s)
		return v, detail, ok && s.Scope == scope
	}
}

func ran(s *Section, keys ...string) bool {
	return !slices.ContainsFunc(keys, func(k string) bool { return len(s.S(k).Runs) == 0 })
}

// vs is the median of metric of the series a over b's.
func vs(a, b, metric string) reader {
	return func(s *Section) (float64, string, bool) {
		x, y := s.Med(a, metric), s.Med(b, metric)
		return ratio(x, y), fmt.Sprintf("%s s vs %s s", g(x), g(y)), ran(s, a, b)
	}
}

// pairedVs is vs of the times with each run's own ratio beside.
func pairedVs(a, b string) reader {
	return func(s *Section) (float64, string, bool) {
		v, detail, ok := vs(a, b, "s")(s)
		runs := s.Paired(a, b)
		return v, fmt.Sprintf("%s; run by run %s, median %.2fx", detail, runs.List(2), runs.Median()), ok
	}
}

func median(key string) reader {
	return func(s *Section) (float64, string, bool) {
		return s.Med(key, "s"), fmt.Sprintf("median of %d", len(s.S(key).Runs)), ran(s, key)
	}
}

// peak is the highest max RSS of the keys' runs (their medians if med).
func peak(med bool, keys ...string) reader {
	return func(s *Section) (v float64, detail string, ok bool) {
		var each []string
		for _, k := range keys {
			x := s.S(k).Of("rss").Max()
			if med {
				x = s.Med(k, "rss")
			}
			v, ok, each = max(v, x), ok || ran(s, k), append(each, fmt.Sprintf("%s %.1f MiB", s.S(k).Name, x))
		}
		return v, strings.Join(each, ", "), ok
	}
}

var targets = []target{
	{"explain", "explain at least 20x faster than the shell recipe (the recipe's time over explain's)", ">=", 20, "x", at("medium", vs("recipe", "explain", "s")), ""},
	{"explain", "explain within 1.5x of the floor, the plugin binary run directly like the floor", "<=", 1.5, "x", vs("plugin", "floor", "s"),
		"beyond the floor's sweep explain lists the pods again with their spec, reads webhooks, CRDs and the namespace, evaluates the controller's deletion pass and encodes the JSON report, and on 2 cores it competes with kube-apiserver and etcd for CPU. Fix: fold the pod grace periods into the sweep and aggregate while paging."},
	{"explain", "explain within 1.5x of the floor, through kubectl", "<=", 1.5, "x", vs("explain", "floor", "s"),
		"the gap is kubectl's own start-up: it finds the plugin on PATH and execs it, and the gcloud kubectl is a dispatcher that first execs a versioned kubectl; `kubectl ns-doctor version` (no API call, in the table) measures that fixed cost, which does not grow with the namespace. The plugin binary run like the floor is the like-for-like line; only a kubectl without dispatcher removes it."},
	// 8 of explain's own, and the 7 cluster-wide lists owner inference reads
	// once for a finalizer not in the catalogue (the fixtures'):
	// (Cluster)Roles, (Cluster)RoleBindings, Deployments, StatefulSets,
	// DaemonSets (#34).
	{"explain", "explain's LISTs beyond the floor's one per type and page (cluster-wide lists, nothing per object; 7 of them owner inference's)", "<=", 8 + 7, "", func(s *Section) (float64, string, bool) {
		return s.Med("explain", "lists") - s.Med("floor", "lists"), "", ran(s, "explain", "floor")
	}, ""},
	// /version, the namespace, discovery's two, at most 6 holders' status
	// reads; the API server's own (leases, OpenAPI) add up to 2 meanwhile.
	{"explain", "explain's other requests (/version, the namespace, discovery, 6 holders' status reads, 2 of the API server's own)", "<=", 4 + 6 + 2, "", func(s *Section) (float64, string, bool) {
		return s.Med("explain", "requests") - s.Med("explain", "lists"), "", ran(s, "explain")
	}, ""},
	{"explain", "explain's peak memory (median), the plugin binary or through kubectl, whichever is higher", "<=", 100, " MiB", at("large", peak(true, "plugin", "explain")),
		"explain keeps, per type, every object that holds the namespace and a few examples, and counts the rest while paging; a namespace where most objects hold it keeps them all, and GOGC=100 lets the heap grow to about twice that."},
	{"explain-link", "explain over the link within 1.3x of the floor through the same link, through kubectl", "<=", 1.3, "x", vs("link-explain", "link-floor", "s"), ""},
	{"explain-link", "explain over the link within 1.3x of the floor through the same link, the plugin binary run directly", "<=", 1.3, "x", vs("link-plugin", "link-floor", "s"), ""},
	{"explain-link", "the shell recipe over the link, its time over explain's through the same link", "", 0, "x", vs("link-recipe", "link-explain", "s"), ""},
	{"guard", "the guard's p99 as kube-apiserver waited for it, below its budget (--guard-timeout)", "<", guardBudget.Seconds(), " s", func(s *Section) (float64, string, bool) {
		return s.Webhook.Quantile(0.99), fmt.Sprintf("p50 %s s, of %s calls", g(s.Webhook.Quantile(0.5)), g(s.Webhook.Count)), s.Webhook.Count > 0
	}, "the prediction is one explain --if-deleted: a discovery and a metadata list per type, which on 2 cores shared with kube-apiserver and etcd take longer as the namespace grows; a prediction past the budget fails open, so a slow guard never blocks a delete."},
	{"guard", "the guard's answers that failed open (its own count and kube-apiserver's)", "<=", 0, "", func(s *Section) (float64, string, bool) { return s.FailedOpen, "", s.Webhook.Count > 0 }, ""},
	// The same floor run to run on loopback differs by up to a quarter (the
	// purge section's spread); the guard is never asked about content, so a
	// real cost would be a request per object, far beyond.
	{"guard", "the deletion of content with the guard registered within 1.2x of without (purge's floor, command alone)", "<=", 1.2, "x", pairedVs("floor-guard", "floor"), ""},
	{"purge", "purge --force at least 1.5x faster than the namespace controller on loopback (its time over purge's, from `kubectl delete namespace` to gone)", ">=", 1.5, "x", vs("controller", "purge", "delete"), ""},
	{"purge", "purge --force at least 1.5x faster than the namespace controller over the link (only the delete and purge use it)", ">=", 1.5, "x", vs("link-controller", "link-purge", "delete"), ""},
	{"purge", "purge --force within 1.3x of the parallel floor on loopback, command alone", "<=", 1.3, "x", pairedVs("purge", "floor"), ""},
	{"purge", "purge --force within 1.3x of the parallel floor through the same link, command alone", "<=", 1.3, "x", pairedVs("link-purge", "link-floor"), ""},
	{"purge-memory", "purge --force's peak memory, the highest of the runs", "<=", 150, " MiB", peak(false, "purge"), ""},
	{"many", "explain with no name shares one discovery: its discovery requests beyond one explain's", "<=", 0, "", func(s *Section) (float64, string, bool) {
		d := func(key string) float64 {
			v := s.S(key).First().ByVerb
			return v["GET (non-resource)"] + v["GET /api"] + v["GET /apis"]
		}
		return d("all") - d("one"), fmt.Sprintf("%s vs %s", g(d("all")), g(d("one"))), ran(s, "all", "one")
	}, ""},
	{"purge-many", "purge of namespaces an uninstalled operator left stuck, the separate runs' time over one run's", "", 0, "x", vs("loop", "one", "s"), ""},
	{"purge-1000", "purge -l of the namespaces an uninstalled operator left stuck", "<", 60, " s", median("one"), ""},
	{"purge-1000", "explain with no name over the terminating namespaces", "<", 5, " s", median("explain"), ""},
	{"purge-1000", "peak RSS of explain with no name and purge -l, the highest of the runs", "<", 200, " MiB", peak(false, "explain", "one"), ""},
	{"purge-1000", "the per-namespace loop's time over purge -l's", "", 0, "x", vs("loop", "one", "s"), ""},
	{"purge-1000", "purge -l, the -purge-compare build's time over this tree's", "", 0, "x", vs("compare", "one", "s"), ""},
	{"watch", "the watch's peak RSS (VmHWM at the end)", "<", 100, " MiB", watchRead(func(s *Section) (float64, string) { return float64(s.Last().MaxRSS) / 1024, "" }), ""},
	{"watch", "the watch's requests per resync grow with the stuck namespaces: its own requests per resync and stuck namespace", ">", 0, "", watchRead(func(s *Section) (float64, string) {
		first, last := s.Steps[0], s.Last()
		if last.Stuck == first.Stuck {
			return s.Own(first) / float64(first.Stuck), ""
		}
		return (s.Own(last) - s.Own(first)) / float64(last.Stuck-first.Stuck), "between the first step and the last"
	}), ""},
	{"watch", "the watch's GETs of single ConfigMaps or Secrets per resync (nothing per object)", "<=", 0, "", watchRead(func(s *Section) (n float64, _ string) {
		for _, st := range s.Steps {
			n += st.ByVerb["GET configmaps"] + st.ByVerb["GET secrets"]
		}
		return n, ""
	}), ""},
	{"watch", "the watch's most requests of one type per resync, over the cluster's namespaces (nothing near one per namespace)", "<", 0.5, "", watchRead(func(s *Section) (most float64, detail string) {
		for _, st := range s.Steps {
			for k, v := range st.ByVerb {
				if v/float64(s.Namespaces) > most {
					most, detail = v/float64(s.Namespaces), fmt.Sprintf("%s ×%s with %d stuck", k, g(v), st.Stuck)
				}
			}
		}
		return most, detail
	}), ""},
}

// watchRead reads a watch section that measured at least one step.
func watchRead(read func(*Section) (float64, string)) reader {
	return func(s *Section) (v float64, detail string, ok bool) {
		if ok = len(s.Steps) > 0 && s.Idle != nil; ok {
			v, detail = read(s)
		}
		return v, detail, ok
	}
}

// verdict is a target read on a section: a line of the Targets section.
type verdict struct {
	target
	Scope, Detail string
	V             float64
}

// Mark is whether it met its target ("info": it has none).
func (v verdict) Mark() string {
	if c := cmp.Compare(v.V, v.Limit); v.Op == "" {
		return "**info**"
	} else if c < 0 && v.Op[0] == '<' || c > 0 && v.Op[0] == '>' || c == 0 && strings.HasSuffix(v.Op, "=") {
		return "**met**"
	}
	return "**MISSED**"
}

// Verdicts are the lines of the Targets section.
func (r *Result) Verdicts() (out []verdict) {
	for _, t := range targets {
		for _, s := range r.Sections {
			if v, detail, ok := t.read(s); ok && s.Phase == t.phase {
				out = append(out, verdict{t, s.Scope, detail, v})
			}
		}
	}
	return out
}

func (r *Result) Summary() string {
	n := map[string]int{}
	for _, v := range r.Verdicts() {
		n[v.Mark()]++
	}
	return fmt.Sprintf("Targets met: %d; MISSED: %d; numbers for comparison only (info): %d.", n["**met**"], n["**MISSED**"], n["**info**"])
}
