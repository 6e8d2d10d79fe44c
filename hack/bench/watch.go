package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// watchFinalizer holds one ConfigMap in each stuck namespace of the watch
// phase: nobody serves it, as after an operator's uninstall.
const watchFinalizer = "example.com/bench-gone"

// watchStep is one measured window of the watch phase: the watch running
// on a cluster with Stuck stuck namespaces.
type watchStep struct {
	Stuck int
	// Resyncs is the window's length in resyncs; Diagnoses is how many
	// the watch made meanwhile (Stuck x Resyncs when every round ran).
	Resyncs   int
	Diagnoses float64
	// DiagSeconds is the watch's own time per diagnosis (its histogram).
	DiagSeconds float64
	// Requests over the whole window (divide by Resyncs for per resync).
	Requests sample
	// CPU is the watch process's user + system time over the window, s.
	CPU float64
	// ServerCPU is etcd's and kube-apiserver's over the window, s.
	ServerCPU float64
	// ReadySeconds is how long after the step's deletions (or the watch's
	// start) it exported a blocker for every stuck namespace.
	ReadySeconds float64
	// HWM and RSS are the watch's VmHWM and VmRSS (KiB) at the window's end.
	HWM, RSS int64
	// Errors is nsdoctor_diagnosis_errors_total at the window's end.
	Errors float64
}

// watchResult is what the watch phase measured.
type watchResult struct {
	Namespaces, ObjectsPer, Types int
	Resync                        time.Duration
	BuildSeconds                  float64
	Idle                          sample // the API server alone over IdleResyncs resyncs
	IdleResyncs                   int
	Steps                         []watchStep
	// FirstReady is from the watch's start to its first blocker series
	// for every stuck namespace of the first step.
	FirstReady float64
	HWM        int64 // VmHWM at the end, KiB
	ExitCode   int
	Argv       []string
}

// watchPhase is issue #27's scale target: `kubectl-ns_doctor watch` on a
// cluster of many namespaces and objects of which a few are stuck. It
// measures the watch's peak memory and the requests it makes per resync in
// steady state, at each of -watch-stuck stuck namespaces, with the
// namespace controller stopped so that only the watch talks.
func (b *bench) watchPhase(ctx context.Context) error {
	o := b.o
	res := &watchResult{Namespaces: o.watchNS, ObjectsPer: o.watchObjects, Resync: o.watchResync}
	if o.watchTypes > 0 {
		logf("[watch] generating CRDs up to %d resource types", o.watchTypes)
		if err := b.fx.ensureTypes(ctx, o.watchTypes); err != nil {
			return err
		}
	}
	types, _, err := b.fx.listPages(ctx, "default")
	if err != nil {
		return err
	}
	res.Types = types
	names := make([]string, o.watchNS)
	for i := range names {
		names[i] = fmt.Sprintf("w-%04d", i)
	}
	stuckMax := o.watchStuck[len(o.watchStuck)-1]
	logf("[watch] creating %d namespaces with %d ConfigMaps each (%d held by %s)", o.watchNS, o.watchObjects, stuckMax, watchFinalizer)
	t0 := time.Now()
	if err := b.watchFixture(ctx, names, stuckMax); err != nil {
		return err
	}
	res.BuildSeconds = since(t0)
	logf("[watch] fixture built in %.1fs (%.0f objects/s)", res.BuildSeconds, float64(o.watchNS*(o.watchObjects+1))/res.BuildSeconds)

	var w *watchProc
	defer func() {
		if w != nil {
			w.stop()
		}
	}()
	done := 0
	for _, stuck := range o.watchStuck {
		step := watchStep{Stuck: stuck, Resyncs: o.watchResyncs}
		if err := b.strandNamespaces(ctx, names[done:stuck]); err != nil {
			return err
		}
		stepStart := time.Now()
		done = stuck
		if w == nil {
			// The API server alone, before the watch starts: its own
			// background requests over the same length of time. The
			// ConfigMaps' grace (--grace) runs out meanwhile.
			res.IdleResyncs = 2
			logf("[watch] the API server alone for %v", time.Duration(res.IdleResyncs)*o.watchResync)
			if res.Idle, err = b.idleWindow(ctx, time.Duration(res.IdleResyncs)*o.watchResync); err != nil {
				return err
			}
			res.Argv = []string{b.plugin, "watch", "--after=0s", "--resync=" + o.watchResync.String(), "--metrics-addr=127.0.0.1:0"}
			if w, err = b.startWatch(ctx, res.Argv); err != nil {
				return err
			}
			stepStart = w.started
			logf("[watch] watch running (pid %d), metrics on %s", w.cmd.Process.Pid, w.addr)
		}
		// Every stuck namespace diagnosed: a blocker series each. Their
		// finalizers are young, so this waits out --grace (30 s).
		if err := w.waitBlockers(ctx, names[:stuck], 2*time.Minute+4*o.watchResync); err != nil {
			return err
		}
		step.ReadySeconds = since(stepStart)
		if res.FirstReady == 0 {
			res.FirstReady = step.ReadySeconds
		}
		logf("[watch] %d stuck: blockers exported for all after %.1fs", stuck, step.ReadySeconds)
		if err := b.watchWindow(ctx, w, &step); err != nil {
			return err
		}
		res.Steps = append(res.Steps, step)
		n := float64(step.Resyncs)
		logf("[watch] %d stuck: %.0f requests per resync (%.0f diagnoses in %d resyncs, %.3fs each), watch CPU %.2fs per resync, VmHWM %d KiB",
			stuck, step.Requests.Requests/n, step.Diagnoses, step.Resyncs, step.DiagSeconds, step.CPU/n, step.HWM)
	}
	res.HWM, _ = procStatusKiB(w.cmd.Process.Pid, "VmHWM")
	stopped := w
	w = nil
	if res.ExitCode = stopped.stop(); res.ExitCode != 0 {
		return fmt.Errorf("watch exited %d on SIGTERM (want 0)\n%s", res.ExitCode, tail(stopped.stderr.String()))
	}
	b.rep.watchSection(res)
	return nil
}

