package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
)

// The scale phases (issue #49): thousands of namespaces terminating at once,
// each holding what an uninstalled operator leaves, at each of -scale-sizes.
const scaleFinalizer = "example.com/uninstalled"

var scaleContent = content{Held: 3, Finalizer: scaleFinalizer, Plain: 1}

// writesAtOnce is how many namespaces the writes floor writes at once:
// purge's own ceiling (namespacesAtOnceMax). All of them at once is no
// floor: at 1,000 namespaces here 32 at once took 6.7 s, 64 6.8 s, 128
// 7.5 s, and all 22.8 s (the admin's requests are exempt from priority and
// fairness, so nothing queues them: the API server thrashes).
const writesAtOnce = "64"

// scaleFixture creates n namespaces labelled scale=id holding scaleContent,
// then deletes them: Terminating, nobody working on them.
func (b *bench) scaleFixture(ctx context.Context, sec *Section, id string, n int) error {
	logf("[%s] creating %d namespaces of %d objects", id, n, scaleContent.Held+scaleContent.Plain)
	started := time.Now()
	if err := b.namespaces(ctx, numbered(id, n, 5), map[string]string{"scale": id}, false, scaleContent); err != nil {
		return err
	}
	logf("[%s] built in %s", id, time.Since(started).Round(time.Second))
	var err error
	sec.Types, err = b.types()
	return err
}

// scaleCleanup empties and finalizes the namespaces of scale=id with
// purge's write floor, and waits for them to be gone: nothing of them is
// left in storage for the next fixture's cluster-wide lists.
func (b *bench) scaleCleanup(ctx context.Context, id string) error {
	if _, err := b.meter.run(ctx, 0, []string{b.floor, "-writes", "-at-once", writesAtOnce, "-l", "scale=" + id, "-finalizer", scaleFinalizer}); err != nil {
		return err
	}
	return b.scaleGone(ctx, id, 5*time.Minute)
}

// scaleGone waits until no namespace of scale=id is left.
func (b *bench) scaleGone(ctx context.Context, id string, timeout time.Duration) error {
	var left []v1.Namespace
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		l, err := b.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: "scale=" + id})
		if err != nil {
			return false, err
		}
		left = l.Items
		return len(left) == 0, nil
	})
	if err != nil && len(left) > 0 {
		return fmt.Errorf("%d namespaces of scale=%s still there, such as %s (finalizers %v): %w", len(left), id, left[0].Name, left[0].Spec.Finalizers, err)
	}
	return err
}

// scaleExplain measures explain with no name and with -l over n terminating
// namespaces against its floor (the namespaces list and one cluster-wide
// list per type), then again with an APIService down, which holds them all.
func (b *bench) scaleExplain(ctx context.Context) error {
	for _, n := range b.o.scaleSizes {
		id := fmt.Sprintf("sx%d", n)
		sec := b.section("scale-explain", fmt.Sprintf("%d namespaces", n))
		sec.Namespaces, sec.Content = n, scaleContent
		if err := b.scaleFixture(ctx, sec, id, n); err != nil {
			return err
		}
		contenders := func(key, on string) []contender {
			full := b.cmd(sec.series(key+"full", "`kubectl-ns_doctor explain -o json --full`"+on), b.meter, 3, b.plugin, "explain", "-o", "json", "--full")
			full.max = 1
			return []contender{
				b.cmd(sec.series(key+"all", "`kubectl-ns_doctor explain -o json`"+on), b.meter, 3, b.plugin, "explain", "-o", "json"),
				b.cmd(sec.series(key+"selector", "`kubectl-ns_doctor explain -l scale="+id+" -o json`"+on), b.meter, 3, b.plugin, "explain", "-l", "scale="+id, "-o", "json"),
				b.cmd(sec.series(key+"floor", "floor (the namespaces, a cluster-wide list of the type holding content)"+on), b.meter, 0, b.floor, "-census", "-types", "configmaps"),
				b.cmd(sec.series(key+"floor-all", "floor (discovery, the namespaces, a cluster-wide list of every type)"+on), b.meter, 0, b.floor, "-census"),
				full,
			}
		}
		if err := race(ctx, "scale-explain-"+id, b.runs(3), settle, contenders("", "")...); err != nil {
			return err
		}
		apiservice, err := b.BrokenAPIService(ctx, "scale.bench.ns-doctor.io", "v1", "default", "missing-scale")
		if err == nil {
			err = race(ctx, "scale-explain-api-"+id, b.runs(3), settle, contenders("api-", " [an APIService down]")...)
		}
		if err := cmp.Or(err, b.DeleteAPIService(ctx, apiservice), b.scaleCleanup(ctx, id)); err != nil {
			return err
		}
	}
	return nil
}

