// Command bench is `make bench`: it measures ns-doctor on the local control
// plane (real etcd + kube-apiserver + kube-controller-manager) and writes
// the command, the machine and the raw numbers to docs/benchmarks.md.
//
// It is a benchmark, not a test: nothing fails on a slow machine; targets
// met or missed are written down with the numbers. See docs/benchmarks.md.
package main

import (
	"context"
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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/ns-doctor/ns-doctor/test/support/controlplane"
)

type options struct {
	phases    map[string]bool
	sizes     []string
	runs      int // 0: 5 for small and medium, 3 for large
	out       string
	purgeSize string
	purgeRuns int
	// purgeController: the purge phase times the namespace controller too.
	purgeController bool
	// purgeCompare is another build of the plugin, measured in the same
	// runs of the purge phase as one more contender.
	purgeCompare string
	purgeLog     string
	linkDelay    time.Duration // one way; 0: no link
	linkSize     string
	memorySize   string
	memoryRuns   int
	manyNS       int
	// purge-many: namespaces per batch and runs per contender.
	manyPurgeNS   int
	manyPurgeRuns int
	recipeMax     int
	// watch: the cluster (namespaces, ConfigMaps each, types), the stuck
	// namespaces of each measured step (increasing), the watch's --resync
	// and the resyncs per measured window.
	watchNS      int
	watchObjects int
	watchTypes   int
	watchStuck   []int
	watchResync  time.Duration
	watchResyncs int
	// purge-1000: stuck namespaces, runs, types in discovery, and the
	// per-namespace loop's sample and the time under which it runs all.
	p1kNS         int
	p1kRuns       int
	p1kTypes      int
	p1kLoopSample int
	p1kLoopMax    time.Duration
	commandStr    string
}

// phases, in the order they run. Each also needs its own size flag (or
// -namespaces) to be non-empty.
var phases = []string{"explain", "explain-link", "purge", "purge-memory", "many", "purge-many", "purge-1000", "watch"}

