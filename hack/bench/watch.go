package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ns-doctor/ns-doctor/test/support/apimetrics"
)

// WatchResult is `kubectl-ns_doctor watch` on a cluster of many namespaces
// and objects, a few of them stuck: its memory and requests per resync,
// step by step as the stuck namespaces grow.
type WatchResult struct {
	Namespaces, ObjectsPer, Types, IdleResyncs, ExitCode int
	Finalizer, Command                                   string
	Resync, Quiet                                        time.Duration
	BuildSeconds                                         float64
	Idle                                                 Sample // the API server alone, over IdleResyncs resyncs
	Steps                                                []WatchStep
	HWM                                                  int64 // VmHWM at the end, KiB
}

// WatchStep is one window of Resyncs resyncs with Stuck stuck namespaces.
type WatchStep struct {
	Stuck, Resyncs                 int
	Diagnoses, DiagSeconds, Errors float64 // in the window, the watch's seconds per diagnosis, its errors at the end
	Requests                       Sample
	CPU, ServerCPU                 float64
	ReadySeconds                   float64 // from the step's deletions (or the watch's start) to a blocker for each stuck namespace
	HWM, RSS                       int64   // VmHWM and VmRSS at the window's end, KiB
}

func (st WatchStep) Per(x float64) float64 { return x / float64(st.Resyncs) }
func (w *WatchResult) Last() WatchStep     { return w.Steps[len(w.Steps)-1] }
func (w *WatchResult) IdleTotal() float64  { return apimetrics.Total(perResync(w.Idle, w.IdleResyncs)) }

func perResync(s Sample, resyncs int) map[string]float64 {
	out := map[string]float64{}
	for k, v := range s.ByVerb {
		out[k] = v / float64(resyncs)
	}
	return out
}

// Own is the watch's requests per resync: what each request type counts
// beyond the API server alone (whose sporadic requests, such as its
// internal watches ending, are not taken off the watch's others).
func (w *WatchResult) Own(st WatchStep) (t float64) {
	idle := perResync(w.Idle, w.IdleResyncs)
	for k, v := range perResync(st.Requests, st.Resyncs) {
		t += max(v-idle[k], 0)
	}
	return t
}

// Rows are the requests per resync by verb and resource: the API server
// alone, then each step.
func (w *WatchResult) Rows() []verbRow {
	cols := []map[string]float64{perResync(w.Idle, w.IdleResyncs)}
	for _, st := range w.Steps {
		cols = append(cols, perResync(st.Requests, st.Resyncs))
	}
	return verbRows(cols)
}

// quietAfterRound is how long the diagnosis count stands still once a
// round of diagnoses is over.
const quietAfterRound = 2 * time.Second