// scalePurge measures purge -l --force over n terminating namespaces
// against the API server's own write throughput: the same writes (each
// namespace's deletecollection, a PATCH per held object, the finalize
// call) sent by the floor with no client-side limit. Each gets a fresh
// fixture; 429s are kube-apiserver's count over the run.
func (b *bench) scalePurge(ctx context.Context) error {
	for _, n := range b.o.scaleSizes {
		sec := b.section("scale-purge", fmt.Sprintf("%d namespaces", n))
		sec.Namespaces, sec.Content = n, scaleContent
		purge := func(id string) []string {
			return []string{b.plugin, "purge", "-l", "scale=" + id, "--force", "--yes", "--remove-finalizers=" + scaleFinalizer, "--backup-dir", filepath.Join(b.tmp, "backup", id)}
		}
		floor := func(id string) []string {
			return []string{b.floor, "-writes", "-at-once", writesAtOnce, "-l", "scale=" + id, "-finalizer", scaleFinalizer}
		}
		sec.Commands = []string{shown(purge("ID")), shown(floor("ID"))}
		emptying := func(s *Series, argv func(string) []string) contender {
			return contender{Series: s, fresh: func(ctx context.Context, id string) error {
				return b.scaleFixture(ctx, sec, id, n)
			}, measure: func(ctx context.Context, id string) (Sample, error) {
				before, err := b.rejected(ctx)
				if err != nil {
					return Sample{}, err
				}
				x, err := b.meter.run(ctx, 0, argv(id))
				after, err2 := b.rejected(ctx)
				x.Rejected = after - before
				// Both exit once every namespace is finalized: one left is a
				// wrong result.
				return x, cmp.Or(err, err2, b.scaleGone(ctx, id, time.Minute))
			}}
		}
		if err := race(ctx, fmt.Sprintf("sp%d", n), b.runs(1), 5*time.Second, emptying(sec.series("purge", "`kubectl-ns_doctor purge -l scale=ID --force --yes --remove-finalizers=... --backup-dir DIR`"), purge),
			emptying(sec.series("floor", "the writes floor (`floor -writes`)"), floor)); err != nil {
			return err
		}
	}
	return nil
}

// rejected is kube-apiserver's count of 429 answers so far.
func (b *bench) rejected(ctx context.Context) (float64, error) {
	m, err := b.apiserverMetrics(ctx)
	if err != nil {
		return 0, err
	}
	return sum(m["apiserver_request_total"], "code=429"), nil
}