// watchFixture creates the namespaces, each with -watch-objects plain
// ConfigMaps; the first stuck of them also get one ConfigMap held by
// watchFinalizer. Namespaces first, then every ConfigMap at once over the
// create workers.
func (b *bench) watchFixture(ctx context.Context, names []string, stuck int) error {
	if err := parallel(ctx, len(names), createWorkers, func(i int) error {
		return b.fx.CreateNamespaceWithLabels(ctx, names[i], map[string]string{"bench": "watch"})
	}); err != nil {
		return err
	}
	per := b.o.watchObjects
	return parallel(ctx, len(names)*per+stuck, createWorkers, func(i int) error {
		if i >= len(names)*per {
			ns := names[i-len(names)*per]
			return b.fx.CreateConfigMap(ctx, ns, "held", nil, watchFinalizer)
		}
		ns, name := names[i/per], fmt.Sprintf("cm-%03d", i%per)
		_, err := b.fx.kube.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"bench": "watch"}},
			Data:       map[string]string{"k": name}}, metav1.CreateOptions{})
		return err
	})
}

// strandNamespaces deletes the namespaces and lets the real namespace
// controller work on them until only the held ConfigMap is left and it
// has said so (NamespaceFinalizersRemaining), as in a cluster whose
// operator is gone; then it stops the controller again, so that only the
// watch talks while measured.
func (b *bench) strandNamespaces(ctx context.Context, names []string) error {
	if len(names) == 0 {
		return nil
	}
	logf("[watch] deleting %d namespaces (%s..%s) with the namespace controller on", len(names), names[0], names[len(names)-1])
	if err := b.cp.StartControllerManager(); err != nil {
		return err
	}
	defer b.cp.StopControllerManager()
	if err := parallel(ctx, len(names), createWorkers, func(i int) error { return b.fx.DeleteNamespace(ctx, names[i]) }); err != nil {
		return err
	}
	t0 := time.Now()
	err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			ns, err := b.fx.kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if !hasCondition(ns, "NamespaceFinalizersRemaining") {
				return false, nil
			}
			cms, err := b.fx.kube.CoreV1().ConfigMaps(name).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			if len(cms.Items) != 1 {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the namespace controller to leave %d namespaces held by %s: %w", len(names), watchFinalizer, err)
	}
	logf("[watch] the namespace controller left them held by %s after %.1fs; stopped", watchFinalizer, since(t0))
	return nil
}

func hasCondition(ns *v1.Namespace, typ v1.NamespaceConditionType) bool {
	for _, c := range ns.Status.Conditions {
		if c.Type == typ && c.Status == v1.ConditionTrue {
			return true
		}
	}
	return false
}

