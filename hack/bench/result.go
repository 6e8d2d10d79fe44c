package main

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

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

// merge is r's sections in place of base's of the same phases, the others
// kept, in the phases' order: a -phases subset's run (r) into an earlier
// result. r's sections carry r's Run; base's Run stays the file's.
func merge(base, r *Result) *Result {
	out := &Result{Run: base.Run}
	ran := map[string]bool{}
	for _, s := range r.Sections {
		ran[s.Phase] = true
	}
	for _, s := range base.Sections {
		if !ran[s.Phase] {
			out.Sections = append(out.Sections, s)
		}
	}
	for _, s := range r.Sections {
		s.Run = &r.Run
		out.Sections = append(out.Sections, s)
	}
	index := func(s *Section) int { return slices.IndexFunc(phases, func(p phase) bool { return p.name == s.Phase }) }
	slices.SortStableFunc(out.Sections, func(a, b *Section) int { return index(a) - index(b) })
	return out
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
	GuardRSS                int64         `json:",omitempty"` // the guard's VmHWM (KiB) at the end
	FromInformers           float64       `json:",omitempty"` // the guard's predictions that read from its informers (nsdoctor_guard_prediction_duration_seconds{reads="informers"})
	Watch                   *ScaleWatch   `json:",omitempty"` // scale-watch's
	Run                     *Run          `json:",omitempty"` // the run that measured it when not the whole file's: a -phases subset merged in
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
	Marked                       float64            `json:",omitempty"` // from the command's start to its first stderr line starting with the phase's mark (rescue: `rescue: hold in force`)
	Told                         float64            `json:",omitempty"` // what the command said of the marked step itself (rescue: its inForce.afterMs)
	CPU, ServerCPU               float64            `json:",omitempty"` // its user + system s, and etcd's and kube-apiserver's meanwhile
	Output                       int64              `json:",omitempty"` // bytes it wrote to stdout
	Rejected                     float64            `json:",omitempty"` // 429s kube-apiserver answered meanwhile (scale-purge)
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
	"inforce":     {"s to `hold in force`", 3, func(x Sample) float64 { return x.Marked }},
	"told":        {"`inForce.afterMs` s", 3, func(x Sample) float64 { return x.Told }},
	"requests":    {"requests", 0, func(x Sample) float64 { return x.Requests }},
	"lists":       {"LIST", 0, func(x Sample) float64 { return x.Lists }},
	"discoveries": {"discoveries (`GET /apis`)", 0, func(x Sample) float64 { return x.Discoveries }},
	"rss":         {"max RSS MiB", 1, func(x Sample) float64 { return float64(x.MaxRSS) / 1024 }},
	"cpu":         {"CPU s", 2, func(x Sample) float64 { return x.CPU }},
	"server":      {"etcd + kube-apiserver CPU s", 2, func(x Sample) float64 { return x.ServerCPU }},
	"output":      {"stdout MB", 2, func(x Sample) float64 { return float64(x.Output) / 1e6 }},
	"rejected":    {"429s", 0, func(x Sample) float64 { return x.Rejected }},
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

// ScaleWatch is scale-watch's: when the NamespaceStuck Events came, the
// watch settled (a window of scaleWindow), its stop, and
// kube-controller-manager over the same namespaces.
type ScaleWatch struct {
	FirstEvent, AllEvents float64 // s from the watch's start to the first namespace's Event, to the last's
	Settled               Sample  // the window after every Event: requests, CPU and VmHWM (MaxRSS) of the watch
	Stop                  float64 // s from SIGTERM to its exit
	LeaseReleased         bool
	Controller            Sample  // kube-controller-manager's window, likewise
	ControllerAfter       float64 // s from its start to the window's end
	ControllerDone        int     // namespaces with conditions by then
}

// Own is the watch's requests per resync beyond the API server alone's.
func (s *Section) Own(st WatchStep) (t float64) {
	for k, v := range st.ByVerb {
		t += max(v-s.Idle.ByVerb[k], 0)
	}
	return t
}
