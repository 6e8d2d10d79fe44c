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
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// explain measures explain against its floor, kubectl's start-up and a recipe.
func (b *bench) explain(ctx context.Context) error {
	return b.explainOn(ctx, "explain", b.o.sizes, b.paths[:1], 3)
}

// explainLink is the same on loopback and through the slow link.
func (b *bench) explainLink(ctx context.Context) error {
	return b.explainOn(ctx, "explain-link", []size{b.size(1)}, b.paths, 1)
}

// explainOn measures it on the stuck namespace of each size, built once.
func (b *bench) explainOn(ctx context.Context, phase string, sizes []size, paths []*meter, recipes int) error {
	for _, s := range sizes {
		ns, sec := "bench-"+s.Name, b.section(phase, s.Name)
		sec.Size, sec.Namespace, sec.Content = s, ns, content{Objects: s.Objects, FinalizerEvery: 10, Pods: 10}
		var names []string
		if !b.built[ns] {
			names, b.built[ns] = []string{ns}, true
			logf("[%s] creating %d objects (+%d pods) in %s", s.Name, s.Objects, sec.Content.Pods, ns)
		}
		if err := b.fill(ctx, sec, s.Types, names, false, sec.Content); err != nil {
			return err
		} else if len(paths) > 1 {
			sec.Delay = b.o.linkDelay
		}
		var cs []contender
		for _, m := range paths {
			cs = append(cs, b.cmd(sec.series(m.key+"explain", "`kubectl ns-doctor explain "+ns+" -o json`"+m.on), m, 3, "kubectl", "ns-doctor", "explain", ns, "-o", "json"),
				b.cmd(sec.series(m.key+"plugin", "`kubectl-ns_doctor explain "+ns+" -o json` (plugin binary)"+m.on), m, 3, b.plugin, "explain", ns, "-o", "json"),
				b.cmd(sec.series(m.key+"floor", "floor (discovery + metadata sweep)"+m.on), m, 0, b.floor, ns),
				b.cmd(sec.series(m.key+"version", "`kubectl ns-doctor version --client` (no API call)"+m.on), m, 0, "kubectl", "ns-doctor", "version", "--client"))
			// The loop users run by hand to see what a namespace holds.
			c := b.cmd(sec.series(m.key+"recipe", "shell recipe"+m.on), m, 123, "bash", "-c", "kubectl api-resources --verbs=list --namespaced -o name | xargs -n 1 kubectl get --show-kind --ignore-not-found -n "+ns+" >/dev/null 2>&1")
			c.max, cs = recipes, append(cs, c)
		}
		runs := b.runs(5)
		if s.Objects >= 100_000 {
			runs = b.runs(3)
		}
		if err := race(ctx, phase+"-"+s.Name, runs, settle, cs...); err != nil {
			return err
		}
	}
	return nil
}

// many is explain with no name over many terminating namespaces, and of one.
func (b *bench) many(ctx context.Context) error {
	n, c := b.scaled(50), content{Objects: 20, FinalizerEvery: 4, Pods: 1}
	sec := b.section("many", fmt.Sprintf("%d namespaces", n))
	sec.Namespaces, sec.Content = n, c
	if err := b.fill(ctx, sec, 150, numbered("many", n, 2), false, c); err != nil {
		return err
	}
	// 3 runs: explain over 50 namespaces is client-rate-limited.
	return race(ctx, "many", b.runs(3), settle, b.cmd(sec.series("all", "`kubectl ns-doctor explain -o json`"), b.meter, 3, "kubectl", "ns-doctor", "explain", "-o", "json"),
		b.cmd(sec.series("one", "`kubectl ns-doctor explain many-00 -o json`"), b.meter, 3, "kubectl", "ns-doctor", "explain", "many-00", "-o", "json"))
}

// fill ensures types, creates names of c (deleted unless active), counts types.
func (b *bench) fill(ctx context.Context, sec *Section, types int, names []string, active bool, c content) (err error) {
	if err = b.ensureTypes(ctx, types); err == nil {
		err = b.namespaces(ctx, names, nil, active, c)
	}
	if err == nil {
		sec.Types, err = b.types()
	}
	return err
}