// idleWindow counts the API server's requests over d with nobody else
// talking to it (its own lease renewals and the like).
func (b *bench) idleWindow(ctx context.Context, d time.Duration) (sample, error) {
	before, err := b.meter.counts(ctx)
	if err != nil {
		return sample{}, err
	}
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return sample{}, ctx.Err()
	}
	after, err := b.meter.counts(ctx)
	if err != nil {
		return sample{}, err
	}
	return requestDelta(before, after), nil
}

// watchWindow measures one window of whole resyncs: it starts in the quiet
// gap right after a round of diagnoses and lasts exactly Resyncs resyncs,
// so it ends in the same gap that many rounds later.
func (b *bench) watchWindow(ctx context.Context, w *watchProc, step *watchStep) error {
	if _, err := w.waitRoundEnd(ctx, 3*b.o.watchResync+time.Minute); err != nil {
		return err
	}
	m0, err := w.scrape(ctx)
	if err != nil {
		return err
	}
	before, err := b.meter.counts(ctx)
	if err != nil {
		return err
	}
	pid := w.cmd.Process.Pid
	cpu0, server0 := processCPU(pid), b.meter.serverCPU()
	window := time.Duration(step.Resyncs) * b.o.watchResync
	logf("[watch] %d stuck: measuring %v (%d resyncs)", step.Stuck, window, step.Resyncs)
	select {
	case <-time.After(window):
	case <-ctx.Done():
		return ctx.Err()
	case <-w.done:
		return fmt.Errorf("while measured: %w", w.gone())
	}
	after, err := b.meter.counts(ctx)
	if err != nil {
		return err
	}
	step.CPU, step.ServerCPU = processCPU(pid)-cpu0, b.meter.serverCPU()-server0
	m1, err := w.scrape(ctx)
	if err != nil {
		return err
	}
	step.Requests = requestDelta(before, after)
	step.Diagnoses = m1.diagnoses - m0.diagnoses
	if step.Diagnoses > 0 {
		step.DiagSeconds = (m1.diagSeconds - m0.diagSeconds) / step.Diagnoses
	}
	step.Errors = m1.errors
	step.HWM, _ = procStatusKiB(pid, "VmHWM")
	step.RSS, _ = procStatusKiB(pid, "VmRSS")
	return nil
}

// watchProc is the running watch.
type watchProc struct {
	cmd     *exec.Cmd
	addr    string
	started time.Time
	// done is closed once the watch has exited, waitErr then set.
	done    chan struct{}
	waitErr error
	stderr  *syncBuffer
	client  *http.Client
}

// syncBuffer is the watch's stderr, kept for error messages.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) add(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() < 1<<20 {
		s.b.WriteString(line + "\n")
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var metricsAddrRE = regexp.MustCompile(`metrics on http://([^/\s]+)/metrics`)

// startWatch starts argv (the plugin binary itself, not through kubectl,
// so that its PID is the watch's) and waits for the address it serves
// /metrics on. Its stdout (a line per changed diagnosis) goes to a file.
func (b *bench) startWatch(ctx context.Context, argv []string) (*watchProc, error) {
	out, err := os.Create(filepath.Join(b.tmp, "watch.out"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Stdout = b.meter.env, out
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	w := &watchProc{cmd: cmd, done: make(chan struct{}), stderr: &syncBuffer{}, client: &http.Client{Timeout: 10 * time.Second}}
	w.started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			w.stderr.add(line)
			if m := metricsAddrRE.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, pipe)
		w.waitErr = cmd.Wait()
		_ = out.Close()
		close(w.done)
	}()
	select {
	case w.addr = <-addr:
		return w, nil
	case <-w.done:
		return nil, fmt.Errorf("%s exited before serving metrics: %v\n%s", strings.Join(argv, " "), w.waitErr, tail(w.stderr.String()))
	case <-time.After(2 * time.Minute):
		w.stop()
		return nil, fmt.Errorf("%s did not say where it serves metrics within 2 minutes\n%s", strings.Join(argv, " "), tail(w.stderr.String()))
	case <-ctx.Done():
		w.stop()
		return nil, ctx.Err()
	}
}

// stop sends SIGTERM (a clean stop: exit 0) and returns the exit code;
// it kills the watch if it has not exited within 30 s.
func (w *watchProc) stop() int {
	select {
	case <-w.done:
	default:
		_ = w.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-w.done:
		case <-time.After(30 * time.Second):
			_ = w.cmd.Process.Kill()
			<-w.done
		}
	}
	return w.cmd.ProcessState.ExitCode()
}