// scaleWatch measures the watch over n terminating namespaces: from its
// start to each namespace's NamespaceStuck Event, its memory and requests
// per minute once every namespace had one, and how long SIGTERM takes to
// stop it (its Lease released); then the same set under
// kube-controller-manager's namespace controller.
func (b *bench) scaleWatch(ctx context.Context) error {
	if err := b.CreateNamespace(ctx, "ns-doctor"); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for _, n := range b.o.scaleSizes {
		id := fmt.Sprintf("sw%d", n)
		sec := b.section("scale-watch", fmt.Sprintf("%d namespaces", n))
		sec.Namespaces, sec.Content = n, scaleContent
		if err := b.scaleFixture(ctx, sec, id, n); err != nil {
			return err
		}
		if err := b.watchAtScale(ctx, sec, id, n); err != nil {
			return err
		}
		if err := b.controllerAtScale(ctx, sec, id, n); err != nil {
			return err
		}
		if err := b.scaleCleanup(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// scaleWindow is how long a settled process's requests are counted.
const scaleWindow = time.Minute

func (b *bench) watchAtScale(ctx context.Context, sec *Section, id string, n int) error {
	seen := &firstEvents{prefix: id + "-", at: map[string]time.Time{}}
	stop, err := seen.watch(ctx, b)
	if err != nil {
		return err
	}
	defer stop()
	started := time.Now()
	w, err := b.startWatch(ctx, "--after=0s", "--grace=0s", "--workers=8", "--leader-elect", "--leader-elect-resource-namespace=ns-doctor")
	if err != nil {
		return err
	}
	sec.Commands = []string{w.String()}
	defer func() { _ = w.stop() }()
	st := &ScaleWatch{}
	sec.Watch = st
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 15*time.Minute, true, func(context.Context) (bool, error) {
		if exited := w.ProcessState; exited != nil {
			return false, w.failed(fmt.Errorf("exited"))
		}
		return seen.count() >= n, nil
	}); err != nil {
		return w.failed(fmt.Errorf("%d of %d namespaces had their NamespaceStuck Event: %w", seen.count(), n, err))
	}
	st.FirstEvent, st.AllEvents = seen.first().Sub(started).Seconds(), seen.last().Sub(started).Seconds()
	logf("[%s] the watch: first Event after %.1fs, the %dth after %.1fs", id, st.FirstEvent, n, st.AllEvents)
	cpu0, _ := procStat(w.Process.Pid)
	st.Settled, err = b.meter.count(ctx, func() error { return sleep(ctx, scaleWindow) })
	cpu1, hwm := procStat(w.Process.Pid)
	st.Settled.CPU, st.Settled.MaxRSS = cpu1-cpu0, hwm
	if err != nil {
		return err
	}
	// The stop: SIGTERM, exit 0, the Lease left to the next replica.
	signalled := time.Now()
	_ = w.Process.Signal(syscall.SIGTERM)
	_ = w.Wait()
	st.Stop = time.Since(signalled).Seconds()
	if code := w.ProcessState.ExitCode(); code != 0 {
		return w.failed(fmt.Errorf("exit %d on SIGTERM (want 0)", code))
	}
	lease, err := b.Kube.CoordinationV1().Leases("ns-doctor").Get(ctx, "ns-doctor-watch", metav1.GetOptions{})
	if err != nil {
		return err
	}
	st.LeaseReleased = lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == ""
	logf("[%s] the watch settled: %.0f requests a minute, VmHWM %d KiB; stopped %.2fs after SIGTERM, Lease released %v", id, st.Settled.Requests, hwm, st.Stop, st.LeaseReleased)
	return nil
}

// controllerAtScale runs kube-controller-manager over the same namespaces:
// its requests per minute and memory after as long as the watch took to
// settle, and how many namespaces its namespace controller had written
// conditions on by then.
func (b *bench) controllerAtScale(ctx context.Context, sec *Section, id string, n int) error {
	if err := b.cp.StartControllerManager(); err != nil {
		return err
	}
	defer b.cp.StopControllerManager()
	started := time.Now()
	pid := pidOf("kube-controller-manager", b.cp.Kubeconfig)
	st := sec.Watch
	if err := sleep(ctx, max(time.Duration(st.AllEvents*float64(time.Second)), scaleWindow)); err != nil {
		return err
	}
	cpu0, _ := procStat(pid)
	x, err := b.meter.count(ctx, func() error { return sleep(ctx, scaleWindow) })
	cpu1, hwm := procStat(pid)
	x.CPU, x.MaxRSS = cpu1-cpu0, hwm
	st.Controller, st.ControllerAfter = x, time.Since(started).Seconds()
	if err != nil {
		return err
	}
	l, err := b.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: "scale=" + id})
	if err != nil {
		return err
	}
	for _, ns := range l.Items {
		if len(ns.Status.Conditions) > 0 {
			st.ControllerDone++
		}
	}
	logf("[%s] kube-controller-manager: %.0f requests a minute, VmHWM %d KiB; conditions on %d of %d namespaces after %.0fs", id, x.Requests, hwm, st.ControllerDone, n, st.ControllerAfter)
	return nil
}

// firstEvents notes when each namespace's first NamespaceStuck Event came.
type firstEvents struct {
	prefix string
	mu     sync.Mutex
	at     map[string]time.Time
}