// cmd measures argv through m; ok: an exit code accepted (explain's 3).
func (b *bench) cmd(s *Series, m *meter, ok int, argv ...string) contender {
	return contender{Series: s, measure: func(ctx context.Context, _ string) (Sample, error) { return m.run(ctx, ok, argv) }}
}

// purge empties the same content per path, run and contender: the namespace
// controller (on its direct connection), purge, the floor and -purge-compare's.
func (b *bench) purge(ctx context.Context) error {
	s := b.size(1)
	sec := b.section("purge", s.Name)
	if err := b.ensureTypes(ctx, s.Types); err != nil {
		return err
	}
	sec.Size, sec.CRDs, sec.Delay = s, b.crds(), b.o.linkDelay
	var cs []contender
	for _, m := range b.paths {
		cs = append(cs, b.emptying(sec.series(m.key+"controller", "namespace controller"+m.on), m, s.Objects, nil, false),
			b.emptying(sec.series(m.key+"purge", "`kubectl ns-doctor purge --force`"+m.on), m, s.Objects, b.purgeArgv, false),
			b.emptying(sec.series(m.key+"floor", "purge's floor"+m.on), m, s.Objects, b.floorArgv, false))
		if b.o.compare != "" { // first on PATH, where kubectl finds its plugins (os/exec keeps the last of duplicate keys)
			cm := *m
			cm.env = append(slices.Clone(m.env), "PATH="+filepath.Dir(b.o.compare)+string(os.PathListSeparator)+os.Getenv("PATH"))
			cs = append(cs, b.emptying(sec.series(m.key+"compare", "the -purge-compare build"+m.on), &cm, s.Objects, b.purgeArgv, false))
		}
	}
	return race(ctx, "purge", b.runs(6), settle, cs...)
}

// purgeMemory is purge --force's peak memory on a big namespace.
func (b *bench) purgeMemory(ctx context.Context) error {
	s := b.size(len(b.o.sizes))
	sec := b.section("purge-memory", fmt.Sprintf("%s, %d objects", s.Name, s.Objects))
	if err := b.ensureTypes(ctx, s.Types); err != nil {
		return err
	}
	sec.Size, sec.CRDs = s, b.crds()
	return race(ctx, "memory", 1, settle, b.emptying(sec.series("purge", "`kubectl ns-doctor purge NAME --force --yes`"), b.meter, s.Objects, b.purgeArgv, false))
}

// purgeArgv is `kubectl ns-doctor purge NS --force`; floorArgv purge's floor.
func (b *bench) purgeArgv(ns string) []string {
	return []string{"kubectl", "ns-doctor", "purge", ns, "--force", "--yes", "-o", "json", "--backup-dir", filepath.Join(b.tmp, "backup", ns)}
}

func (b *bench) floorArgv(ns string) []string { return []string{b.floor, "-purge", ns} }

// emptying times argv(NS), which empties and finishes a fresh namespace of that
// many objects, from the delete (through m) to its exit; with no argv, the
// namespace controller (started 10 s before, to warm up) until it is gone.
// With guard, the guard is registered from the namespace's creation on.
func (b *bench) emptying(s *Series, m *meter, objects int, argv func(ns string) []string, guard bool) contender {
	var w *watchProc
	return contender{Series: s, fresh: func(ctx context.Context, ns string) (err error) {
		if err = b.namespaces(ctx, []string{ns}, nil, true, content{Objects: objects}); err == nil && guard {
			w, err = b.startGuard(ctx, ns)
		}
		return err
	}, measure: func(ctx context.Context, ns string) (x Sample, err error) {
		if guard {
			defer func() { err = cmp.Or(err, b.stopGuard(ctx, w)) }()
		}
		if argv == nil {
			if err := b.cp.StartControllerManager(); err != nil {
				return x, err
			}
			defer b.cp.StopControllerManager()
			time.Sleep(10 * time.Second)
		}
		t0 := time.Now()
		del, _, err := m.spawn(ctx, []string{"kubectl", "delete", "namespace", ns, "--wait=false"}, 0, "")
		if err != nil {
			return x, err
		} else if argv == nil {
			err = b.waitGone(ctx, ns, 15*time.Minute)
			return Sample{FromDelete: time.Since(t0).Seconds()}, err
		}
		if x, err = m.run(ctx, 0, argv(ns)); err == nil {
			err = b.waitGone(ctx, ns, time.Minute)
		}
		x.FromDelete = del.Seconds + x.Seconds
		return x, err
	}}
}

