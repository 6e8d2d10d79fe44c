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
	sizes      []string
	runs       int // 0: 5 for small and medium, 3 for large
	out        string
	purgeSize  string
	purgeRuns  int
	manyNS     int
	recipeMax  int
	commandStr string
}

func main() {
	if out := os.Getenv(spawnEnv); out != "" {
		spawn(out, os.Args[1:])
	}
	var o options
	sizeList := flag.String("sizes", "small,medium,large", "fixture sizes for explain: small (40 types, 200 objects), medium (150, 10k), large (150, 100k)")
	flag.IntVar(&o.runs, "runs", 0, "runs per contender (0: 5 for small and medium, 3 for large)")
	flag.StringVar(&o.out, "out", "docs/benchmarks.md", "where to write the results (markdown)")
	flag.StringVar(&o.purgeSize, "purge-size", "medium", "fixture size for purge against the namespace controller (empty: skip)")
	flag.IntVar(&o.purgeRuns, "purge-runs", 3, "runs of purge against the namespace controller")
	flag.IntVar(&o.manyNS, "namespaces", 50, "terminating namespaces for explain with no name (0: skip)")
	flag.IntVar(&o.recipeMax, "recipe-runs", 3, "at most this many runs of the slow shell recipe per size")
	flag.Parse()
	o.sizes = strings.Split(*sizeList, ",")
	o.commandStr = "go run ./hack/bench " + strings.Join(os.Args[1:], " ")
	for _, s := range o.sizes {
		if _, ok := sizes[s]; !ok {
			fmt.Fprintf(os.Stderr, "bench: unknown size %q\n", s)
			os.Exit(2)
		}
	}
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
	meter  *meter
	plugin string
	floor  string
}

func run(ctx context.Context, o options) error {
	started := time.Now()
	tmp, err := os.MkdirTemp("", "ns-doctor-bench-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	b := &bench{o: o, tmp: tmp, rep: newReport(o), plugin: filepath.Join(tmp, "kubectl-ns_doctor"), floor: filepath.Join(tmp, "floor")}
	// Plain builds (no -ldflags -s -w): what `go install` gives users.
	for _, pb := range [][2]string{{b.plugin, "./cmd/kubectl-ns_doctor"}, {b.floor, "./hack/bench/floor"}} {
		logf("building %s", pb[1])
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", pb[0], pb[1]).CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", pb[1], err, out)
		}
	}

	// The explain sizes share one control plane whose namespace controller
	// never runs: the fixtures stay exactly as built, and only the measured
	// command talks to the API server.
	if len(o.sizes) > 0 {
		if err := b.startControlPlane(ctx); err != nil {
			return err
		}
		for _, name := range o.sizes {
			if err := b.explainSize(ctx, sizes[name]); err != nil {
				b.cp.Stop()
				return err
			}
			_ = b.rep.write()
		}
		b.cp.Stop()
	}
	// A fresh control plane for the phases that run the namespace
	// controller: on the first one it would work on the stuck fixtures too.
	if o.purgeSize != "" || o.manyNS > 0 {
		if err := b.startControlPlane(ctx); err != nil {
			return err
		}
		defer b.cp.Stop()
		if err := b.fx.ensureTypes(ctx, 150); err != nil {
			return err
		}
		if o.purgeSize != "" {
			if err := b.purgeVsController(ctx, sizes[o.purgeSize]); err != nil {
				return err
			}
			_ = b.rep.write()
		}
		if o.manyNS > 0 {
			if err := b.manyNamespaces(ctx); err != nil {
				return err
			}
		}
	}
	b.rep.finish(time.Since(started))
	return b.rep.write()
}

