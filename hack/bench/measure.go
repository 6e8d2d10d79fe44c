package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/procfs"
	"k8s.io/client-go/kubernetes"

	"github.com/ns-doctor/ns-doctor/test/support/apimetrics"
)

// Sample is one measured run of a command, or of several run as one.
type Sample struct {
	Seconds                      float64 // the command's own wall time
	FromDelete                   float64 `json:",omitempty"` // from the `kubectl delete namespace` before it to its exit (the controller's: to gone)
	Requests, Lists, Discoveries float64 // all it caused, of which LIST, and GET /apis (one per discovery)
	MaxRSS                       int64   `json:",omitempty"` // KiB, the child's ru_maxrss
	CPU, ServerCPU               float64 `json:",omitempty"` // its user + system s, and etcd's and kube-apiserver's meanwhile
	// ByVerb counts its requests by "VERB resource"; kept for a series'
	// first run only, the one the report shows: all would make the JSON huge.
	ByVerb map[string]float64 `json:",omitempty"`
}

// scaled is x with what adds up multiplied by f.
func (x Sample) scaled(f float64) Sample {
	x.Seconds, x.Requests, x.Lists, x.Discoveries, x.CPU, x.ServerCPU = f*x.Seconds, f*x.Requests, f*x.Lists, f*x.Discoveries, f*x.CPU, f*x.ServerCPU
	x.ByVerb = maps.Clone(x.ByVerb)
	for k := range x.ByVerb {
		x.ByVerb[k] *= f
	}
	return x
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

// metrics are the numbers of a sample, with the report's words and
// precision (tables show medians).
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
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	return (s[(len(s)-1)/2] + s[len(s)/2]) / 2
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

// paired divides each run's a by the same run's b: contenders of one run
// share the control plane's state (etcd's size, compaction), which drifts
// from run to run more than they differ.
func paired(a, b floats) floats {
	out := make(floats, min(len(a), len(b)))
	for i := range out {
		out[i] = ratio(a[i], b[i])
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

// settle is the pause before each timed run: the API server finishes the
// previous run's work (GC after a 100k-object list) first.
const settle = time.Second

// race runs every contender once per run, in order's order, pause before
// each; one with a fixture of its own builds it right before its pause.
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

// meter reads kube-apiserver's own request counter, so every request a
// command makes is counted whatever client it uses.
type meter struct {
	name, tmp string // the path's; where spawn writes
	client    kubernetes.Interface
	env       []string
	servers   func() []int // etcd's and kube-apiserver's PIDs
}

// withPath is m with dir first on PATH, where kubectl finds its plugins
// (os/exec keeps the last of duplicate keys).
func (m *meter) withPath(dir string) *meter {
	c := *m
	c.env = append(slices.Clone(m.env), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return &c
}

// count measures what happens while fn runs: every request the API
// server counted, and etcd's and kube-apiserver's CPU.
func (m *meter) count(ctx context.Context, fn func() error) (Sample, error) {
	before, err := apimetrics.RequestCounts(ctx, m.client)
	if err != nil {
		return Sample{}, err
	}
	server0 := m.serverCPU()
	if err := fn(); err != nil {
		return Sample{}, err
	}
	after, err := apimetrics.RequestCounts(ctx, m.client)
	s := Sample{ByVerb: apimetrics.Delta(before, after), ServerCPU: m.serverCPU() - server0}
	for k, v := range s.ByVerb {
		if s.Requests += v; strings.HasPrefix(k, "LIST ") {
			s.Lists += v
		}
	}
	s.Discoveries = s.ByVerb["GET /apis"]
	return s, err
}

// run runs the commands one after another, as a script would, and
// measures them as one: times and CPU summed, the highest RSS, every
// request they caused. ok is an exit code accepted besides 0.
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

// spawnEnv switches the bench binary into its spawn helper (spawn).
const spawnEnv = "NSDOCTOR_BENCH_SPAWN_OUT"

func (m *meter) spawn(ctx context.Context, argv []string, ok int) (s Sample, err error) {
	self, err := os.Executable()
	if err != nil {
		return s, err
	}
	var stderr bytes.Buffer
	out := filepath.Join(m.tmp, "spawn.out")
	cmd := exec.CommandContext(ctx, self, argv...)
	cmd.Env, cmd.Stderr = append(m.env, spawnEnv+"="+out), &stderr // stdout: printing is not measured
	if err := cmd.Run(); err != nil && (ok == 0 || cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != ok) {
		return s, fmt.Errorf("%s: %v\n%s", strings.Join(argv, " "), err, tail(stderr.String()))
	}
	raw, err := os.ReadFile(out)
	if err == nil {
		_, err = fmt.Sscan(string(raw), &s.Seconds, &s.MaxRSS, &s.CPU)
	}
	return s, err
}

// spawn starts the command the meter measures and writes its wall time,
// ru_maxrss (KiB) and CPU time to out. Go starts children with CLONE_VM
// (vfork), and Linux charges the parent's peak RSS to the child's
// ru_maxrss at exec: started straight from the bench, which holds
// fixtures of 100k objects, every command would "use" the bench's memory.
func spawn(out string, argv []string) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	if _, exited := err.(*exec.ExitError); err == nil || exited {
		ps := cmd.ProcessState
		err = os.WriteFile(out, fmt.Appendf(nil, "%f %d %f\n", time.Since(start).Seconds(), ps.SysUsage().(*syscall.Rusage).Maxrss, (ps.UserTime()+ps.SystemTime()).Seconds()), 0o600)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "spawn:", err)
		os.Exit(127)
	}
	os.Exit(cmd.ProcessState.ExitCode())
}

func (m *meter) serverCPU() (total float64) {
	for _, pid := range m.servers() {
		cpu, _ := procStat(pid)
		total += cpu
	}
	return total
}

// procStat is a process's user + system time so far (s) and its VmHWM
// (KiB); zeros once it is gone.
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

func tail(s string) string { return s[max(0, len(s)-2000):] }

// fams are the metric families of a /metrics text, by name.
type fams = map[string]*dto.MetricFamily

func parse(r io.Reader) (fams, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(r)
}

// series are those of f whose labels include each name=value of want.
func series(f *dto.MetricFamily, want ...string) (out []*dto.Metric) {
	for _, m := range f.GetMetric() {
		var have []string
		for _, l := range m.GetLabel() {
			have = append(have, l.GetName()+"="+l.GetValue())
		}
		if !slices.ContainsFunc(want, func(w string) bool { return !slices.Contains(have, w) }) {
			out = append(out, m)
		}
	}
	return out
}

// sum adds up the counters and gauges of f's series with want's labels.
func sum(f *dto.MetricFamily, want ...string) (t float64) {
	for _, m := range series(f, want...) {
		t += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return t
}

// Histogram is what series of a Prometheus histogram counted: the
// cumulative count at each finite upper bound, in all, and the values' sum.
type Histogram struct {
	Bounds, Counts []float64
	Count, Sum     float64
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

// minus is what h counted since o, an earlier read of the same series.
func (h Histogram) minus(o Histogram) Histogram {
	d := Histogram{Bounds: h.Bounds, Counts: slices.Clone(h.Counts), Count: h.Count - o.Count, Sum: h.Sum - o.Sum}
	for i := range min(len(d.Counts), len(o.Counts)) {
		d.Counts[i] -= o.Counts[i]
	}
	return d
}

// Quantile is PromQL's histogram_quantile: linear within the bucket the
// rank falls in; beyond the highest finite bound, that bound.
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