// batchSpec is a batch phase's: n namespaces per run and contender, over types.
type batchSpec struct {
	id                string
	n, runs, types    int
	pause             time.Duration
	content           content
	explain           bool
	plugin, selectors []string
	remove            string
}

// batch purges a fresh batch=ID stuck by an uninstalled operator per run and
// contender, explained first if asked, by purge -l or the loop users write.
func (b *bench) batch(ctx context.Context, phase string, sp batchSpec) error {
	sec := b.section(phase, "")
	if err := b.fill(ctx, sec, sp.types, nil, false, sp.content); err != nil {
		return err
	}
	sec.Scope, sec.Namespaces, sec.CRDs, sec.Pause, sec.Content = fmt.Sprintf("%d namespaces, %d types", sp.n, sec.Types), sp.n, b.crds(), sp.pause, sp.content
	argvs := func(plugin []string, loop bool, id, backup string) (out [][]string) {
		flags := []string{"--force", "--yes", "--remove-finalizers=" + sp.remove, "--backup-dir"}
		if !loop {
			return [][]string{slices.Concat(plugin, []string{"purge", "-l", "batch=" + id}, sp.selectors, flags, []string{backup})}
		}
		for _, ns := range numbered(id, sp.n, 4) {
			out = append(out, slices.Concat(plugin, []string{"purge", ns}, flags, []string{filepath.Join(backup, ns)}))
		}
		return out
	}
	sec.Commands = []string{strings.Join(argvs(sp.plugin, false, "ID", "DIR")[0], " "), strings.ReplaceAll(strings.Join(argvs(sp.plugin, true, "ID", "DIR")[0], " "), "ID-0000", "NAME")}
	var explained *Series
	if sp.explain {
		explained = sec.series("explain", fmt.Sprintf("`explain` (no name, %d terminating)", sp.n))
	}
	emptying := func(s *Series, plugin []string, loop bool) contender {
		return contender{Series: s, fresh: func(ctx context.Context, id string) error {
			return b.namespaces(ctx, numbered(id, sp.n, 4), map[string]string{"batch": id}, false, sp.content)
		}, measure: func(ctx context.Context, id string) (x Sample, err error) {
			if explained != nil {
				if x, err = b.meter.run(ctx, 3, []string{b.plugin, "explain"}); err != nil {
					return x, err
				}
				explained.add(x)
				time.Sleep(settle)
			}
			if x, err = b.meter.run(ctx, 0, argvs(plugin, loop, id, filepath.Join(b.tmp, "backup", id))...); err != nil {
				return x, err
			}
			// purge exits once they are gone: one left is a wrong result.
			l, err := b.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: "batch=" + id})
			if err == nil && len(l.Items) > 0 {
				ns := l.Items[0]
				err = fmt.Errorf("%d namespaces of batch=%s still there after the commands exited, such as %s (%s, finalizers %v)", len(l.Items), id, ns.Name, ns.Status.Phase, ns.Spec.Finalizers)
			}
			return x, err
		}}
	}
	cs := []contender{emptying(sec.series("one", "`purge -l`, one run"), sp.plugin, false)}
	if b.o.compare != "" {
		cs = append(cs, emptying(sec.series("compare", "`purge -l`, the -purge-compare build"), []string{b.o.compare}, false))
	}
	cs = append(cs, emptying(sec.series("loop", fmt.Sprintf("the per-namespace loop, %d commands", sp.n)), sp.plugin, true))
	return race(ctx, sp.id, sp.runs, sp.pause, cs...)
}

