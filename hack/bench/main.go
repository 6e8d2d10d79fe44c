// Command bench is `make bench`: it measures ns-doctor on the local control
// plane (real etcd + kube-apiserver + kube-controller-manager) into one
// Result, written as JSON (-json), and renders docs/benchmarks.md from it
// through benchmarks.md.tmpl; -render re-renders a JSON file alone.
//
// It is a benchmark, not a test: nothing fails on a slow machine; each of
// targets (targets.go) is written down as met or MISSED with its numbers.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/ns-doctor/ns-doctor/test/support/controlplane"
)

// phase is one measurement: a function returning its result, kept in a
// field of Result. Phases of one plane share a control plane (the
// namespace controller off), started for the first of them.
type phase struct {
	name, plane string
	on          func(o *options) bool // its size flags ask for something
	run         func(b *bench, ctx context.Context) error
}

// into runs measure and keeps its result, partial or not, in field.
func into[T any](measure func(*bench, context.Context) (T, error), field func(*Result) *T) func(*bench, context.Context) error {
	return func(b *bench, ctx context.Context) (err error) { *field(b.res), err = measure(b, ctx); return err }
}

// phases, in the order they run. The explain phases share the stuck
// fixtures; the namespace controller of the purge plane would work on
// them too; the phases at scale each have their own, or a thousand
// namespaces of one would be in the other's cluster.
var phases = []phase{
	{"explain", "stuck", func(o *options) bool { return len(o.sizes) > 0 }, into((*bench).explainSizes, func(r *Result) *[]*ExplainResult { return &r.Explain })},
	{"explain-link", "stuck", func(o *options) bool { return o.linkSize != "" && o.linkDelay > 0 }, into((*bench).explainLink, func(r *Result) **LinkResult { return &r.Link })},
	{"purge", "purge", func(o *options) bool { return o.purgeSize != "" }, into((*bench).purgeRace, func(r *Result) **PurgeResult { return &r.Purge })},
	{"purge-memory", "purge", func(o *options) bool { return o.memorySize != "" }, into((*bench).purgeMemory, func(r *Result) **MemoryResult { return &r.Memory })},
	{"many", "purge", func(o *options) bool { return o.manyNS > 0 }, into((*bench).many, func(r *Result) **ManyResult { return &r.Many })},
	// Last of its plane: its CRD would add a type to the phases above.
	{"purge-many", "purge", func(o *options) bool { return o.manyPurgeNS > 0 }, into((*bench).purgeMany, func(r *Result) **BatchResult { return &r.PurgeMany })},
	{"purge-1000", "purge-1000", func(o *options) bool { return o.p1kNS > 0 }, into((*bench).purge1000, func(r *Result) **BatchResult { return &r.P1k })},
	{"watch", "watch", func(o *options) bool { return o.watchNS > 0 }, into((*bench).watch, func(r *Result) **WatchResult { return &r.Watch })},
}

type options struct {
	phases                                                           map[string]bool
	sizes                                                            []string
	out, json, render, purgeSize, purgeCompare, linkSize, memorySize string
	runs, purgeRuns, manyNS, manyPurgeNS, manyPurgeRuns              int
	p1kNS, p1kRuns, p1kTypes, p1kLoopSample, watchNS, watchObjects   int
	watchTypes, watchResyncs                                         int
	watchStuck                                                       []int
	purgeController                                                  bool
	linkDelay, watchResync, p1kLoopMax                               time.Duration
}