func main() {
	if out := os.Getenv(spawnEnv); out != "" {
		spawn(out, os.Args[1:])
	}
	var o options
	phaseList := flag.String("phases", strings.Join(phases, ","), "phases to run, of "+strings.Join(phases, ",")+
		": explain (at each of -sizes), explain over the link (at -link-size, with and without the link), purge against the namespace controller and purge's floor "+
		"(at -purge-size, loopback and the link), purge's memory (at -memory-size), explain with no name (-namespaces), "+
		"purge of namespaces an uninstalled operator left stuck, in one run and one run each (-many-purge-namespaces), "+
		"explain and purge -l over 1,000 such namespaces against the per-namespace loop (-purge1000-namespaces), "+
		"the watch command's memory and requests per resync on a cluster of 1,000 namespaces (-watch-namespaces)")
	sizeList := flag.String("sizes", "small,medium,large", "fixture sizes for explain: small (40 types, 200 objects), medium (150, 10k), large (150, 100k); "+
		"any size flag also takes a number of objects (over 150 types), e.g. 1000, for a quick check")
	flag.IntVar(&o.runs, "runs", 0, "runs per contender of the explain phases (0: 5 for small and medium, 3 for large)")
	flag.StringVar(&o.out, "out", "docs/benchmarks.md", "where to write the results (markdown)")
	flag.StringVar(&o.purgeSize, "purge-size", "medium", "fixture size for purge against the namespace controller and the floor (empty: skip)")
	flag.IntVar(&o.purgeRuns, "purge-runs", 6, "runs of purge against the namespace controller and the floor, per link (a multiple of the contenders, 2 or 3, gives each every place in the order as often)")
	flag.BoolVar(&o.purgeController, "purge-controller", true, "time the namespace controller in the purge phase (false: purge and the floor only, for quick comparisons)")
	flag.StringVar(&o.purgeCompare, "purge-compare", "", "another build of kubectl-ns_doctor (a path) to measure in the same runs of the purge phase, side by side with this tree's")
	flag.StringVar(&o.purgeLog, "purge-log", "", "with the purge phase: also write the -v=6 request logs of one extra, unmeasured purge --force and floor per path to this folder")
	flag.DurationVar(&o.linkDelay, "link-delay", 25*time.Millisecond, "one-way delay of the slow link (a round trip costs twice it); 0: loopback only")
	flag.StringVar(&o.linkSize, "link-size", "medium", "fixture size for explain over the link (empty: skip)")
	flag.StringVar(&o.memorySize, "memory-size", "large", "fixture size for purge --force's peak memory (empty: skip)")
	flag.IntVar(&o.memoryRuns, "memory-runs", 1, "runs of purge --force's peak memory")
	flag.IntVar(&o.manyNS, "namespaces", 50, "terminating namespaces for explain with no name (0: skip)")
	flag.IntVar(&o.manyPurgeNS, "many-purge-namespaces", 20, "namespaces per batch for purge-many, purged in one run and one run each (0: skip)")
	flag.IntVar(&o.manyPurgeRuns, "many-purge-runs", 3, "runs per contender of purge-many")
	flag.IntVar(&o.recipeMax, "recipe-runs", 3, "at most this many runs of the slow shell recipe per size")
	flag.IntVar(&o.watchNS, "watch-namespaces", 1000, "watch: namespaces in the cluster (0: skip the phase)")
	flag.IntVar(&o.watchObjects, "watch-objects", 50, "watch: ConfigMaps in each namespace")
	flag.IntVar(&o.watchTypes, "watch-types", 0, "watch: namespaced types in discovery, generated CRDs added up to it (0: the built-in types only)")
	watchStuck := flag.String("watch-stuck", "20,40", "watch: stuck namespaces at each measured step, increasing (each step deletes more)")
	flag.DurationVar(&o.watchResync, "watch-resync", 15*time.Second, "watch: its --resync")
	flag.IntVar(&o.watchResyncs, "watch-resyncs", 4, "watch: resyncs per measured window")
	flag.IntVar(&o.p1kNS, "purge1000-namespaces", 1000, "purge-1000: stuck namespaces (0: skip the phase)")
	flag.IntVar(&o.p1kRuns, "purge1000-runs", 1, "purge-1000: runs (each builds the fixture afresh for every contender)")
	flag.IntVar(&o.p1kTypes, "purge1000-types", 150, "purge-1000: namespaced types in discovery, generated CRDs added up to it")
	flag.IntVar(&o.p1kLoopSample, "purge1000-loop-sample", 50, "purge-1000: namespaces the per-namespace loop purges, scaled up to all (0: all)")
	flag.DurationVar(&o.p1kLoopMax, "purge1000-loop-max", 10*time.Minute, "purge-1000: when the sample says the whole loop takes less, it runs over all the namespaces")
	flag.Parse()
	usage := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
		os.Exit(2)
	}
	o.phases = map[string]bool{}
	for _, p := range strings.Split(*phaseList, ",") {
		if p = strings.TrimSpace(p); p != "" && !slices.Contains(phases, p) {
			usage("unknown phase %q (phases: %s)", p, strings.Join(phases, ","))
		}
		o.phases[p] = true
	}
	if *sizeList != "" && o.phases["explain"] {
		o.sizes = strings.Split(*sizeList, ",")
	}
	for _, s := range o.sizes {
		if _, err := sizeOf(s); err != nil {
			usage("%v", err)
		}
	}
	for _, s := range []*string{&o.purgeSize, &o.linkSize, &o.memorySize} {
		if _, err := sizeOf(*s); *s != "" && err != nil {
			usage("%v", err)
		}
	}
	if o.purgeCompare != "" {
		if _, err := os.Stat(o.purgeCompare); err != nil {
			usage("-purge-compare: %v", err)
		}
	}
	if o.linkDelay < 0 {
		usage("-link-delay must not be negative")
	}
	for _, f := range strings.Split(*watchStuck, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || len(o.watchStuck) > 0 && n <= o.watchStuck[len(o.watchStuck)-1] {
			usage("-watch-stuck wants increasing positive numbers, got %q", *watchStuck)
		}
		o.watchStuck = append(o.watchStuck, n)
	}
	switch {
	case o.watchNS > 0 && len(o.watchStuck) == 0:
		usage("-watch-stuck is empty")
	case o.watchNS > 0 && o.watchStuck[len(o.watchStuck)-1] > o.watchNS:
		usage("-watch-stuck %v asks for more stuck namespaces than -watch-namespaces %d", o.watchStuck, o.watchNS)
	case o.watchResync <= 0 || o.watchResyncs < 1:
		usage("-watch-resync and -watch-resyncs must be positive")
	case o.p1kRuns < 1 || o.p1kLoopSample < 0:
		usage("-purge1000-runs must be positive and -purge1000-loop-sample not negative")
	}
	// What each phase needs; a phase left out or given no size is skipped.
	if !o.phases["purge"] {
		o.purgeSize = ""
	}
	if !o.phases["explain-link"] || o.linkDelay == 0 {
		o.linkSize = ""
	}
	if !o.phases["purge-memory"] || o.memoryRuns < 1 {
		o.memorySize = ""
	}
	if !o.phases["many"] {
		o.manyNS = 0
	}
	if !o.phases["purge-many"] || o.manyPurgeRuns < 1 {
		o.manyPurgeNS = 0
	}
	if !o.phases["purge-1000"] {
		o.p1kNS = 0
	}
	if !o.phases["watch"] {
		o.watchNS = 0
	}
	o.commandStr = "go run ./hack/bench " + strings.Join(os.Args[1:], " ")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