// purgeMany is test/purge/many_test.go's: CRs of an uninstalled operator.
func (b *bench) purgeMany(ctx context.Context) error {
	if err := b.ensureTypes(ctx, 150); err != nil {
		return err
	}
	return b.batch(ctx, "purge-many", batchSpec{id: "pmany", n: b.scaled(20), runs: b.runs(3), pause: settle, plugin: []string{"kubectl", "ns-doctor"},
		selectors: []string{"--all-terminating"}, remove: "uninstalled.bench.ns-doctor.io/*",
		content: content{Held: 1, Of: b.kinds[2].gvr.GroupResource().String(), Finalizer: "uninstalled.bench.ns-doctor.io/cleanup", Plain: 5}})
}

// purge1000 is issue #26's: a thousand, explained then purged as scripts do.
func (b *bench) purge1000(ctx context.Context) error {
	const finalizer = "example.com/uninstalled"
	return b.batch(ctx, "purge-1000", batchSpec{id: "p1k", n: b.scaled(1000), runs: b.runs(1), types: b.size(len(b.o.sizes)).Types, pause: 5 * time.Second,
		plugin: []string{"kubectl-ns_doctor"}, remove: finalizer, explain: true, content: content{Held: 3, Finalizer: finalizer, Plain: 1}})
}

// The watch's --resync, windows in resyncs, and the quiet after a round.
const watchResync, watchResyncs, quietAfterRound = 15 * time.Second, 4, 2 * time.Second

// watch is issue #27's: memory and requests per resync as stuck ones grow.
func (b *bench) watch(ctx context.Context) (err error) {
	const diagnoses = "nsdoctor_diagnosis_duration_seconds"
	n, stuck := b.scaled(1000), []int{b.scaled(20), max(b.scaled(40), b.scaled(20)+1)}
	sec := b.section("watch", "")
	sec.Namespaces, sec.Content = n, content{Held: 1, Finalizer: "example.com/bench-gone", Plain: 50}
	// The ones that will be stuck also hold a ConfigMap nobody releases.
	names := numbered("w", n, 4)
	if err = b.namespaces(ctx, names[:stuck[1]], nil, true, sec.Content); err == nil {
		err = b.fill(ctx, sec, 0, names[stuck[1]:], true, content{Plain: sec.Content.Plain})
	}
	sec.Scope = fmt.Sprintf("%d namespaces, %d objects, up to %d stuck, %d types", n, n*sec.Content.Plain, stuck[1], sec.Types)
	if err == nil {
		err = b.strand(ctx, names[:stuck[0]])
	}
	if err != nil {
		return err
	}
	// The API server alone, before the watch starts, over the same time; the
	// ConfigMaps' grace (--grace) runs out meanwhile.
	sec.Idle = &WatchStep{Resyncs: 2}
	if sec.Idle.Sample, err = b.window(ctx, sec.Idle.Resyncs); err != nil {
		return err
	}
	w, err := b.startWatch(ctx, "--after=0s", "--resync="+watchResync.String())
	if err != nil {
		return err
	}
	defer func() { err = cmp.Or(err, w.stop()) }()
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
		// Measured from the quiet gap after a round of diagnoses, so the window
		// ends in the same gap rounds later.
		last, changed, grew := -1.0, time.Now(), false
		if err := w.poll(ctx, 200*time.Millisecond, 3*watchResync+time.Minute, func(m fams) bool {
			if n := histogram(m[diagnoses]).Count; n != last {
				grew, last, changed = last >= 0, n, time.Now()
			}
			return grew && time.Since(changed) >= quietAfterRound
		}); err != nil {
			return fmt.Errorf("waiting for a round of diagnoses to end: %w", err)
		}
		step := WatchStep{Stuck: k, Resyncs: watchResyncs}
		m0, err := w.scrape(ctx)
		cpu0, _ := procStat(w.Process.Pid)
		if err == nil {
			step.Sample, err = b.window(ctx, step.Resyncs)
		}
		cpu1, hwm := procStat(w.Process.Pid)
		m1, err2 := w.scrape(ctx)
		if err := w.failed(cmp.Or(err, err2)); err != nil {
			return err
		}
		d, per := histogram(m1[diagnoses]).minus(histogram(m0[diagnoses])), 1/float64(step.Resyncs)
		step.CPU, step.MaxRSS = per*(cpu1-cpu0), hwm
		step.Diagnoses, step.DiagSeconds, step.Errors = per*d.Count, ratio(d.Sum, d.Count), sum(m1["nsdoctor_diagnosis_errors_total"])
		sec.Steps = append(sec.Steps, step)
		logf("[watch] %d stuck: %.0f requests per resync, %.0f diagnoses, VmHWM %d KiB", k, step.Requests, step.Diagnoses, step.MaxRSS)
	}
	return nil
}