func parseFlags(args []string) (o options, err error) {
	var names []string
	for _, p := range phases {
		names = append(names, p.name)
	}
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	phaseList := fs.String("phases", strings.Join(names, ","), "phases to run, of "+strings.Join(names, ",")+"; each also needs its size flag non-empty or its count above 0")
	sizeList := fs.String("sizes", "small,medium,large", "explain's fixtures: small (40 types, 200 objects), medium (150, 10k), large (150, 100k); each size flag also takes a number of objects over 150 types")
	watchStuck := fs.String("watch-stuck", "20,40", "watch: stuck namespaces at each measured step, increasing")
	fs.StringVar(&o.out, "out", "docs/benchmarks.md", "the markdown to write")
	fs.StringVar(&o.json, "json", "", "the results, as JSON (default: -out with .json)")
	fs.StringVar(&o.render, "render", "", "render -out from this JSON file of an earlier run, measuring nothing")
	fs.IntVar(&o.runs, "runs", 0, "explain: runs per contender (0: 5, 3 for large)")
	fs.StringVar(&o.purgeSize, "purge-size", "medium", "purge: fixture size, against the namespace controller and the floor on each path")
	fs.IntVar(&o.purgeRuns, "purge-runs", 6, "purge: runs per path (a multiple of the contenders, 2 or 3, gives each every place)")
	fs.BoolVar(&o.purgeController, "purge-controller", true, "purge: time the namespace controller too (false: a quick A/B of purge and the floor)")
	fs.StringVar(&o.purgeCompare, "purge-compare", "", "purge, purge-1000: another build of kubectl-ns_doctor (a path) measured in the same runs")
	fs.DurationVar(&o.linkDelay, "link-delay", 25*time.Millisecond, "one-way delay of the slow link (0: loopback only)")
	fs.StringVar(&o.linkSize, "link-size", "medium", "explain-link: fixture size")
	fs.StringVar(&o.memorySize, "memory-size", "large", "purge-memory: fixture size (one run)")
	fs.IntVar(&o.manyNS, "namespaces", 50, "many: terminating namespaces for explain with no name")
	fs.IntVar(&o.manyPurgeNS, "many-purge-namespaces", 20, "purge-many: namespaces per batch, purged in one run and one run each")
	fs.IntVar(&o.manyPurgeRuns, "many-purge-runs", 3, "purge-many: runs per contender")
	fs.IntVar(&o.p1kNS, "purge1000-namespaces", 1000, "purge-1000: stuck namespaces")
	fs.IntVar(&o.p1kRuns, "purge1000-runs", 1, "purge-1000: runs (each builds the fixture afresh for every contender)")
	fs.IntVar(&o.p1kTypes, "purge1000-types", 150, "purge-1000: namespaced types in discovery, generated CRDs added up to it")
	fs.IntVar(&o.p1kLoopSample, "purge1000-loop-sample", 50, "purge-1000: namespaces the per-namespace loop purges, scaled up to all (0: all)")
	fs.DurationVar(&o.p1kLoopMax, "purge1000-loop-max", 10*time.Minute, "purge-1000: when the sample says the whole loop takes less, it runs over all")
	fs.IntVar(&o.watchNS, "watch-namespaces", 1000, "watch: namespaces in the cluster")
	fs.IntVar(&o.watchObjects, "watch-objects", 50, "watch: ConfigMaps in each namespace")
	fs.IntVar(&o.watchTypes, "watch-types", 0, "watch: namespaced types, generated CRDs added up to it (0: the built-in ones)")
	fs.DurationVar(&o.watchResync, "watch-resync", 15*time.Second, "watch: its --resync")
	fs.IntVar(&o.watchResyncs, "watch-resyncs", 4, "watch: resyncs per measured window")
	_ = fs.Parse(args)
	if o.json == "" {
		o.json = strings.TrimSuffix(o.out, filepath.Ext(o.out)) + ".json"
	}
	o.phases = map[string]bool{}
	for p := range strings.SplitSeq(*phaseList, ",") {
		o.phases[p] = true
		if !slices.Contains(names, p) {
			return o, fmt.Errorf("unknown phase %q (phases: %s)", p, strings.Join(names, ","))
		}
	}
	if o.sizes = strings.Split(*sizeList, ","); *sizeList == "" {
		o.sizes = nil
	}
	for _, s := range append(slices.Clone(o.sizes), o.purgeSize, o.linkSize, o.memorySize) {
		if _, err := sizeOf(s); s != "" && err != nil {
			return o, err
		}
	}
	for f := range strings.SplitSeq(*watchStuck, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || len(o.watchStuck) > 0 && n <= o.watchStuck[len(o.watchStuck)-1] || n > o.watchNS {
			return o, fmt.Errorf("-watch-stuck wants increasing positive numbers up to -watch-namespaces, got %q", *watchStuck)
		}
		o.watchStuck = append(o.watchStuck, n)
	}
	if _, err := os.Stat(o.purgeCompare); o.purgeCompare != "" && err != nil {
		return o, fmt.Errorf("-purge-compare: %w", err)
	}
	if o.linkDelay < 0 || o.p1kLoopSample < 0 || o.watchResync <= 0 || min(o.watchResyncs, o.p1kRuns, o.purgeRuns, o.manyPurgeRuns) < 1 {
		return o, fmt.Errorf("-link-delay and -purge1000-loop-sample must not be negative, -watch-resync and the -*-runs and -*-resyncs flags must be positive")
	}
	return o, nil
}

