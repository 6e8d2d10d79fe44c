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
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/ns-doctor/ns-doctor/test/support/controlplane"
)

// phases, in the order they run: each adds its sections to the result.
// Phases of one plane share a control plane (the namespace controller
// off), started for the first of them. The explain phases share the stuck
// fixtures; the namespace controller of the purge plane would work on them
// too; the phases at scale each have their own, or a thousand namespaces
// of one would be in the other's cluster.
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
	// Last of its plane: its CRD would add a type to the phases above.
	{"purge-many", "purge", (*bench).purgeMany},
	{"purge-1000", "purge-1000", (*bench).purge1000},
	{"watch", "watch", (*bench).watch},
}

type options struct {
	phases                     map[string]bool
	sizes                      []size
	scale                      float64
	runs                       int
	out, json, render, compare string
	controller                 bool
	linkDelay                  time.Duration
}

func parseFlags(args []string) (o options, err error) {
	var names []string
	for _, p := range phases {
		names = append(names, p.name)
	}
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	phaseList := fs.String("phases", strings.Join(names, ","), "phases to run, of "+strings.Join(names, ","))
	sizeList := fs.String("sizes", "small,medium,large", "explain's fixtures: small (40 types, 200 objects), medium (150, 10k), large (150, 100k), or a number of objects over 150 types; explain-link and purge take the second (or only), purge-memory the last, purge-1000 the last one's types")
	fs.Float64Var(&o.scale, "scale", 1, "namespaces of many (50), purge-many (20), purge-1000 (1000, its loop measured on 50) and watch (1000, 20 then 40 stuck), times this")
	fs.IntVar(&o.runs, "runs", 0, "runs per contender in every phase (0: explain 5, 3 at 100k objects; purge 6; many and purge-many 3; purge-1000 1)")
	fs.StringVar(&o.out, "out", "docs/benchmarks.md", "the markdown to write")
	fs.StringVar(&o.json, "json", "", "the results, as JSON (default: -out with .json)")
	fs.StringVar(&o.render, "render", "", "render -out from this JSON file of an earlier run, measuring nothing")
	fs.StringVar(&o.compare, "purge-compare", "", "purge, purge-1000: another build of kubectl-ns_doctor (a path) measured in the same runs")
	fs.BoolVar(&o.controller, "purge-controller", true, "purge: time the namespace controller too (false: a quick A/B of purge and the floor)")
	fs.DurationVar(&o.linkDelay, "link-delay", 25*time.Millisecond, "one-way delay of the slow link (0: loopback only, no explain-link)")
	_ = fs.Parse(args)
	if o.json == "" {
		o.json = strings.TrimSuffix(o.out, filepath.Ext(o.out)) + ".json"
	}
	o.phases = map[string]bool{}
	for p := range strings.SplitSeq(*phaseList, ",") {
		if o.phases[p] = true; !slices.Contains(names, p) {
			return o, fmt.Errorf("unknown phase %q (phases: %s)", p, strings.Join(names, ","))
		}
	}
	o.phases["explain-link"] = o.phases["explain-link"] && o.linkDelay > 0 // no link, nothing to compare
	for name := range strings.SplitSeq(*sizeList, ",") {
		s, err := sizeOf(name)
		if err != nil {
			return o, err
		}
		o.sizes = append(o.sizes, s)
	}
	if _, err := os.Stat(o.compare); o.compare != "" && err != nil {
		return o, fmt.Errorf("-purge-compare: %w", err)
	}
	if o.scale <= 0 || o.runs < 0 || o.linkDelay < 0 {
		return o, fmt.Errorf("-scale must be positive, -runs and -link-delay not negative")
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
	meter                       *meter // commands on loopback
	paths                       []path // the ways commands reach the API server: loopback, and the slow link (-link-delay)
	link                        *link
	built                       map[string]bool // the stuck fixtures this control plane holds
}

// path is one way for commands to reach the API server.
type path struct {
	name string
	m    *meter
}

func run(ctx context.Context, o options) (err error) {
	started := time.Now()
	tmp, err := os.MkdirTemp("", "ns-doctor-bench-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	b := &bench{o: o, tmp: tmp, res: &Result{Run: machine()}, plugin: filepath.Join(tmp, "kubectl-ns_doctor"), floor: filepath.Join(tmp, "floor")}
	// Plain builds (no -ldflags -s -w): what `go install` gives users; the
	// -purge-compare build as kubectl-ns_doctor, in a folder of its own.
	cmds := [][]string{{"go", "build", "-o", tmp + "/", "./cmd/kubectl-ns_doctor", "./hack/bench/floor"}}
	if o.compare != "" {
		b.compare = filepath.Join(tmp, "compare", "kubectl-ns_doctor")
		cmds = append(cmds, []string{"install", "-D", o.compare, b.compare})
	}
	for _, c := range cmds {
		if out, err := exec.CommandContext(ctx, c[0], c[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %v\n%s", c, err, out)
		}
	}
	defer b.stopControlPlane()
	// Saved after every phase: an interrupted run still leaves what it measured.
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

func (b *bench) startControlPlane(ctx context.Context) (err error) {
	logf("starting etcd and kube-apiserver (namespace controller off)")
	if b.cp, err = controlplane.Start(ctx, controlplane.Options{WithoutControllerManager: true}); err != nil {
		return err
	}
	b.built = map[string]bool{}
	if b.fx, err = newFixtures(b.cp.Config); err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(b.cp.Config)
	add := func(name, kubeconfig string) {
		b.paths = append(b.paths, path{name, &meter{client: client, tmp: b.tmp, servers: b.cp.ServerPIDs, env: append(os.Environ(), "PATH="+b.tmp+string(os.PathListSeparator)+os.Getenv("PATH"),
			"KUBECONFIG="+kubeconfig, "KUBECACHEDIR="+filepath.Join(b.tmp, "kube-cache"))}}) // kubectl's discovery cache, not ~/.kube's
	}
	b.paths = nil
	add("loopback", b.cp.Kubeconfig)
	if kc := filepath.Join(b.tmp, "kubeconfig-link"); err == nil && b.o.linkDelay > 0 {
		b.link, err = linkTo(b.cp.Kubeconfig, kc, b.o.linkDelay)
		add(fmt.Sprintf("link (%v RTT)", 2*b.o.linkDelay), kc)
	}
	b.meter = b.paths[0].m
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

// section adds an empty section of the result for a phase to fill: one
// that fails half-way is kept with what it measured.
func (b *bench) section(phase, scope string) *Section {
	s := &Section{Phase: phase, Scope: scope}
	b.res.Sections = append(b.res.Sections, s)
	return s
}

// runs is -runs, or def; scaled is n namespaces times -scale; size(i) is
// the i-th of -sizes, the last past the end.
func (b *bench) runs(def int) int { return cmp.Or(b.o.runs, def) }
func (b *bench) scaled(n int) int { return max(1, int(math.Round(float64(n)*b.o.scale))) }
func (b *bench) size(i int) size  { return b.o.sizes[min(i, len(b.o.sizes)-1)] }

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