// strand deletes names; the controller empties them but for the held ConfigMap.
func (b *bench) strand(ctx context.Context, names []string) error {
	if err := b.cp.StartControllerManager(); err != nil {
		return err
	}
	defer b.cp.StopControllerManager()
	return parallel(ctx, len(names), 8, func(i int) error {
		if err := b.DeleteNamespace(ctx, names[i]); err != nil {
			return err
		}
		if _, err := b.WaitForConditions(ctx, names[i], 5*time.Minute, "NamespaceFinalizersRemaining"); err != nil {
			return err
		}
		return wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
			cms, err := b.Kube.CoreV1().ConfigMaps(names[i]).List(ctx, metav1.ListOptions{})
			return err == nil && len(cms.Items) == 1, err
		})
	})
}

// window counts the API server's requests over resyncs, per resync.
func (b *bench) window(ctx context.Context, resyncs int) (Sample, error) {
	x, err := b.meter.count(ctx, func() error {
		window, cancel := context.WithTimeout(ctx, time.Duration(resyncs)*watchResync)
		defer cancel()
		<-window.Done()
		return ctx.Err()
	})
	f := 1 / float64(resyncs) // what adds up, per resync
	x.Seconds, x.Requests, x.Lists, x.Discoveries, x.ServerCPU = f*x.Seconds, f*x.Requests, f*x.Lists, f*x.Discoveries, f*x.ServerCPU
	for k := range x.ByVerb {
		x.ByVerb[k] *= f
	}
	return x, err
}

// watchProc is a running watch: the plugin binary, so its PID is the watch's.
type watchProc struct {
	*exec.Cmd
	cancel context.CancelFunc
	addr   string // its /metrics
	stderr plugintest.LockedBuffer
}

func (b *bench) startWatch(ctx context.Context, args ...string) (*watchProc, error) {
	w := &watchProc{addr: "127.0.0.1:0"}
	if ln, err := net.Listen("tcp", w.addr); err == nil { // a port nothing listens on right now
		w.addr = ln.Addr().String()
		_ = ln.Close()
	}
	ctx, w.cancel = context.WithCancel(ctx)
	w.Cmd = exec.CommandContext(ctx, b.plugin, append(append([]string{"watch"}, args...), "--metrics-addr="+w.addr)...)
	// A clean stop is SIGTERM (exit 0); one still there 30 s later is killed.
	w.Cancel = func() error { return w.Process.Signal(syscall.SIGTERM) }
	w.WaitDelay, w.Env, w.Stderr = 30*time.Second, b.meter.env, &w.stderr
	return w, w.Start()
}

func (w *watchProc) String() string { return "kubectl-ns_doctor " + strings.Join(w.Args[1:], " ") }

// stop sends SIGTERM: the watch must exit 0.
func (w *watchProc) stop() error {
	w.cancel()
	_ = w.Wait()
	if code := w.ProcessState.ExitCode(); code != 0 {
		return w.failed(fmt.Errorf("exit %d on SIGTERM (want 0)", code))
	}
	return nil
}

func (w *watchProc) poll(ctx context.Context, every, timeout time.Duration, done func(fams) bool) error {
	return w.failed(wait.PollUntilContextTimeout(ctx, every, timeout, true, func(ctx context.Context) (bool, error) {
		m, err := w.scrape(ctx)
		return err == nil && done(m), nil
	}))
}

// failed is err, if any, with the end of its stderr.
func (w *watchProc) failed(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w; its stderr:\n%s", w, err, plugintest.Tail(w.stderr.String(), 40))
}

func (w *watchProc) scrape(ctx context.Context) (fams, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+w.addr+"/metrics", nil) // a valid URL: no error
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	return parse(resp.Body)
}

