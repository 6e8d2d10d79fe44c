package main

import (
	"bytes"
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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	Diagnoses, DiagSeconds, Errors float64 `json:",omitempty"` // per resync; the watch's seconds per diagnosis; its errors at the end
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
	n, stuck := b.scaled(1000), []int{b.scaled(20), max(b.scaled(40), b.scaled(20)+1)}
	sec := b.section("watch", "")
	sec.Namespaces, sec.Content = n, content{Held: 1, Finalizer: "example.com/bench-gone", Plain: 50}
	// Every namespace holds plain ConfigMaps, the ones that will be stuck
	// also one held by a finalizer nobody serves.
	names := numbered("w", n, 4)
	if err = b.fx.namespaces(ctx, names[:stuck[1]], nil, true, sec.Content); err == nil {
		err = b.fill(ctx, sec, 0, names[stuck[1]:], true, content{Plain: sec.Content.Plain})
	}
	if err != nil {
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
	sec.Commands = []string{w.String()}
	for i, k := range stuck {
		if i > 0 {
			if err := b.strand(ctx, names[stuck[i-1]:k]); err != nil {
				return err
			}
		}
		// A blocker series for every stuck namespace: their finalizers are
		// young, so this waits out --grace (30 s).
		if err := w.poll(ctx, time.Second, 2*time.Minute+4*watchResync, func(m fams) bool {
			return !slices.ContainsFunc(names[:k], func(ns string) bool { return sum(m["nsdoctor_namespace_blocker"], "namespace="+ns) == 0 })
		}); err != nil {
			return fmt.Errorf("waiting for a blocker series of each of the %d stuck namespaces: %w", k, err)
		}
		step := WatchStep{Stuck: k, Resyncs: watchResyncs}
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
	const diagnoses = "nsdoctor_diagnosis_duration_seconds"
	last, changed, grew := -1.0, time.Now(), false
	if err := w.poll(ctx, 200*time.Millisecond, 3*watchResync+time.Minute, func(m fams) bool {
		if n := histogram(m[diagnoses]).Count; n != last {
			grew, last, changed = last >= 0, n, time.Now()
		}
		return grew && time.Since(changed) >= quietAfterRound
	}); err != nil {
		return fmt.Errorf("waiting for a round of diagnoses to end: %w", err)
	}
	m0, err := w.scrape(ctx)
	cpu0, _ := procStat(w.Process.Pid)
	if err == nil {
		step.Sample, err = b.window(ctx, time.Duration(step.Resyncs)*watchResync)
	}
	cpu1, hwm := procStat(w.Process.Pid)
	m1, err2 := w.scrape(ctx)
	d, per := histogram(m1[diagnoses]).minus(histogram(m0[diagnoses])), 1/float64(step.Resyncs)
	step.Sample, step.CPU = step.scaled(per), per*(cpu1-cpu0)
	step.MaxRSS, step.Diagnoses, step.DiagSeconds, step.Errors = hwm, per*d.Count, ratio(d.Sum, d.Count), sum(m1["nsdoctor_diagnosis_errors_total"])
	if err := cmp.Or(err, err2); err != nil {
		return w.failed(err)
	}
	return nil
}

// watchProc is a running watch: the plugin binary, not through kubectl,
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

// String is its command line as a user would type it.
func (w *watchProc) String() string { return "kubectl-ns_doctor " + strings.Join(w.Args[1:], " ") }

// stop sends SIGTERM and returns the exit code (-1 if it was killed).
func (w *watchProc) stop() int {
	w.cancel()
	_, _ = w.Wait(), w.Stderr.(*os.File).Close()
	return w.ProcessState.ExitCode()
}

// end stops it: it must exit 0.
func (w *watchProc) end() error {
	if code := w.stop(); code != 0 {
		return w.failed(fmt.Errorf("exit %d on SIGTERM (want 0)", code))
	}
	return nil
}

// poll reads its metrics every so often until done says so.
func (w *watchProc) poll(ctx context.Context, every, timeout time.Duration, done func(fams) bool) error {
	err := wait.PollUntilContextTimeout(ctx, every, timeout, true, func(ctx context.Context) (bool, error) {
		m, err := w.scrape(ctx)
		return err == nil && done(m), nil
	})
	if err != nil {
		return w.failed(err)
	}
	return nil
}

// failed is err with the end of its stderr.
func (w *watchProc) failed(err error) error {
	data, _ := os.ReadFile(w.log)
	return fmt.Errorf("%s: %w; its stderr:\n%s", w, err, tail(string(data)))
}

func (w *watchProc) scrape(ctx context.Context) (fams, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+w.addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	return parse(resp.Body)
}

// guardBudget is its --guard-timeout; guardWebhook selects its webhook's
// series of kube-apiserver's metrics.
const guardBudget, guardWebhook = 2 * time.Second, "name=guard.ns-doctor.io"

// guard is issue #35's speed: the deletion guard (`watch --guard=warn`,
// out of the cluster) asked about DELETEs of an Active namespace with
// dryRun=All (kube-apiserver calls webhooks with sideEffects None for dry
// runs too; nothing is deleted), timed as kube-apiserver saw them (its
// webhook histogram) and as the client did, without the guard and with
// it; then the deletion of content (purge's floor emptying a fresh
// namespace) with the guard registered and without: kube-apiserver asks it
// about the namespace, never about what the namespace holds.
func (b *bench) guard(ctx context.Context) error {
	s := b.size(1)
	sec := b.section("guard", s.Name)
	sec.Size, sec.Namespace, sec.Content = s, "guard-"+s.Name, content{Objects: s.Objects, FinalizerEvery: 10, Pods: 10}
	if err := b.fill(ctx, sec, s.Types, []string{sec.Namespace}, true, sec.Content); err != nil {
		return err
	}
	dryRun := func(s *Series) contender {
		return contender{Series: s, measure: func(ctx context.Context, _ string) (Sample, error) {
			var took float64
			x, err := b.meter.count(ctx, func() error {
				defer func(t0 time.Time) { took = since(t0) }(time.Now())
				return b.deleteDryRun(ctx, sec.Namespace)
			})
			x.Seconds = took
			return x, err
		}}
	}
	if err := race(ctx, "guard-without", b.runs(30), settle, dryRun(sec.series("without", "`DELETE` (dry run) without the guard"))); err != nil {
		return err
	}
	w, err := b.startGuard(ctx, sec.Namespace)
	if err != nil {
		return err
	}
	with := sec.series("with", "`DELETE` (dry run) with the guard")
	a0, err := b.apiserverMetrics(ctx)
	g0, err2 := w.scrape(ctx)
	if sec.Commands, err = []string{w.String()}, cmp.Or(err, err2); err == nil {
		err = race(ctx, "guard-with", b.runs(30), settle, dryRun(with))
	}
	a1, err2 := b.apiserverMetrics(ctx)
	g1, err3 := w.scrape(ctx)
	if err := cmp.Or(err, err2, err3, b.stopGuard(ctx, w)); err != nil {
		return err
	}
	const seen, failedOpen, answers = "apiserver_admission_webhook_admission_duration_seconds", "apiserver_admission_webhook_fail_open_count", "nsdoctor_guard_admissions_total"
	sec.Webhook = histogram(a1[seen], guardWebhook).minus(histogram(a0[seen], guardWebhook))
	sec.Predictions = histogram(g1["nsdoctor_guard_prediction_duration_seconds"]).minus(histogram(g0["nsdoctor_guard_prediction_duration_seconds"]))
	sec.FailedOpen = sum(a1[failedOpen], guardWebhook) - sum(a0[failedOpen], guardWebhook) + sum(g1[answers], "outcome=failed_open") - sum(g0[answers], "outcome=failed_open")
	if n := len(with.Runs); sec.Webhook.Count < float64(n) {
		return fmt.Errorf("kube-apiserver asked the guard about %v of the %d DELETEs", sec.Webhook.Count, n)
	}
	c, floor := content{Objects: s.Objects}, func(ns string) []string { return []string{b.floor, "-purge", ns} }
	return race(ctx, "guard-content", b.runs(6), settle, b.emptying(sec.series("floor", "purge's floor, without the guard"), b.meter, c, floor),
		b.guarded(b.emptying(sec.series("floor-guard", "purge's floor, the guard registered"), b.meter, c, floor)))
}

func (b *bench) deleteDryRun(ctx context.Context, ns string) error {
	return b.fx.Kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
}

// startGuard starts the watch with the guard, which registers itself, and
// waits until kube-apiserver asks it about a DELETE of ns: the
// registration reaches kube-apiserver's informer a moment after it is
// written. --after keeps the watch from diagnosing meanwhile.
func (b *bench) startGuard(ctx context.Context, ns string) (*watchProc, error) {
	w, err := b.startWatch(ctx, "--after=24h", "--guard=warn", "--guard-addr=127.0.0.1:0", "--guard-timeout="+guardBudget.String())
	if err == nil {
		err = w.poll(ctx, 200*time.Millisecond, time.Minute, func(m fams) bool {
			_ = b.deleteDryRun(ctx, ns) // answered by a later poll, once registered
			return sum(m["nsdoctor_guard_admissions_total"]) > 0
		})
	}
	if err != nil && w.Process != nil {
		w.stop()
	}
	return w, err
}

// stopGuard stops it: it must exit 0 and remove its registration.
func (b *bench) stopGuard(ctx context.Context, w *watchProc) error {
	err := w.end()
	if _, err2 := b.fx.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "ns-doctor-guard", metav1.GetOptions{}); err == nil && !apierrors.IsNotFound(err2) {
		err = fmt.Errorf("ns-doctor-guard still there after the guard exited (%v)", err2)
	}
	return err
}

// guarded is c with the guard registered around its measured run.
func (b *bench) guarded(c contender) contender {
	var w *watchProc
	fresh, measure := c.fresh, c.measure
	c.fresh = func(ctx context.Context, ns string) (err error) {
		if err = fresh(ctx, ns); err == nil {
			w, err = b.startGuard(ctx, ns)
		}
		return err
	}
	c.measure = func(ctx context.Context, ns string) (Sample, error) {
		x, err := measure(ctx, ns)
		return x, cmp.Or(err, b.stopGuard(ctx, w))
	}
	return c
}

func (b *bench) apiserverMetrics(ctx context.Context) (fams, error) {
	raw, err := b.fx.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver's /metrics: %w", err)
	}
	return parse(bytes.NewReader(raw))
}