func main() {
	if out := os.Getenv(spawnEnv); out != "" {
		spawn(out, os.Args[1:])
	}
	o, err := parseFlags(os.Args[1:])
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

// bench carries what every phase needs.
type bench struct {
	o                           options
	res                         *Result
	tmp, plugin, floor, compare string // compare: the -purge-compare build, "" without
	cp                          *controlplane.ControlPlane
	fx                          *fixtures
	meter, linkMeter            *meter // commands on loopback, and through the slow link (nil without)
	link                        *link
	built                       map[string]bool // the stuck fixtures this control plane holds
}

func run(ctx context.Context, o options) (err error) {
	started := time.Now()
	tmp, err := os.MkdirTemp("", "ns-doctor-bench-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	b := &bench{o: o, tmp: tmp, res: &Result{Run: machine()}, plugin: filepath.Join(tmp, "kubectl-ns_doctor"), floor: filepath.Join(tmp, "floor")}
	// Plain builds (no -ldflags -s -w): what `go install` gives users.
	cmds := []*exec.Cmd{exec.CommandContext(ctx, "go", "build", "-o", b.plugin, "./cmd/kubectl-ns_doctor"), exec.CommandContext(ctx, "go", "build", "-o", b.floor, "./hack/bench/floor")}
	if o.purgeCompare != "" { // as kubectl-ns_doctor, in a folder of its own
		b.compare = filepath.Join(tmp, "compare", "kubectl-ns_doctor")
		cmds = append(cmds, exec.CommandContext(ctx, "install", "-D", o.purgeCompare, b.compare))
	}
	for _, cmd := range cmds {
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %v\n%s", cmd.Args, err, out)
		}
	}
	defer b.stopControlPlane()
	// Saved after every phase: an interrupted run still leaves what it measured.
	defer func() { err = cmp.Or(err, b.save()) }()
	plane := ""
	for _, p := range phases {
		if !o.phases[p.name] || !p.on(&b.o) {
			continue
		} else if p.plane != plane {
			b.stopControlPlane()
			if err := b.startControlPlane(ctx); err != nil {
				return err
			}
			plane = p.plane
		}
		logf("phase %s", p.name)
		t0 := time.Now()
		if err := p.run(b, ctx); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		b.res.Run.Phases = append(b.res.Run.Phases, PhaseTime{p.name, time.Since(t0).Round(time.Second)})
		_ = b.save()
	}
	b.res.Run.Minutes = time.Since(started).Minutes()
	return nil
}

func (b *bench) save() error {
	data, err := json.MarshalIndent(b.res, "", " ")
	if err == nil {
		err = os.WriteFile(b.o.json, append(data, '\n'), 0o644)
	}
	if err == nil {
		err = writeMarkdown(b.res, b.o.out)
	}
	return err
}

func (b *bench) startControlPlane(ctx context.Context) error {
	logf("starting etcd and kube-apiserver (namespace controller off)")
	cp, err := controlplane.Start(ctx, controlplane.Options{WithoutControllerManager: true})
	if err != nil {
		return err
	}
	b.cp, b.built = cp, map[string]bool{}
	if b.fx, err = newFixtures(cp.Config); err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cp.Config)
	meter := func(kubeconfig string) *meter {
		return &meter{client: client, tmp: b.tmp, servers: cp.ServerPIDs, env: append(os.Environ(), "PATH="+b.tmp+string(os.PathListSeparator)+os.Getenv("PATH"),
			"KUBECONFIG="+kubeconfig, "KUBECACHEDIR="+filepath.Join(b.tmp, "kube-cache"))} // kubectl's discovery cache, not ~/.kube's
	}
	b.meter, b.linkMeter = meter(cp.Kubeconfig), nil
	if kc := filepath.Join(b.tmp, "kubeconfig-link"); err == nil && b.o.linkDelay > 0 {
		b.link, err = linkTo(cp.Kubeconfig, kc, b.o.linkDelay)
		b.linkMeter = meter(kc)
	}
	return err
}

func (b *bench) stopControlPlane() {
	if b.link != nil {
		_ = b.link.Close()
		b.link = nil
	}
	if b.cp != nil {
		b.cp.Stop()
		b.cp = nil
	}
}

// path is one way for commands to reach the API server.
type path struct {
	name string
	m    *meter
}

func (b *bench) paths() []path {
	ps := []path{{"loopback", b.meter}}
	if b.linkMeter != nil {
		ps = append(ps, path{fmt.Sprintf("link (%v RTT)", 2*b.o.linkDelay), b.linkMeter})
	}
	return ps
}

// order is the order of n contenders in run r: each run starts with a
// different one, and every other cycle of n runs goes backwards, so over
// 2n runs each takes each place (for 3, every order once). Whoever
// follows a heavy contender finds the API server busier (GC, watch
// cache): a fixed order would bias the medians.
func order(r, n int) []int {
	out := make([]int, n)
	for k := range out {
		if out[k] = (r + k) % n; (r/n)%2 == 1 {
			out[k] = (r + n - k) % n
		}
	}
	return out
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