// The guard's --guard-timeout; its webhook's label in kube-apiserver's metrics.
const guardBudget, guardWebhook = 2 * time.Second, "name=guard.ns-doctor.io"

// guard is issue #35's speed: dryRun=All DELETEs (webhooks see dry runs too)
// without `watch --guard=warn` and with it; then purge's floor with it
// registered and without (it is asked about the namespace, not its content).
func (b *bench) guard(ctx context.Context) error {
	s := b.size(1)
	sec := b.section("guard", s.Name)
	sec.Size, sec.Namespace, sec.Content = s, "guard-"+s.Name, content{Objects: s.Objects, FinalizerEvery: 10, Pods: 10}
	if err := b.fill(ctx, sec, s.Types, []string{sec.Namespace}, true, sec.Content); err != nil {
		return err
	}
	dryRun := func(s *Series) contender {
		return contender{Series: s, measure: func(ctx context.Context, _ string) (Sample, error) {
			return b.meter.count(ctx, func() error { return b.deleteDryRun(ctx, sec.Namespace) })
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
	const seen, failedOpen, answers, predictions = "apiserver_admission_webhook_admission_duration_seconds", "apiserver_admission_webhook_fail_open_count", "nsdoctor_guard_admissions_total", "nsdoctor_guard_prediction_duration_seconds"
	sec.Webhook = histogram(a1[seen], guardWebhook).minus(histogram(a0[seen], guardWebhook))
	sec.Predictions = histogram(g1[predictions]).minus(histogram(g0[predictions]))
	sec.FailedOpen = sum(a1[failedOpen], guardWebhook) - sum(a0[failedOpen], guardWebhook) + sum(g1[answers], "outcome=failed_open") - sum(g0[answers], "outcome=failed_open")
	if n := len(with.Runs); sec.Webhook.Count < float64(n) {
		return fmt.Errorf("kube-apiserver asked the guard about %v of the %d DELETEs", sec.Webhook.Count, n)
	}
	return race(ctx, "guard-content", b.runs(6), settle, b.emptying(sec.series("floor", "purge's floor, without the guard"), b.meter, s.Objects, b.floorArgv, false),
		b.emptying(sec.series("floor-guard", "purge's floor, the guard registered"), b.meter, s.Objects, b.floorArgv, true))
}

func (b *bench) deleteDryRun(ctx context.Context, ns string) error {
	return b.Kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
}

// startGuard starts the guard and waits until kube-apiserver asks it about ns.
func (b *bench) startGuard(ctx context.Context, ns string) (*watchProc, error) {
	w, err := b.startWatch(ctx, "--after=24h", "--guard=warn", "--guard-addr=127.0.0.1:0", "--guard-timeout="+guardBudget.String())
	if err == nil {
		err = w.poll(ctx, 200*time.Millisecond, time.Minute, func(m fams) bool {
			_ = b.deleteDryRun(ctx, ns) // answered by a later poll, once registered
			return sum(m["nsdoctor_guard_admissions_total"]) > 0
		})
	}
	if err != nil && w.Process != nil {
		_ = w.stop()
	}
	return w, err
}

// stopGuard stops it: it must exit 0 and remove its registration.
func (b *bench) stopGuard(ctx context.Context, w *watchProc) error {
	err := w.stop()
	if _, err2 := b.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "ns-doctor-guard", metav1.GetOptions{}); err == nil && !apierrors.IsNotFound(err2) {
		err = fmt.Errorf("ns-doctor-guard still there after the guard exited (%v)", err2)
	}
	return err
}

func (b *bench) apiserverMetrics(ctx context.Context) (fams, error) {
	raw, err := b.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver's /metrics: %w", err)
	}
	return parse(bytes.NewReader(raw))
}

// rescueMark starts the line rescue writes once the API server refuses the
// namespace controller: the hold proven in force.
const rescueMark = "rescue: hold in force"

var (
	rescueInForce = regexp.MustCompile(`(?m)^rescue: hold in force after (\S+):`)
	rescueSaved   = regexp.MustCompile(`(?m)^rescue: (\d+) object\(s\) saved to `)
	rescueKept    = regexp.MustCompile(`(?m)^rescue: (\d+) volume\(s\) set to Retain`)
	// restoreApplied is restore's progress line once every object was applied.
	restoreApplied = regexp.MustCompile(`(?m)^restore: (\d+) object\(s\) restored, `)
)

// rescue is issue #41's: per run and contender a fresh terminating namespace
// (its objects, a pod on a lost node, a claim bound to a Delete volume; the
// controller stopped), held, retained and saved by `kubectl ns-doctor rescue`
// (timed to its hold in force and to its exit, then released outside the
// time), or saved only by the shell recipe users run without ns-doctor.
func (b *bench) rescue(ctx context.Context) error {
	c := content{Objects: b.scaled(1000), Pods: 1, Claims: 1}
	sec := b.section("rescue", "")
	if err := b.fill(ctx, sec, b.size(0).Types, nil, false, c); err != nil {
		return err
	}
	objects := c.Objects + c.Pods + c.Claims
	sec.Scope, sec.Content, sec.CRDs = fmt.Sprintf("%d objects, %d types", objects, sec.Types), c, b.crds()
	argv := func(ns, dir string) []string {
		return []string{"kubectl", "ns-doctor", "rescue", ns, "--yes", "--backup-dir", dir}
	}
	recipe := func(ns, file string) string {
		return "kubectl api-resources --verbs=list --namespaced -o name | xargs -n 1 kubectl get -n " + ns + " -o yaml > " + file
	}
	release := func(ns string) []string { return []string{"kubectl", "ns-doctor", "rescue", ns, "--release", "--yes"} }
	sec.Commands = []string{strings.Join(argv("NS", "DIR"), " "), recipe("NS", "FILE"), strings.Join(release("NS"), " ")}
	if err := os.MkdirAll(filepath.Join(b.tmp, "rescue"), 0o700); err != nil {
		return err
	}
	fresh := func(ctx context.Context, ns string) error { return b.namespaces(ctx, []string{ns}, nil, false, c) }
	rescued := contender{Series: sec.series("rescue", "`kubectl ns-doctor rescue NS --yes --backup-dir DIR`"), fresh: fresh,
		measure: func(ctx context.Context, ns string) (Sample, error) {
			x, stderr, err := b.meter.runMarked(ctx, 0, rescueMark, argv(ns, filepath.Join(b.tmp, "rescue", ns)))
			if err == nil {
				x.Told, err = rescueSaid(stderr, objects, c.Claims)
			}
			// The hold released, outside the time: the next fixture meets no policy.
			cmd := exec.CommandContext(ctx, release(ns)[0], release(ns)[1:]...)
			cmd.Env = b.meter.env
			if out, err2 := cmd.CombinedOutput(); err2 != nil {
				err = cmp.Or(err, fmt.Errorf("%s: %v\n%s", strings.Join(release(ns), " "), err2, out))
			}
			return x, err
		}}
	saved := contender{Series: sec.series("recipe", "shell recipe (`kubectl get -o yaml` per type), saves only"), fresh: fresh,
		measure: func(ctx context.Context, ns string) (Sample, error) {
			file := filepath.Join(b.tmp, "rescue", ns+".yaml")
			// 123: xargs says a kubectl failed; what it saved is counted.
			x, err := b.meter.run(ctx, 123, []string{"bash", "-c", recipe(ns, file)})
			if err == nil {
				err = recipeSaved(file, objects)
			}
			return x, err
		}}
	restored := b.restoreContender(sec, c, argv)
	return race(ctx, "rescue", b.runs(6), settle, rescued, saved, restored)
}

// restoreContender is issue #46's: the same namespace rescued (outside the
// time), then `rescue NS --restore --yes` timed from its start to its exit:
// the hold released, the deletion finished by purge's pass, the namespace
// Active again with every saved object applied. Its pod stops within a
// 1 s grace period (kwok's node deletes it then): a pod's own grace period
// is its application's to spend, not restore's, and the rescued
// contender's pods wait out 30 s and more.
func (b *bench) restoreContender(sec *Section, c content, rescue func(ns, dir string) []string) contender {
	c.Pods = 0
	restore := func(ns string) []string { return []string{"kubectl", "ns-doctor", "rescue", ns, "--restore", "--yes"} }
	sec.Commands = append(sec.Commands, strings.Join(restore("NS"), " "))
	fresh := func(ctx context.Context, ns string) error {
		if err := b.namespaces(ctx, []string{ns}, nil, true, c); err != nil {
			return err
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-000", Namespace: ns}, Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1), Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/none"}}}}
		if _, err := b.CreatePod(ctx, pod); err != nil {
			return fmt.Errorf("creating %s/pod-000: %w", ns, err)
		}
		return b.DeleteNamespace(ctx, ns)
	}
	objects := c.Objects + 1 + c.Claims
	return contender{Series: sec.series("restore", "`kubectl ns-doctor rescue NS --restore --yes`, from its start to the namespace Active with everything applied"), fresh: fresh,
		measure: func(ctx context.Context, ns string) (Sample, error) {
			cmd := exec.CommandContext(ctx, "kubectl", rescue(ns, filepath.Join(b.tmp, "rescue", ns))[1:]...)
			cmd.Env = b.meter.env
			if out, err := cmd.CombinedOutput(); err != nil {
				return Sample{}, fmt.Errorf("rescue before the restore: %v\n%s", err, out)
			}
			x, stderr, err := b.meter.runMarked(ctx, 0, "", restore(ns))
			if err == nil {
				err = restoredAll(ctx, b, ns, stderr, objects)
			}
			return x, err
		}}
}

