package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"
)

// PurgeResult is purge --force against the namespace controller and
// purge's floor (hack/bench/floor -purge), per path to the API server.
type PurgeResult struct {
	Size       size
	CRDs       int
	Delay      time.Duration // one way, of the link; 0: loopback only
	Controller bool          // timed (-purge-controller)
	Paths      []*PurgePath
}

// PurgePath is one path's runs: FromDelete is from `kubectl delete
// namespace` to the command's exit (to gone for the controller).
type PurgePath struct {
	Name                              string
	Builds                            floats // seconds to build each fixture
	Controller, Purge, Floor, Compare Series
}

func (r *PurgeResult) RTT() time.Duration { return 2 * r.Delay }

func (p *PurgePath) Table() []*Series {
	return slices.DeleteFunc([]*Series{&p.Controller, &p.Purge, &p.Floor, &p.Compare}, func(s *Series) bool { return len(s.Runs) == 0 })
}

// purgeRace empties the same content per path, run and contender: by the
// real namespace controller (default settings, on its direct in-cluster
// connection), by purge --force, by the floor and by the -purge-compare
// build, the last three with the controller stopped. Objects have no
// finalizers and no pods are bound to nodes, so all can finish.
func (b *bench) purgeRace(ctx context.Context) (*PurgeResult, error) {
	s := mustSize(b.o.purgeSize)
	if err := b.fx.ensureTypes(ctx, s.Types); err != nil {
		return nil, err
	}
	res := &PurgeResult{Size: s, CRDs: len(b.fx.crds), Controller: b.o.purgeController}
	if b.linkMeter != nil {
		res.Delay = b.o.linkDelay
	}
	var paths [][]contender
	for _, p := range b.paths() {
		pp := &PurgePath{Name: p.name}
		res.Paths = append(res.Paths, pp)
		cs := []contender{b.purge(named(&pp.Purge, "`kubectl ns-doctor purge --force`"), p.m), b.emptying(named(&pp.Floor, "purge's floor"), p.m, b.floor, "-purge")}
		if b.compare != "" {
			cs = append(cs, b.purge(named(&pp.Compare, "the -purge-compare build"), p.m.withPath(filepath.Dir(b.compare))))
		}
		if b.o.purgeController {
			cs = append(cs, b.controller(named(&pp.Controller, "namespace controller"), p.m))
		}
		paths = append(paths, cs)
	}
	for r := range b.o.purgeRuns {
		for k := range paths { // each run starts with a different path
			i := (r + k) % len(paths)
			for j := range paths[i] {
				t0 := time.Now()
				if err := b.fx.populate(ctx, fmt.Sprintf("purge-%d-%d-%d", r, i, j), content{Objects: s.Objects}); err != nil {
					return nil, err
				}
				res.Paths[i].Builds = append(res.Paths[i].Builds, since(t0))
			}
			// Each contender takes each place in turn: right after the
			// fixtures are built, and right after the controller, whose
			// run leaves the API server busier.
			for _, j := range order(r, len(paths[i])) {
				c := paths[i][j]
				x, err := c.measure(ctx, fmt.Sprintf("purge-%d-%d-%d", r, i, j))
				if err != nil {
					return nil, err
				}
				c.add(x)
				logf("[purge %s] run %d: %s %.2fs from the delete (command %.2fs, %.0f requests, %d KiB)", res.Paths[i].Name, r+1, c.Name, x.FromDelete, x.Seconds, x.Requests, x.MaxRSS)
			}
		}
	}
	return res, nil
}

// purge is `kubectl ns-doctor purge NS --force` through m.
func (b *bench) purge(s *Series, m *meter) contender {
	return contender{Series: s, measure: func(ctx context.Context, ns string) (Sample, error) {
		return b.emptying(s, m, "kubectl", "ns-doctor", "purge", "--force", "--yes", "-o", "json", "--backup-dir", filepath.Join(b.tmp, "backup", ns)).measure(ctx, ns)
	}}
}

// emptying times argv NS, a command that empties and finishes NS, with
// the controller stopped: after a settle pause, from the delete (through
// m) to the command's exit, leaving out the meter's reads between them.
func (b *bench) emptying(s *Series, m *meter, argv ...string) contender {
	return contender{Series: s, measure: func(ctx context.Context, ns string) (Sample, error) {
		time.Sleep(settle)
		t0 := time.Now()
		if err := m.exec(ctx, "kubectl", "delete", "namespace", ns, "--wait=false"); err != nil {
			return Sample{}, err
		}
		del := since(t0)
		x, err := m.run(ctx, [][]string{append(slices.Clone(argv), ns)}, 0)
		if err == nil {
			err = b.fx.waitGone(ctx, ns, time.Minute)
		}
		x.FromDelete = del + x.Seconds
		return x, err
	}}
}

// controller times the namespace controller: started (its informers and
// discovery warm up) 10 s before the clock, from the delete (through m)
// to the namespace gone, polled directly.
func (b *bench) controller(s *Series, m *meter) contender {
	return contender{Series: s, measure: func(ctx context.Context, ns string) (Sample, error) {
		if err := b.cp.StartControllerManager(); err != nil {
			return Sample{}, err
		}
		defer b.cp.StopControllerManager()
		time.Sleep(10 * time.Second)
		t0 := time.Now()
		err := m.exec(ctx, "kubectl", "delete", "namespace", ns, "--wait=false")
		if err == nil {
			err = b.fx.waitGone(ctx, ns, 15*time.Minute)
		}
		return Sample{FromDelete: since(t0)}, err
	}}
}

// MemoryResult is purge --force's peak memory on a big namespace.
type MemoryResult struct {
	Size         size
	CRDs         int
	BuildSeconds float64
	Purge        Series
}

func (r *MemoryResult) Table() []*Series { return []*Series{&r.Purge} }

func (b *bench) purgeMemory(ctx context.Context) (*MemoryResult, error) {
	s, t0 := mustSize(b.o.memorySize), time.Now()
	if err := b.fx.ensureTypes(ctx, s.Types); err != nil {
		return nil, err
	}
	res := &MemoryResult{Size: s, CRDs: len(b.fx.crds)}
	if err := b.fx.populate(ctx, "memory", content{Objects: s.Objects}); err != nil {
		return nil, err
	}
	res.BuildSeconds = since(t0)
	x, err := b.purge(named(&res.Purge, "`kubectl ns-doctor purge NAME --force --yes`"), b.meter).measure(ctx, "memory")
	res.Purge.add(x)
	return res, err
}