// bench carries what every phase needs.
type bench struct {
	o      options
	tmp    string
	rep    *report
	cp     *controlplane.ControlPlane
	fx     *fixtures
	meter  *meter // commands on loopback, straight to the API server
	plugin string
	floor  string
	// compare is the -purge-compare build, as kubectl-ns_doctor in a
	// folder of its own ("" without it).
	compare string
	// The slow link to the API server (nil when -link-delay is 0) and a
	// meter whose commands go through it; the meter's own reads of
	// /metrics, the fixtures and waitGone stay direct.
	link      *link
	linkMeter *meter
	// built names the stuck fixtures this control plane holds, so the
	// explain phases can share one.
	built map[string]bool
}

func run(ctx context.Context, o options) error {
	started := time.Now()
	tmp, err := os.MkdirTemp("", "ns-doctor-bench-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	b := &bench{o: o, tmp: tmp, rep: newReport(o), plugin: filepath.Join(tmp, "kubectl-ns_doctor"), floor: filepath.Join(tmp, "floor")}
	if o.purgeCompare != "" {
		b.compare = filepath.Join(tmp, "compare", "kubectl-ns_doctor")
		if err := copyExecutable(o.purgeCompare, b.compare); err != nil {
			return fmt.Errorf("-purge-compare: %w", err)
		}
	}
	// Plain builds (no -ldflags -s -w): what `go install` gives users.
	for _, pb := range [][2]string{{b.plugin, "./cmd/kubectl-ns_doctor"}, {b.floor, "./hack/bench/floor"}} {
		logf("building %s", pb[1])
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", pb[0], pb[1]).CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", pb[1], err, out)
		}
	}

	// The explain phases share one control plane whose namespace
	// controller never runs: the fixtures stay exactly as built, and only
	// the measured command talks to the API server.
	if len(o.sizes) > 0 || o.linkSize != "" {
		if err := b.startControlPlane(ctx); err != nil {
			return err
		}
		err := func() error {
			defer b.stopControlPlane()
			for _, name := range o.sizes {
				if err := b.explainSize(ctx, mustSize(name)); err != nil {
					return err
				}
				_ = b.rep.write()
			}
			if o.linkSize != "" {
				if err := b.explainOverLink(ctx, mustSize(o.linkSize)); err != nil {
					return err
				}
				_ = b.rep.write()
			}
			return nil
		}()
		if err != nil {
			return err
		}
	}
	// A fresh control plane for the phases that run the namespace
	// controller: on the first one it would work on the stuck fixtures too.
	if o.purgeSize != "" || o.memorySize != "" || o.manyNS > 0 || o.manyPurgeNS > 0 {
		if err := b.onFreshControlPlane(ctx, func() error {
			if err := b.fx.ensureTypes(ctx, 150); err != nil {
				return err
			}
			if o.purgeSize != "" {
				if err := b.purgeVsController(ctx, mustSize(o.purgeSize)); err != nil {
					return err
				}
				_ = b.rep.write()
			}
			if o.memorySize != "" {
				if err := b.purgeMemory(ctx, mustSize(o.memorySize)); err != nil {
					return err
				}
				_ = b.rep.write()
			}
			if o.manyNS > 0 {
				if err := b.manyNamespaces(ctx); err != nil {
					return err
				}
				_ = b.rep.write()
			}
			// Last: its CRD would add a type to the phases above.
			if o.manyPurgeNS > 0 {
				if err := b.purgeMany(ctx); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	// The phases at scale each get a control plane of their own: a
	// thousand namespaces of one would be in the other's cluster (and in
	// explain with no name).
	if o.p1kNS > 0 {
		if err := b.onFreshControlPlane(ctx, func() error { return b.purge1000(ctx) }); err != nil {
			return err
		}
		_ = b.rep.write()
	}
	if o.watchNS > 0 {
		if err := b.onFreshControlPlane(ctx, func() error { return b.watchPhase(ctx) }); err != nil {
			return err
		}
	}
	b.rep.finish(time.Since(started))
	return b.rep.write()
}

// onFreshControlPlane runs f on a control plane of its own, started for
// it (the namespace controller off) and stopped after.
func (b *bench) onFreshControlPlane(ctx context.Context, f func() error) error {
	if err := b.startControlPlane(ctx); err != nil {
		return err
	}
	defer b.stopControlPlane()
	return f()
}

// copyExecutable copies the file at from to to, executable.
func copyExecutable(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o755)
}

func (b *bench) startControlPlane(ctx context.Context) error {
	logf("starting etcd and kube-apiserver (namespace controller off)")
	cp, err := controlplane.Start(ctx, controlplane.Options{WithoutControllerManager: true})
	if err != nil {
		return err
	}
	b.cp = cp
	b.built = map[string]bool{}
	if b.fx, err = newFixtures(cp.Config); err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	cache := filepath.Join(b.tmp, "kube-cache")
	env := func(kubeconfig string) []string {
		return append(os.Environ(),
			"PATH="+b.tmp+string(os.PathListSeparator)+os.Getenv("PATH"),
			"KUBECONFIG="+kubeconfig,
			// kubectl's discovery cache in a throwaway folder, not ~/.kube.
			"KUBECACHEDIR="+cache)
	}
	b.meter = &meter{client: client, tmp: b.tmp, env: env(cp.Kubeconfig), servers: cp.ServerPIDs}
	b.link, b.linkMeter = nil, nil
	if b.o.linkDelay > 0 {
		target, err := hostPort(cp.Server())
		if err != nil {
			return err
		}
		if b.link, err = startLink(target, b.o.linkDelay); err != nil {
			return err
		}
		kc := filepath.Join(b.tmp, "kubeconfig-link")
		if err := linkKubeconfig(cp.Kubeconfig, kc, b.link.Addr()); err != nil {
			return err
		}
		b.linkMeter = &meter{client: client, tmp: b.tmp, env: env(kc), servers: cp.ServerPIDs}
		logf("slow link: %s -> %s, %v each way", b.link.Addr(), target, b.o.linkDelay)
	}
	return nil
}

func (b *bench) stopControlPlane() {
	if b.link != nil {
		_ = b.link.Close()
		b.link = nil
	}
	b.cp.Stop()
}

// path is one way for commands to reach the API server.
type path struct {
	name  string // "loopback", "link (50 ms RTT)"
	short string // for namespace names
	m     *meter
}

// paths are loopback and, with -link-delay, the slow link.
func (b *bench) paths() []path {
	ps := []path{{name: "loopback", short: "loop", m: b.meter}}
	if b.linkMeter != nil {
		ps = append(ps, path{name: b.linkName(), short: "link", m: b.linkMeter})
	}
	return ps
}

func (b *bench) linkName() string {
	return fmt.Sprintf("link (%v RTT)", 2*b.o.linkDelay)
}

func (b *bench) runsFor(s size) int {
	switch {
	case b.o.runs > 0:
		return b.o.runs
	case s.Name == "large":
		return 3
	}
	return 5
}

// explainSize builds one stuck namespace and measures explain, the plugin
// binary, the floor and the shell recipe on it, interleaved run by run so
// drift (caches, compaction) hits them alike.
func (b *bench) explainSize(ctx context.Context, s size) error {
	ns := "bench-" + s.Name
	logf("[%s] generating CRDs up to %d resource types", s.Name, s.Types)
	t0 := time.Now()
	if err := b.fx.ensureTypes(ctx, s.Types); err != nil {
		return err
	}
	crdSecs := since(t0)
	c := content{Objects: s.Objects, FinalizerEvery: 10, Pods: 10}
	logf("[%s] creating %d objects (+%d pods) in %s", s.Name, c.Objects, c.Pods, ns)
	t0 = time.Now()
	if err := b.fx.populate(ctx, ns, c); err != nil {
		return err
	}
	popSecs := since(t0)
	if err := b.fx.DeleteNamespace(ctx, ns); err != nil {
		return err
	}
	b.built[ns] = true
	types, pages, err := b.expectedLists(ctx, ns)
	if err != nil {
		return err
	}
	logf("[%s] fixture: CRDs %.1fs, objects %.1fs (%.0f/s); %d types, %d list pages expected", s.Name, crdSecs, popSecs, float64(c.Objects+c.Pods)/popSecs, types, pages)

	// One unmeasured floor run: checks the content is all there, and lets
	// the API server settle after the burst of creates (the first list of
	// a fresh fixture is slower for everyone).
	cmd := exec.CommandContext(ctx, b.floor, ns)
	cmd.Env = b.meter.env
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	if got := strings.TrimSpace(string(out)); got != fmt.Sprint(c.Objects+c.Pods) {
		return fmt.Errorf("floor counted %s objects in %s, want %d", got, ns, c.Objects+c.Pods)
	}

	contenders := []contender{
		{name: "kubectl ns-doctor explain " + ns + " -o json", argv: []string{"kubectl", "ns-doctor", "explain", ns, "-o", "json"}, ok: []int{3}},
		{name: "kubectl-ns_doctor explain " + ns + " -o json (plugin binary)", argv: []string{b.plugin, "explain", ns, "-o", "json"}, ok: []int{3}},
		{name: "floor (discovery + metadata sweep)", argv: []string{b.floor, ns}},
		// kubectl's own cost of finding and exec'ing a plugin, for reading
		// the gap between the first two rows.
		{name: "kubectl ns-doctor version (no API call)", argv: []string{"kubectl", "ns-doctor", "version"}},
		{name: "shell recipe", argv: []string{"bash", "-c", shellRecipe(ns)}, ok: []int{123}, maxRuns: b.o.recipeMax},
	}
	if err := b.measureRuns(ctx, s.Name, contenders, b.runsFor(s)); err != nil {
		return err
	}
	b.rep.explainSection(s, ns, c, crdSecs, popSecs, types, pages, contenders)
	return nil
}

// shellRecipe is the loop users run by hand to see what a namespace
// holds: a kubectl per listable type.
func shellRecipe(ns string) string {
	return "kubectl api-resources --verbs=list --namespaced -o name | xargs -n 1 kubectl get --show-kind --ignore-not-found -n " + ns + " >/dev/null 2>&1"
}

// contender is one measured command and its samples.
type contender struct {
	name    string
	argv    []string
	ok      []int
	maxRuns int
	m       *meter // nil: loopback (b.meter)
	samples []sample
}

// settle is the pause before each timed run.
const settle = time.Second

func (b *bench) measureRuns(ctx context.Context, label string, cs []contender, runs int) error {
	for r := range runs {
		// Each run starts with a different contender: whoever follows the
		// heavy recipe or a 100k-object sweep finds the API server busier
		// (GC, watch cache), and a fixed order would bias the medians.
		for k := range cs {
			c := &cs[(r+k)%len(cs)]
			if c.maxRuns > 0 && r >= c.maxRuns {
				continue
			}
			// A pause lets the API server finish the previous run's work
			// (GC after a 100k-object list) before the next is timed.
			time.Sleep(settle)
			m := c.m
			if m == nil {
				m = b.meter
			}
			s, err := m.run(ctx, c.argv, c.ok...)
			if err != nil {
				return err
			}
			logf("[%s] run %d %-60s %7.2fs %6.0f requests %7d KiB", label, r+1, c.name, s.Seconds, s.Requests, s.MaxRSS)
			c.samples = append(c.samples, s)
		}
	}
	return nil
}

// expectedLists counts what a sweep must list: one LIST per namespaced
// type that supports list and delete, plus one per extra page of 500.
func (b *bench) expectedLists(ctx context.Context, ns string) (types, pages int, err error) {
	return b.fx.listPages(ctx, ns)
}

func (b *bench) waitGone(ctx context.Context, ns string, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := b.fx.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// manyNamespaces measures explain with no name over many terminating
// namespaces against explain of one of them.
func (b *bench) manyNamespaces(ctx context.Context) error {
	c := content{Objects: 20, FinalizerEvery: 4, Pods: 1}
	t0 := time.Now()
	for i := range b.o.manyNS {
		if err := b.fx.populate(ctx, fmt.Sprintf("many-%02d", i), c); err != nil {
			return err
		}
	}
	for i := range b.o.manyNS {
		if err := b.fx.DeleteNamespace(ctx, fmt.Sprintf("many-%02d", i)); err != nil {
			return err
		}
	}
	popSecs := since(t0)
	logf("[many] %d namespaces built in %.1fs", b.o.manyNS, popSecs)
	cs := []contender{
		{name: "kubectl ns-doctor explain -o json", argv: []string{"kubectl", "ns-doctor", "explain", "-o", "json"}, ok: []int{3}},
		{name: "kubectl ns-doctor explain many-00 -o json", argv: []string{"kubectl", "ns-doctor", "explain", "many-00", "-o", "json"}, ok: []int{3}},
	}
	// 3 runs: one explain over 50 namespaces is client-rate-limited to
	// about a minute on this fixture (see docs/benchmarks.md).
	if err := b.measureRuns(ctx, "many", cs, 3); err != nil {
		return err
	}
	b.rep.manySection(b.o.manyNS, c, popSecs, cs)
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
