package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// ExplainResult is explain of one stuck namespace against its floor
// (whose LISTs are the sweep's pages), kubectl's own start-up (to read the
// gap between the first two) and the shell recipe.
type ExplainResult struct {
	Size                                    size
	Namespace                               string
	Content                                 content
	CRDSeconds, BuildSeconds                float64
	Types                                   int
	Explain, Plugin, Floor, Version, Recipe Series
}

func (r *ExplainResult) Table() []*Series {
	return []*Series{&r.Explain, &r.Plugin, &r.Floor, &r.Version, &r.Recipe}
}

func (b *bench) explainSizes(ctx context.Context) (out []*ExplainResult, err error) {
	for _, s := range b.o.sizes {
		r, err := b.explain(ctx, mustSize(s))
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (b *bench) explain(ctx context.Context, s size) (r *ExplainResult, err error) {
	r = &ExplainResult{Size: s, Content: stuckContent(s)}
	if r.Namespace, r.Types, r.CRDSeconds, r.BuildSeconds, err = b.stuck(ctx, s); err != nil {
		return nil, err
	}
	ns := r.Namespace
	return r, b.measureRuns(ctx, s.Name, b.runsFor(s),
		b.cmd(named(&r.Explain, "`kubectl ns-doctor explain "+ns+" -o json`"), nil, 3, "kubectl", "ns-doctor", "explain", ns, "-o", "json"),
		b.cmd(named(&r.Plugin, "`kubectl-ns_doctor explain "+ns+" -o json` (plugin binary)"), nil, 3, b.plugin, "explain", ns, "-o", "json"),
		b.cmd(named(&r.Floor, "floor (discovery + metadata sweep)"), nil, 0, b.floor, ns),
		b.cmd(named(&r.Version, "`kubectl ns-doctor version` (no API call)"), nil, 0, "kubectl", "ns-doctor", "version"),
		b.recipe(&r.Recipe, "shell recipe", nil, ns, 3))
}

// LinkResult is explain and its floor on one stuck fixture, on loopback
// and through the slow link.
type LinkResult struct {
	Size                                                                   size
	Namespace                                                              string
	Delay                                                                  time.Duration // one way
	Types                                                                  int
	Explain, Floor, LinkExplain, LinkPlugin, LinkFloor, Recipe, LinkRecipe Series
}

func (r *LinkResult) Table() []*Series {
	return []*Series{&r.Explain, &r.Floor, &r.LinkExplain, &r.LinkPlugin, &r.LinkFloor, &r.Recipe, &r.LinkRecipe}
}

func (r *LinkResult) RTT() time.Duration { return 2 * r.Delay }

func (b *bench) explainLink(ctx context.Context) (r *LinkResult, err error) {
	s := mustSize(b.o.linkSize)
	r = &LinkResult{Size: s, Delay: b.o.linkDelay}
	if r.Namespace, r.Types, _, _, err = b.stuck(ctx, s); err != nil {
		return nil, err
	}
	ns, on, lm := r.Namespace, fmt.Sprintf(" [link (%v RTT)]", r.RTT()), b.linkMeter
	return r, b.measureRuns(ctx, "explain link", b.runsFor(s),
		b.cmd(named(&r.Explain, "`kubectl ns-doctor explain "+ns+" -o json` [loopback]"), nil, 3, "kubectl", "ns-doctor", "explain", ns, "-o", "json"),
		b.cmd(named(&r.Floor, "floor [loopback]"), nil, 0, b.floor, ns),
		b.cmd(named(&r.LinkExplain, "`kubectl ns-doctor explain "+ns+" -o json`"+on), lm, 3, "kubectl", "ns-doctor", "explain", ns, "-o", "json"),
		b.cmd(named(&r.LinkPlugin, "`kubectl-ns_doctor explain "+ns+" -o json` (plugin binary)"+on), lm, 3, b.plugin, "explain", ns, "-o", "json"),
		b.cmd(named(&r.LinkFloor, "floor"+on), lm, 0, b.floor, ns),
		// Once each way: over the link every kubectl the loop starts pays
		// its own connection, handshake and list in round trips.
		b.recipe(&r.Recipe, "shell recipe [loopback]", nil, ns, 1), b.recipe(&r.LinkRecipe, "shell recipe"+on, lm, ns, 1))
}

// ManyResult is explain with no name over many terminating namespaces
// against explain of one of them.
type ManyResult struct {
	Namespaces, Types int
	Content           content
	BuildSeconds      float64
	All, One          Series
}

func (r *ManyResult) Table() []*Series { return []*Series{&r.All, &r.One} }

func (b *bench) many(ctx context.Context) (*ManyResult, error) {
	r := &ManyResult{Namespaces: b.o.manyNS, Types: 150, Content: content{Objects: 20, FinalizerEvery: 4, Pods: 1}}
	if err := b.fx.ensureTypes(ctx, r.Types); err != nil {
		return nil, err
	}
	t0, names := time.Now(), numbered("many", r.Namespaces, 2)
	for _, ns := range names {
		if err := b.fx.populate(ctx, ns, r.Content); err != nil {
			return nil, err
		}
	}
	for _, ns := range names {
		if err := b.fx.DeleteNamespace(ctx, ns); err != nil {
			return nil, err
		}
	}
	r.BuildSeconds = since(t0)
	// 3 runs: explain over 50 namespaces is client-rate-limited.
	return r, b.measureRuns(ctx, "many", 3,
		b.cmd(named(&r.All, "`kubectl ns-doctor explain -o json`"), nil, 3, "kubectl", "ns-doctor", "explain", "-o", "json"),
		b.cmd(named(&r.One, "`kubectl ns-doctor explain many-00 -o json`"), nil, 3, "kubectl", "ns-doctor", "explain", "many-00", "-o", "json"))
}

func stuckContent(s size) content { return content{Objects: s.Objects, FinalizerEvery: 10, Pods: 10} }

// stuck builds the stuck namespace of size s unless this control plane
// holds it already (the explain phases share it), and returns its name,
// the types a sweep walks and the seconds its CRDs and objects took.
func (b *bench) stuck(ctx context.Context, s size) (ns string, types int, crdSecs, popSecs float64, err error) {
	ns, c, t0 := "bench-"+s.Name, stuckContent(s), time.Now()
	if !b.built[ns] {
		if err := b.fx.ensureTypes(ctx, s.Types); err != nil {
			return "", 0, 0, 0, err
		}
		crdSecs, t0 = since(t0), time.Now()
		logf("[%s] creating %d objects (+%d pods) in %s", s.Name, c.Objects, c.Pods, ns)
		if err := b.fx.populate(ctx, ns, c); err != nil {
			return "", 0, 0, 0, err
		}
		if err := b.fx.DeleteNamespace(ctx, ns); err != nil {
			return "", 0, 0, 0, err
		}
		popSecs, b.built[ns] = since(t0), true
		// One unmeasured floor run checks the content is all there, and
		// lets the API server settle after the burst of creates.
		cmd := exec.CommandContext(ctx, b.floor, ns)
		cmd.Env = b.meter.env
		out, err := cmd.Output()
		if got := strings.TrimSpace(string(out)); err != nil || got != fmt.Sprint(c.Objects+c.Pods) {
			return "", 0, 0, 0, fmt.Errorf("floor counted %q objects in %s (%v), want %d", got, ns, err, c.Objects+c.Pods)
		}
	}
	types, err = b.fx.types()
	return ns, types, crdSecs, popSecs, err
}

// contender is one measured command of a phase.
type contender struct {
	*Series
	maxRuns int // 0: every run
	measure func(ctx context.Context, ns string) (Sample, error)
}

// cmd measures argv through m (nil: loopback); ok is an exit code it may
// end with besides 0 (explain's 3 on a stuck namespace).
func (b *bench) cmd(s *Series, m *meter, ok int, argv ...string) contender {
	if m == nil {
		m = b.meter
	}
	return contender{Series: s, measure: func(ctx context.Context, ns string) (Sample, error) { return m.run(ctx, [][]string{argv}, ok) }}
}

// recipe is the loop users run by hand to see what a namespace holds: a
// kubectl per listable type (its RSS would be the shell's, not read).
func (b *bench) recipe(s *Series, name string, m *meter, ns string, runs int) contender {
	c := b.cmd(named(s, name), m, 123, "bash", "-c", "kubectl api-resources --verbs=list --namespaced -o name | xargs -n 1 kubectl get --show-kind --ignore-not-found -n "+ns+" >/dev/null 2>&1")
	run := c.measure
	c.maxRuns, c.measure = runs, func(ctx context.Context, ns string) (Sample, error) {
		x, err := run(ctx, ns)
		x.MaxRSS = 0
		return x, err
	}
	return c
}

// settle is the pause before each timed run: the API server finishes the
// previous run's work (GC after a 100k-object list) first.
const settle = time.Second

// measureRuns runs every contender once per run, in order's order.
func (b *bench) measureRuns(ctx context.Context, label string, runs int, cs ...contender) error {
	for r := range runs {
		for _, i := range order(r, len(cs)) {
			if c := cs[i]; c.maxRuns == 0 || r < c.maxRuns {
				time.Sleep(settle)
				x, err := c.measure(ctx, "")
				if err != nil {
					return err
				}
				logf("[%s] run %d %-60s %7.2fs %6.0f requests %7d KiB", label, r+1, c.Name, x.Seconds, x.Requests, x.MaxRSS)
				c.add(x)
			}
		}
	}
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