// watch is issue #27's scale target; the namespace controller is stopped
// while it is measured, so that only the watch talks.
func (b *bench) watch(ctx context.Context) (*WatchResult, error) {
	o := b.o
	res := &WatchResult{Namespaces: o.watchNS, ObjectsPer: o.watchObjects, Finalizer: "example.com/bench-gone", Resync: o.watchResync, Quiet: quietAfterRound, IdleResyncs: 2}
	if err := b.fx.ensureTypes(ctx, o.watchTypes); err != nil {
		return nil, err
	}
	// Every namespace holds plain ConfigMaps, the ones that will be stuck
	// also one held by a finalizer nobody serves.
	names, t0 := numbered("w", o.watchNS, 4), time.Now()
	err := parallel(ctx, len(names), createWorkers, func(i int) error {
		held := min(1, max(0, o.watchStuck[len(o.watchStuck)-1]-i))
		if err := b.fx.CreateNamespaceWithLabels(ctx, names[i], nil); err != nil {
			return err
		}
		if err := b.fx.configMaps(ctx, names[i], "held", held, res.Finalizer); err != nil {
			return err
		}
		return b.fx.configMaps(ctx, names[i], "cm", o.watchObjects)
	})
	if res.BuildSeconds = since(t0); err != nil {
		return nil, err
	}
	if res.Types, err = b.fx.types(); err != nil {
		return nil, err
	}
	var w *watchProc
	defer func() {
		if w != nil {
			w.stop()
		}
	}()
	done := 0
	for _, stuck := range o.watchStuck {
		step := WatchStep{Stuck: stuck, Resyncs: o.watchResyncs}
		if err := b.strand(ctx, names[done:stuck]); err != nil {
			return nil, err
		}
		done, t0 = stuck, time.Now()
		if w == nil {
			// The API server alone, before the watch starts, over the same
			// time; the ConfigMaps' grace (--grace) runs out meanwhile.
			if res.Idle, err = b.window(ctx, time.Duration(res.IdleResyncs)*o.watchResync, nil); err != nil {
				return nil, err
			}
			w, t0 = b.startWatch(ctx), time.Now()
			res.Command = strings.Join(append([]string{"kubectl-ns_doctor"}, w.cmd.Args[1:]...), " ")
		}
		// A blocker series for every stuck namespace: their finalizers are
		// young, so this waits out --grace (30 s).
		var missing []string
		if err := w.poll(ctx, time.Second, 2*time.Minute+4*o.watchResync, func(m watchMetrics) bool {
			missing = missing[:0]
			for _, n := range names[:stuck] {
				if !m.blocked[n] {
					missing = append(missing, n)
				}
			}
			return len(missing) == 0
		}); err != nil {
			return nil, fmt.Errorf("waiting for a blocker of every stuck namespace (%d without, such as %v): %w", len(missing), missing[:min(3, len(missing))], err)
		}
		step.ReadySeconds = since(t0)
		if err := b.watchWindow(ctx, w, &step); err != nil {
			return nil, err
		}
		res.Steps = append(res.Steps, step)
		logf("[watch] %d stuck: %.0f requests per resync, %.0f diagnoses, VmHWM %d KiB", stuck, step.Per(step.Requests.Requests), step.Diagnoses, step.HWM)
	}
	_, res.HWM, _ = procStat(w.cmd.Process.Pid)
	if res.ExitCode = w.stop(); res.ExitCode != 0 {
		return nil, fmt.Errorf("watch exited %d on SIGTERM (want 0)\n%s", res.ExitCode, w.stderr())
	}
	return res, nil
}

// strand deletes the namespaces and lets the real namespace controller work
// on them until only the held ConfigMap is left and it has said so
// (NamespaceFinalizersRemaining), as in a cluster whose operator is gone.
func (b *bench) strand(ctx context.Context, names []string) error {
	if err := b.cp.StartControllerManager(); err != nil {
		return err
	}
	defer b.cp.StopControllerManager()
	return parallel(ctx, len(names), 8, func(i int) error {
		if err := b.fx.DeleteNamespace(ctx, names[i]); err != nil {
			return err
		}
		if _, err := b.fx.WaitForConditions(ctx, names[i], 5*time.Minute, "NamespaceFinalizersRemaining"); err != nil {
			return err
		}
		return wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
			cms, err := b.fx.Kube.CoreV1().ConfigMaps(names[i]).List(ctx, metav1.ListOptions{})
			return err == nil && len(cms.Items) == 1, err
		})
	})
}

// window counts the API server's requests over d; a watch (when not nil)
// that exits meanwhile is an error.
func (b *bench) window(ctx context.Context, d time.Duration, w *watchProc) (Sample, error) {
	before, err := apimetrics.RequestCounts(ctx, b.meter.client)
	if err != nil {
		return Sample{}, err
	}
	exited := make(<-chan struct{})
	if w != nil {
		exited = w.done
	}
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return Sample{}, ctx.Err()
	case <-exited:
		return Sample{}, w.gone()
	}
	after, err := apimetrics.RequestCounts(ctx, b.meter.client)
	return requestDelta(before, after), err
}

// watchWindow measures exactly Resyncs resyncs from the quiet gap right
// after a round of diagnoses, so it ends in the same gap rounds later.
func (b *bench) watchWindow(ctx context.Context, w *watchProc, step *WatchStep) error {
	last, changed, grew := -1.0, time.Now(), false
	if err := w.poll(ctx, 200*time.Millisecond, 3*b.o.watchResync+time.Minute, func(m watchMetrics) bool {
		if m.diagnoses != last {
			grew, last, changed = last >= 0, m.diagnoses, time.Now()
		}
		return grew && time.Since(changed) >= quietAfterRound
	}); err != nil {
		return fmt.Errorf("waiting for a round of diagnoses to end: %w", err)
	}
	m0, err := w.scrape(ctx)
	if err != nil {
		return err
	}
	pid := w.cmd.Process.Pid
	cpu0, _, _ := procStat(pid)
	server0 := b.meter.serverCPU()
	if step.Requests, err = b.window(ctx, time.Duration(step.Resyncs)*b.o.watchResync, w); err != nil {
		return err
	}
	cpu1, _, _ := procStat(pid)
	step.CPU, step.ServerCPU = cpu1-cpu0, b.meter.serverCPU()-server0
	m1, err := w.scrape(ctx)
	step.Diagnoses, step.Errors = m1.diagnoses-m0.diagnoses, m1.errors
	step.DiagSeconds = ratio(m1.diagSeconds-m0.diagSeconds, step.Diagnoses)
	_, step.HWM, step.RSS = procStat(pid)
	return err
}

