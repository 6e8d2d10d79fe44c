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
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/ns-doctor/ns-doctor/test/support/controlplane"
	"github.com/ns-doctor/ns-doctor/test/support/scenario"
)

// phases, in order; those of a plane share a control plane, controller off
// (rescue's on: startControlPlane): the stuck fixtures and the thousands of
// namespaces meet no other phase.
var phases = []phase{
	{"explain", "stuck", (*bench).explain},
	{"explain-link", "stuck", (*bench).explainLink},
	{"guard", "stuck", (*bench).guard},
	{"purge", "purge", (*bench).purge},
	{"purge-memory", "purge", (*bench).purgeMemory},
	{"many", "purge", (*bench).many},
	{"purge-many", "purge", (*bench).purgeMany},
	{"purge-1000", "purge-1000", (*bench).purge1000},
	{"watch", "watch", (*bench).watch},
	{"rescue", "rescue", (*bench).rescue},
	{"scale-explain", "scale", (*bench).scaleExplain},
	{"scale-guard", "scale", (*bench).scaleGuard},
	{"scale-watch", "scale", (*bench).scaleWatch},
	{"scale-purge", "scale", (*bench).scalePurge},
}

// scalePhases is what -phases=scale names: every phase of the scale plane.
const scalePhases = "scale"

type phase struct {
	name, plane string
	run         func(*bench, context.Context) error
}

type options struct {
	phases               map[string]bool
	sizes                []size
	scaleSizes           []int
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
	var regular []string
	for _, p := range phases {
		if p.plane != scalePhases {
			regular = append(regular, p.name)
		}
	}
	phaseList := flag.String("phases", strings.Join(regular, ","), "phases to run, of "+strings.Join(names, ",")+", or "+scalePhases+" for every scale-* phase (not run by default: about an hour at 10,000 namespaces); fewer than all merge into the JSON beside -out if there is one (the other phases' sections kept, the new ones marked with this run)")
	scaleList := flag.String("scale-sizes", "100,1000,10000", "the scale phases' sizes: terminating namespaces (scale-explain, scale-watch, scale-purge) or objects in the namespace deleted (scale-guard)")
	sizeList := flag.String("sizes", "small,medium,large", "explain's fixtures: small (40 types, 200 objects), medium (150, 10k), large (150, 100k), or a number of objects over 150 types; explain-link, guard and purge take the second (or only), purge-memory the last, purge-1000 the last one's types, rescue the first one's types")
	flag.Float64Var(&o.scale, "scale", 1, "namespaces of many (50), purge-many (20), purge-1000 (1000) and watch (1000, 20 then 40 stuck), and rescue's objects (1000), times this")
	flag.IntVar(&o.runs, "runs", 0, "runs per contender in every phase (0: explain 5, 3 at 100k objects; guard 30 DELETEs each way, 6 content deletions; purge 6; many and purge-many 3; purge-1000 1; rescue 6)")
	flag.StringVar(&o.out, "out", "docs/benchmarks.md", "the markdown to write; the results go beside it, as JSON")
	flag.StringVar(&o.render, "render", "", "render -out from this JSON file of an earlier run, measuring nothing")
	flag.StringVar(&o.compare, "purge-compare", "", "purge, purge-1000: a folder with another build of kubectl-ns_doctor, measured in the same runs")
	flag.DurationVar(&o.linkDelay, "link-delay", 25*time.Millisecond, "one-way delay of the slow link (0: loopback only, no explain-link)")
	flag.Parse()
	o.phases = map[string]bool{}
	for p := range strings.SplitSeq(*phaseList, ",") {
		if p == scalePhases {
			for _, s := range phases {
				o.phases[s.name] = o.phases[s.name] || s.plane == scalePhases
			}
			continue
		}
		if o.phases[p] = true; !slices.Contains(names, p) {
			return o, fmt.Errorf("unknown phase %q (phases: %s, or %s)", p, strings.Join(names, ","), scalePhases)
		}
	}
	for s := range strings.SplitSeq(*scaleList, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return o, fmt.Errorf("-scale-sizes: %q is not a positive number", s)
		}
		o.scaleSizes = append(o.scaleSizes, n)
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
	res, base          *Result // base: the result a -phases subset merges into
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
	if slices.ContainsFunc(phases, func(p phase) bool { return !o.phases[p.name] }) {
		if _, err := os.Stat(b.jsonPath()); err == nil {
			if b.base, err = readResult(b.jsonPath()); err != nil {
				return err
			}
			logf("merging the phases run into %s", b.jsonPath())
		}
	}
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
			if err := b.startControlPlane(ctx, p.plane); err != nil {
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
	r := b.res
	if b.base != nil {
		r = merge(b.base, b.res)
	}
	data, err := json.MarshalIndent(r, "", " ")
	if err == nil {
		err = os.WriteFile(b.jsonPath(), append(data, '\n'), 0o644)
	}
	return cmp.Or(err, writeMarkdown(r, b.o.out))
}

// jsonPath is where the results go: beside -out, as JSON.
func (b *bench) jsonPath() string {
	return strings.TrimSuffix(b.o.out, filepath.Ext(b.o.out)) + ".json"
}

func (b *bench) startControlPlane(ctx context.Context, plane string) (err error) {
	opts, what := controlplane.Options{WithoutControllerManager: true}, "etcd and kube-apiserver (namespace controller off)"
	if plane == "rescue" {
		// A cluster as rescue and restore meet it: every default
		// controller as its own service account (the status controller
		// that type-checks a new policy, which rescue waits for, at most
		// 5 s, before it applies the binding; the ServiceAccount
		// controller restore waits for), a scheduler and nodes.
		opts = controlplane.Options{ControllerCredentials: "serviceaccounts"}
		what = "the full test bed: etcd, kube-apiserver, kube-controller-manager (its default controllers; service account credentials), kube-scheduler, two kwok nodes and a lost one"
	}
	logf("starting %s", what)
	if b.cp, err = controlplane.Start(ctx, opts); err != nil {
		return err
	}
	// Fixtures: a rate limit leaving the API server the bottleneck; no warnings.
	cfg := rest.CopyConfig(b.cp.Config)
	cfg.QPS, cfg.Burst, cfg.WarningHandler = 1000, 2000, rest.NoWarnings{}
	if b.Cluster, err = scenario.NewCluster(cfg); err != nil {
		return err
	}
	b.LostNode = b.cp.LostNode()
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