// gone is an error once the watch has exited, nil while it runs.
func (w *watchProc) gone() error {
	select {
	case <-w.done:
		return fmt.Errorf("watch exited: %v\n%s", w.waitErr, tail(w.stderr.String()))
	default:
		return nil
	}
}

// watchMetrics is what the bench reads of the watch's /metrics.
type watchMetrics struct {
	diagnoses   float64 // nsdoctor_diagnosis_duration_seconds_count
	diagSeconds float64 // nsdoctor_diagnosis_duration_seconds_sum
	errors      float64 // nsdoctor_diagnosis_errors_total
	// blocked are the namespaces with at least one
	// nsdoctor_namespace_blocker series.
	blocked map[string]bool
}

func (w *watchProc) scrape(ctx context.Context) (watchMetrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+w.addr+"/metrics", nil)
	if err != nil {
		return watchMetrics{}, err
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return watchMetrics{}, fmt.Errorf("reading the watch's metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return watchMetrics{}, fmt.Errorf("reading the watch's metrics: %s", resp.Status)
	}
	return parseWatchMetrics(resp.Body)
}

// parseWatchMetrics reads the few series the bench needs from the
// Prometheus text format.
func parseWatchMetrics(r io.Reader) (watchMetrics, error) {
	m := watchMetrics{blocked: map[string]bool{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		name, value := line[:sp], line[sp+1:]
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		switch {
		case name == "nsdoctor_diagnosis_duration_seconds_count":
			m.diagnoses = v
		case name == "nsdoctor_diagnosis_duration_seconds_sum":
			m.diagSeconds = v
		case name == "nsdoctor_diagnosis_errors_total":
			m.errors = v
		case strings.HasPrefix(name, "nsdoctor_namespace_blocker{") && v > 0:
			if ns := label(name[len("nsdoctor_namespace_blocker{"):], "namespace"); ns != "" {
				m.blocked[ns] = true
			}
		}
	}
	return m, sc.Err()
}

// label extracts name="value" from a Prometheus label set (values with no
// escaped quotes, as namespace names are).
func label(labels, name string) string {
	i := strings.Index(","+labels, ","+name+"=\"")
	if i < 0 {
		return ""
	}
	rest := labels[i+len(name)+2:]
	end := strings.IndexByte(rest, '"')
	if end < 0 {
		return ""
	}
	return rest[:end]
}

// waitBlockers waits until the watch exports a blocker for every one of
// names.
func (w *watchProc) waitBlockers(ctx context.Context, names []string, timeout time.Duration) error {
	var missing []string
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		if err := w.gone(); err != nil {
			return false, err
		}
		m, err := w.scrape(ctx)
		if err != nil {
			return false, err
		}
		missing = missing[:0]
		for _, n := range names {
			if !m.blocked[n] {
				missing = append(missing, n)
			}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the watch to export a blocker for %d namespaces (%d without: %s): %w\n%s",
			len(names), len(missing), strings.Join(missing[:min(len(missing), 5)], ", "), err, tail(w.stderr.String()))
	}
	return nil
}

// quietAfterRound is how long the diagnosis count must stand still for a
// round of diagnoses to count as over.
const quietAfterRound = 2 * time.Second

// waitRoundEnd waits for a round of diagnoses to start and end: the count
// grows, then stands still for quietAfterRound. It returns the count.
func (w *watchProc) waitRoundEnd(ctx context.Context, timeout time.Duration) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	m, err := w.scrape(ctx)
	if err != nil {
		return 0, err
	}
	first, last, lastChange, grew := m.diagnoses, m.diagnoses, time.Now(), false
	for {
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("waiting for a round of diagnoses to end (count %v, first %v): %w", last, first, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
		m, err := w.scrape(ctx)
		if err != nil {
			return 0, err
		}
		if m.diagnoses != last {
			last, lastChange, grew = m.diagnoses, time.Now(), true
			continue
		}
		if grew && time.Since(lastChange) >= quietAfterRound {
			return last, nil
		}
	}
}

// procStatusKiB reads a "kB" field (VmHWM, VmRSS) of /proc/PID/status.
func procStatusKiB(pid int, field string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return statusField(string(data), field)
}

func statusField(status, field string) (int64, error) {
	for line := range strings.SplitSeq(status, "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc status", field)
}
