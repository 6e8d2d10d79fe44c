package main

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// WatchStep is one window of Resyncs resyncs with Stuck stuck namespaces
// (none: the API server alone, before the watch started), per resync: its
// Sample is the requests counted, the watch's CPU and the API server's,
// and as MaxRSS the watch's VmHWM at the window's end.
type WatchStep struct {
	Stuck, Resyncs int
	Sample
	RSS                                   int64   `json:",omitempty"` // VmRSS at the window's end, KiB
	Diagnoses, DiagSeconds, Errors, Ready float64 `json:",omitempty"` // per resync; the watch's seconds per diagnosis; its errors at the end; s until a blocker for each stuck namespace
}

// Own is the watch's requests per resync in a step: what each request
// type counts beyond the API server alone (whose sporadic requests, such
// as its internal watches ending, are not taken off the watch's others).
func (s *Section) Own(st WatchStep) (t float64) {
	for k, v := range st.ByVerb {
		t += max(v-s.Idle.ByVerb[k], 0)
	}
	return t
}

func (s *Section) Last() WatchStep { return s.Steps[len(s.Steps)-1] }

// Rows are the requests per resync by verb and resource: the API server
// alone, then each step.
func (s *Section) Rows() []verbRow {
	cols := []map[string]float64{s.Idle.ByVerb}
	for _, st := range s.Steps {
		cols = append(cols, st.ByVerb)
	}
	return verbRows(cols...)
}

const (
	watchResync, watchResyncs = 15 * time.Second, 4
	// quietAfterRound is how long the diagnosis count stands still once a
	// round of diagnoses is over.
	quietAfterRound = 2 * time.Second
)