// restoredAll checks the restore's work: the namespace Active, its claim
// Bound again, and restore's own count of what it applied.
func restoredAll(ctx context.Context, b *bench, ns, stderr string, objects int) error {
	got, err := b.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil || got.Status.Phase != corev1.NamespaceActive {
		return fmt.Errorf("namespace %s not Active after --restore (%v):\n%s", ns, err, plugintest.Tail(stderr, 40))
	}
	claims, err := b.Kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(claims.Items) == 0 || claims.Items[0].Spec.VolumeName == "" {
		return fmt.Errorf("the claim of %s not back on its volume (%v):\n%s", ns, err, plugintest.Tail(stderr, 40))
	}
	n := 0
	if m := restoreApplied.FindStringSubmatch(stderr); m != nil {
		n, _ = strconv.Atoi(m[1])
	}
	if n < objects {
		return fmt.Errorf("restore applied %d objects of %d:\n%s", n, objects, plugintest.Tail(stderr, 40))
	}
	return nil
}

// rescueSaid checks rescue's steps on stderr (every object saved, the
// volumes retained) and returns its own inForce.after, in seconds.
func rescueSaid(stderr string, objects, volumes int) (float64, error) {
	after, saved, kept := rescueInForce.FindStringSubmatch(stderr), rescueSaved.FindStringSubmatch(stderr), rescueKept.FindStringSubmatch(stderr)
	if after == nil || saved == nil || kept == nil {
		return 0, fmt.Errorf("rescue's stderr lacks a step line (in force, saved or retained):\n%s", plugintest.Tail(stderr, 40))
	}
	d, err := time.ParseDuration(after[1])
	if n, _ := strconv.Atoi(saved[1]); n < objects {
		err = cmp.Or(err, fmt.Errorf("rescue saved %d objects of %d:\n%s", n, objects, plugintest.Tail(stderr, 40)))
	}
	if n, _ := strconv.Atoi(kept[1]); n != volumes {
		err = cmp.Or(err, fmt.Errorf("rescue set %d volumes to Retain, not %d:\n%s", n, volumes, plugintest.Tail(stderr, 40)))
	}
	return d.Seconds(), err
}

// recipeSaved checks the recipe's file holds every object: each an item of
// a List, `- apiVersion:` at the start of a line.
func recipeSaved(file string, objects int) error {
	data, err := os.ReadFile(file)
	if n := bytes.Count(data, []byte("\n- apiVersion: ")); err == nil && n < objects {
		err = fmt.Errorf("the recipe saved %d objects of %d to %s", n, objects, file)
	}
	return err
}