func (f *firstEvents) watch(ctx context.Context, b *bench) (stop func(), err error) {
	sel := fields.Set{"involvedObject.kind": "Namespace", "reason": "NamespaceStuck"}.AsSelector().String()
	w, err := b.Kube.CoreV1().Events("default").Watch(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, err
	}
	go func() {
		for e := range w.ResultChan() {
			if ev, ok := e.Object.(*v1.Event); ok && e.Type != watch.Deleted && strings.HasPrefix(ev.InvolvedObject.Name, f.prefix) {
				f.mu.Lock()
				if _, ok := f.at[ev.InvolvedObject.Name]; !ok {
					f.at[ev.InvolvedObject.Name] = time.Now()
				}
				f.mu.Unlock()
			}
		}
	}()
	return w.Stop, nil
}

func (f *firstEvents) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.at)
}

// first and last are the earliest and the latest first Event.
func (f *firstEvents) first() (t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, at := range f.at {
		if t.IsZero() || at.Before(t) {
			t = at
		}
	}
	return t
}

func (f *firstEvents) last() (t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, at := range f.at {
		if at.After(t) {
			t = at
		}
	}
	return t
}

// scaleGuard measures the guard's answer to a dry-run DELETE of an Active
// namespace of n objects (the guard registered, as in the guard phase).
func (b *bench) scaleGuard(ctx context.Context) error {
	for _, n := range b.o.scaleSizes {
		ns := fmt.Sprintf("sg%d", n)
		sec := b.section("scale-guard", fmt.Sprintf("%d objects", n))
		sec.Namespace, sec.Content = ns, content{Objects: n, FinalizerEvery: 10}
		if err := b.fill(ctx, sec, 0, []string{ns}, true, sec.Content); err != nil {
			return err
		}
		w, err := b.startGuard(ctx, ns)
		if err != nil {
			return err
		}
		sec.Commands = []string{w.String()}
		with := sec.series("with", "`DELETE` (dry run) with the guard")
		a0, err := b.apiserverMetrics(ctx)
		g0, err2 := w.scrape(ctx)
		if err = cmp.Or(err, err2); err == nil {
			err = race(ctx, "scale-guard-"+ns, b.runs(100), settle, contender{Series: with, measure: func(ctx context.Context, _ string) (Sample, error) {
				return b.meter.count(ctx, func() error { return b.deleteDryRun(ctx, ns) })
			}})
		}
		a1, err2 := b.apiserverMetrics(ctx)
		g1, err3 := w.scrape(ctx)
		_, hwm := procStat(w.Process.Pid)
		if err := cmp.Or(err, err2, err3, b.stopGuard(ctx, w)); err != nil {
			return err
		}
		const seenBy, answers, predictions = "apiserver_admission_webhook_admission_duration_seconds", "nsdoctor_guard_admissions_total", "nsdoctor_guard_prediction_duration_seconds"
		sec.Webhook = histogram(a1[seenBy], guardWebhook).minus(histogram(a0[seenBy], guardWebhook))
		sec.Predictions = histogram(g1[predictions]).minus(histogram(g0[predictions]))
		sec.FailedOpen = sum(g1[answers], "outcome=failed_open") - sum(g0[answers], "outcome=failed_open")
		sec.GuardRSS = hwm
		sec.FromInformers = histogram(g1[predictions], "reads=informers").Count - histogram(g0[predictions], "reads=informers").Count
	}
	return nil
}

// pidOf is the process running binary with arg among its arguments (0:
// none), read from /proc.
func pidOf(binary, arg string) int {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		args := strings.Split(string(cmdline), "\x00")
		if len(args) > 0 && filepath.Base(args[0]) == binary && strings.Contains(string(cmdline), arg) {
			return pid
		}
	}
	return 0
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// shown is argv as the docs show it: binaries and folders of the run's
// temporary dir by name.
func shown(argv []string) string {
	out := slices.Clone(argv)
	out[0] = filepath.Base(out[0])
	for i, a := range out {
		if strings.Contains(a, os.TempDir()) {
			out[i] = "DIR"
		}
	}
	return strings.Join(out, " ")
}