func (b *bench) startControlPlane(ctx context.Context) error {
	logf("starting etcd and kube-apiserver (namespace controller off)")
	cp, err := controlplane.Start(ctx, controlplane.Options{WithoutControllerManager: true})
	if err != nil {
		return err
	}
	b.cp = cp
	if b.fx, err = newFixtures(cp.Config); err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	cache := filepath.Join(b.tmp, "kube-cache")
	b.meter = &meter{client: client, tmp: b.tmp, env: append(os.Environ(),
		"PATH="+b.tmp+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+cp.Kubeconfig,
		// kubectl's discovery cache in a throwaway folder, not ~/.kube.
		"KUBECACHEDIR="+cache)}
	return nil
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

	recipe := "kubectl api-resources --verbs=list --namespaced -o name | xargs -n 1 kubectl get --show-kind --ignore-not-found -n " + ns + " >/dev/null 2>&1"
	contenders := []contender{
		{name: "kubectl ns-doctor explain " + ns + " -o json", argv: []string{"kubectl", "ns-doctor", "explain", ns, "-o", "json"}, ok: []int{3}},
		{name: "kubectl-ns_doctor explain " + ns + " -o json (plugin binary)", argv: []string{b.plugin, "explain", ns, "-o", "json"}, ok: []int{3}},
		{name: "floor (discovery + metadata sweep)", argv: []string{b.floor, ns}},
		// kubectl's own cost of finding and exec'ing a plugin, for reading
		// the gap between the first two rows.
		{name: "kubectl ns-doctor version (no API call)", argv: []string{"kubectl", "ns-doctor", "version"}},
		{name: "shell recipe", argv: []string{"bash", "-c", recipe}, ok: []int{123}, maxRuns: b.o.recipeMax},
	}
	if err := b.measureRuns(ctx, s.Name, contenders, b.runsFor(s)); err != nil {
		return err
	}
	b.rep.explainSection(s, ns, c, crdSecs, popSecs, types, pages, contenders)
	return nil
}

// contender is one measured command and its samples.
type contender struct {
	name    string
	argv    []string
	ok      []int
	maxRuns int
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
			s, err := b.meter.run(ctx, c.argv, c.ok...)
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

// purgeVsController empties the same content twice: once by the real
// namespace controller (kube-controller-manager, default settings), once
// by `kubectl ns-doctor purge --force` with the controller stopped. Objects
// have no finalizers and no pods are bound to nodes, so both can finish.
func (b *bench) purgeVsController(ctx context.Context, s size) error {
	c := content{Objects: s.Objects}
	var ctrl, pur []float64
	var pops []float64
	var purgeSamples []sample
	for r := range b.o.purgeRuns {
		cn, pn := fmt.Sprintf("ctrl-%d", r), fmt.Sprintf("purge-%d", r)
		for _, ns := range []string{cn, pn} {
			t0 := time.Now()
			if err := b.fx.populate(ctx, ns, c); err != nil {
				return err
			}
			pops = append(pops, since(t0))
		}
		logf("[purge] run %d: fixtures of %d objects built in %.1fs and %.1fs", r+1, c.Objects, pops[len(pops)-2], pops[len(pops)-1])

		// Controller: started (its informers and discovery warm up) before
		// the clock starts, timed from the delete to the namespace gone.
		if err := b.cp.StartControllerManager(); err != nil {
			return err
		}
		time.Sleep(10 * time.Second)
		t0 := time.Now()
		if _, err := b.meter.run(ctx, []string{"kubectl", "delete", "namespace", cn, "--wait=false"}); err != nil {
			return err
		}
		if err := b.waitGone(ctx, cn, 15*time.Minute); err != nil {
			return err
		}
		ctrl = append(ctrl, since(t0))
		b.cp.StopControllerManager()

		// purge: the same delete, then the purge command to completion.
		t0 = time.Now()
		if _, err := b.meter.run(ctx, []string{"kubectl", "delete", "namespace", pn, "--wait=false"}); err != nil {
			return err
		}
		ps, err := b.meter.run(ctx, []string{"kubectl", "ns-doctor", "purge", pn, "--force", "--yes", "-o", "json", "--backup-dir", filepath.Join(b.tmp, "backup", pn)})
		if err != nil {
			return err
		}
		pur = append(pur, since(t0))
		purgeSamples = append(purgeSamples, ps)
		if err := b.waitGone(ctx, pn, time.Minute); err != nil {
			return fmt.Errorf("purge exited but: %w", err)
		}
		logf("[purge] run %d: namespace controller %.2fs, purge %.2fs (%0.f requests, %d KiB)", r+1, ctrl[r], pur[r], ps.Requests, ps.MaxRSS)
	}
	b.rep.purgeSection(s, pops, ctrl, pur, purgeSamples)
	return nil
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