// watchProc is the running watch: the plugin binary, not through kubectl,
// so that its PID is the watch's.
type watchProc struct {
	cmd       *exec.Cmd
	stop0     context.CancelFunc
	addr, log string        // its /metrics, its stderr
	done      chan struct{} // closed once it exited, waitErr then set
	waitErr   error
}

func (b *bench) startWatch(ctx context.Context) *watchProc {
	w := &watchProc{addr: freeAddr(), log: filepath.Join(b.tmp, "watch.log"), done: make(chan struct{})}
	ctx, w.stop0 = context.WithCancel(ctx)
	w.cmd = exec.CommandContext(ctx, b.plugin, "watch", "--after=0s", "--resync="+b.o.watchResync.String(), "--metrics-addr="+w.addr)
	// A clean stop is SIGTERM (exit 0); a watch still there 30 s later is killed.
	w.cmd.Cancel = func() error { return w.cmd.Process.Signal(syscall.SIGTERM) }
	w.cmd.WaitDelay, w.cmd.Env = 30*time.Second, b.meter.env
	logFile, err := os.Create(w.log)
	w.cmd.Stderr = logFile
	if err == nil {
		err = w.cmd.Start()
	}
	go func() {
		if err == nil {
			err = w.cmd.Wait()
		}
		w.waitErr = err
		_ = logFile.Close()
		close(w.done)
	}()
	return w
}

// freeAddr is a loopback address nothing listens on right now.
func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:0"
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().String()
}

// stop sends SIGTERM and returns the exit code (-1 if it was killed).
func (w *watchProc) stop() int {
	w.stop0()
	<-w.done
	return w.cmd.ProcessState.ExitCode()
}

func (w *watchProc) stderr() string {
	data, _ := os.ReadFile(w.log)
	return tail(string(data))
}

// gone is an error once the watch has exited, nil while it runs.
func (w *watchProc) gone() error {
	select {
	case <-w.done:
		return fmt.Errorf("watch exited: %v\n%s", w.waitErr, w.stderr())
	default:
		return nil
	}
}

// poll reads the watch's metrics every so often until done says so; it
// fails once the watch has exited, not while its server is not up yet.
func (w *watchProc) poll(ctx context.Context, every, timeout time.Duration, done func(watchMetrics) bool) error {
	return wait.PollUntilContextTimeout(ctx, every, timeout, true, func(ctx context.Context) (bool, error) {
		m, err := w.scrape(ctx)
		return err == nil && done(m), w.gone()
	})
}

// watchMetrics is what the bench reads of the watch's /metrics.
type watchMetrics struct {
	diagnoses, diagSeconds, errors float64
	blocked                        map[string]bool // namespaces with a nsdoctor_namespace_blocker series
}

func (w *watchProc) scrape(ctx context.Context) (watchMetrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+w.addr+"/metrics", nil)
	if err != nil {
		return watchMetrics{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return watchMetrics{}, fmt.Errorf("reading the watch's metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	return parseWatchMetrics(resp.Body)
}

func parseWatchMetrics(r io.Reader) (watchMetrics, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	m := watchMetrics{blocked: map[string]bool{}}
	if h := fams["nsdoctor_diagnosis_duration_seconds"].GetMetric(); len(h) > 0 {
		m.diagnoses, m.diagSeconds = float64(h[0].GetHistogram().GetSampleCount()), h[0].GetHistogram().GetSampleSum()
	}
	if c := fams["nsdoctor_diagnosis_errors_total"].GetMetric(); len(c) > 0 {
		m.errors = c[0].GetCounter().GetValue()
	}
	for _, g := range fams["nsdoctor_namespace_blocker"].GetMetric() {
		for _, l := range g.GetLabel() {
			if l.GetName() == "namespace" && g.GetGauge().GetValue() > 0 {
				m.blocked[l.GetValue()] = true
			}
		}
	}
	return m, err
}