// watch is issue #27's scale target: `kubectl-ns_doctor watch` on a
// cluster of many namespaces and objects, a few of them stuck, its memory
// and requests per resync step by step as the stuck namespaces grow. The
// namespace controller is stopped while it is measured, so that only the
// watch talks.
func (b *bench) watch(ctx context.Context) (err error) {
	const finalizer = "example.com/bench-gone"
	n, stuck := b.scaled(1000), []int{b.scaled(20), max(b.scaled(40), b.scaled(20)+1)}
	sec := b.section("watch", "")
	sec.Namespaces, sec.Content = n, content{Held: 1, Finalizer: finalizer, Plain: 50}
	// Every namespace holds plain ConfigMaps, the ones that will be stuck
	// also one held by a finalizer nobody serves.
	names, t0 := numbered("w", n, 4), time.Now()
	err = b.fx.namespaces(ctx, names[:stuck[1]], nil, true, sec.Content)
	if err == nil {
		err = b.fx.namespaces(ctx, names[stuck[1]:], nil, true, content{Plain: sec.Content.Plain})
	}
	if err != nil {
		return err
	}
	sec.Builds = floats{since(t0)}
	if sec.Types, err = b.fx.types(); err != nil {
		return err
	}
	sec.Scope = fmt.Sprintf("%d namespaces, %d objects, up to %d stuck, %d types", n, n*sec.Content.Plain, stuck[1], sec.Types)
	if err := b.strand(ctx, names[:stuck[0]]); err != nil {
		return err
	}
	// The API server alone, before the watch starts, over the same time;
	// the ConfigMaps' grace (--grace) runs out meanwhile.
	sec.Idle = &WatchStep{Resyncs: 2}
	if sec.Idle.Sample, err = b.window(ctx, 2*watchResync); err != nil {
		return err
	}
	sec.Idle.Sample = sec.Idle.scaled(0.5)
	w, err := b.startWatch(ctx, "--after=0s", "--resync="+watchResync.String())
	if err != nil {
		return err
	}
	defer w.stop()
	t0 = time.Now()
	sec.Commands = []string{strings.Join(append([]string{"kubectl-ns_doctor"}, w.Args[1:]...), " ")}
	for i, k := range stuck {
		if i > 0 {
			if err := b.strand(ctx, names[stuck[i-1]:k]); err != nil {
				return err
			}
			t0 = time.Now()
		}
		// A blocker series for every stuck namespace: their finalizers are
		// young, so this waits out --grace (30 s).
		if err := w.poll(ctx, time.Second, 2*time.Minute+4*watchResync, func(m watchMetrics) bool {
			return !slices.ContainsFunc(names[:k], func(ns string) bool { return !m.blocked[ns] })
		}); err != nil {
			return fmt.Errorf("waiting for a blocker series of each of the %d stuck namespaces: %w", k, err)
		}
		step := WatchStep{Stuck: k, Resyncs: watchResyncs, Ready: since(t0)}
		if err := b.watchWindow(ctx, w, &step); err != nil {
			return err
		}
		sec.Steps = append(sec.Steps, step)
		logf("[watch] %d stuck: %.0f requests per resync, %.0f diagnoses, VmHWM %d KiB", k, step.Requests, step.Diagnoses, step.MaxRSS)
	}
	return w.end()
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

// window counts the API server's requests over d.
func (b *bench) window(ctx context.Context, d time.Duration) (Sample, error) {
	return b.meter.count(ctx, func() error {
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}

// watchWindow measures exactly Resyncs resyncs from the quiet gap right
// after a round of diagnoses, so it ends in the same gap rounds later.
func (b *bench) watchWindow(ctx context.Context, w *watchProc, step *WatchStep) error {
	last, changed, grew := -1.0, time.Now(), false
	if err := w.poll(ctx, 200*time.Millisecond, 3*watchResync+time.Minute, func(m watchMetrics) bool {
		if m.diagnoses != last {
			grew, last, changed = last >= 0, m.diagnoses, time.Now()
		}
		return grew && time.Since(changed) >= quietAfterRound
	}); err != nil {
		return fmt.Errorf("waiting for a round of diagnoses to end: %w", err)
	}
	m0, err := w.scrape(ctx)
	cpu0, _, _ := procStat(w.Process.Pid)
	if err == nil {
		step.Sample, err = b.window(ctx, time.Duration(step.Resyncs)*watchResync)
	}
	cpu1, hwm, rss := procStat(w.Process.Pid)
	m1, err2 := w.scrape(ctx)
	per := 1 / float64(step.Resyncs)
	step.CPU = cpu1 - cpu0
	step.Sample = step.scaled(per)
	step.MaxRSS, step.RSS, step.Diagnoses, step.Errors = hwm, rss, per*(m1.diagnoses-m0.diagnoses), m1.errors
	step.DiagSeconds = ratio(m1.diagSeconds-m0.diagSeconds, m1.diagnoses-m0.diagnoses)
	if err := cmp.Or(err, err2); err != nil {
		return w.failed(err)
	}
	return nil
}

// watchProc is the running watch: the plugin binary, not through kubectl,
// so that its PID is the watch's.
type watchProc struct {
	*exec.Cmd
	cancel    context.CancelFunc
	addr, log string // its /metrics, its stderr
}

func (b *bench) startWatch(ctx context.Context, args ...string) (*watchProc, error) {
	w := &watchProc{addr: "127.0.0.1:0", log: filepath.Join(b.tmp, "watch.log")}
	if ln, err := net.Listen("tcp", w.addr); err == nil { // a port nothing listens on right now
		w.addr = ln.Addr().String()
		_ = ln.Close()
	}
	ctx, w.cancel = context.WithCancel(ctx)
	w.Cmd = exec.CommandContext(ctx, b.plugin, append(append([]string{"watch"}, args...), "--metrics-addr="+w.addr)...)
	// A clean stop is SIGTERM (exit 0); a watch still there 30 s later is killed.
	w.Cancel = func() error { return w.Process.Signal(syscall.SIGTERM) }
	w.WaitDelay, w.Env = 30*time.Second, b.meter.env
	log, err := os.Create(w.log)
	if w.Stderr = log; err == nil {
		err = w.Start()
	}
	return w, err
}

// stop sends SIGTERM and returns the exit code (-1 if it was killed).
func (w *watchProc) stop() int {
	w.cancel()
	_, _ = w.Wait(), w.Stderr.(*os.File).Close()
	return w.ProcessState.ExitCode()
}

// end stops it: it must exit 0.
func (w *watchProc) end() error {
	if code := w.stop(); code != 0 {
		return w.failed(fmt.Errorf("%s exited %d on SIGTERM (want 0)", w.Args[1], code))
	}
	return nil
}

// poll reads the watch's metrics every so often until done says so.
func (w *watchProc) poll(ctx context.Context, every, timeout time.Duration, done func(watchMetrics) bool) error {
	err := wait.PollUntilContextTimeout(ctx, every, timeout, true, func(ctx context.Context) (bool, error) {
		m, err := w.scrape(ctx)
		return err == nil && done(m), nil
	})
	if err != nil {
		return w.failed(err)
	}
	return nil
}

// failed is err with the end of the watch's stderr.
func (w *watchProc) failed(err error) error {
	data, _ := os.ReadFile(w.log)
	return fmt.Errorf("%w; the watch's stderr:\n%s", err, tail(string(data)))
}

// watchMetrics is what the bench reads of the watch's /metrics.
type watchMetrics struct {
	diagnoses, diagSeconds, errors, answers, failedOpen float64 // answers, failedOpen: the guard's
	predictions                                         Histogram
	blocked                                             map[string]bool // namespaces with a nsdoctor_namespace_blocker series
}

func (w *watchProc) scrape(ctx context.Context) (m watchMetrics, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+w.addr+"/metrics", nil)
	if err != nil {
		return m, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return m, fmt.Errorf("reading the watch's metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	fams, err := families(resp.Body)
	diag := histogram(fams["nsdoctor_diagnosis_duration_seconds"])
	m = watchMetrics{diagnoses: diag.Count, diagSeconds: diag.Sum, errors: sum(fams["nsdoctor_diagnosis_errors_total"]), blocked: map[string]bool{},
		answers: sum(fams["nsdoctor_guard_admissions_total"]), failedOpen: sum(fams["nsdoctor_guard_admissions_total"], "outcome=failed_open"),
		predictions: histogram(fams["nsdoctor_guard_prediction_duration_seconds"])}
	for _, g := range series(fams["nsdoctor_namespace_blocker"]) {
		for _, l := range g.GetLabel() {
			if l.GetName() == "namespace" && g.GetGauge().GetValue() > 0 {
				m.blocked[l.GetValue()] = true
			}
		}
	}
	return m, err
}
