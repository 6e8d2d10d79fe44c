// Package guardlatency measures the deletion guard (`kubectl-ns_doctor
// watch --guard`) on a running control plane, for `make bench`: how long
// kube-apiserver waits for the guard's answer about a namespace of 10,000
// objects in 150 types (its own histogram of the webhook,
// apiserver_admission_webhook_admission_duration_seconds, and the DELETE
// as a client sees it, with and without the guard), and whether the
// guard costs anything to the deletion of content inside namespaces,
// which it is never asked about. It is a measurement, not a test: nothing
// fails on a slow machine; Result says what was measured.
//
// The namespace is deleted with dryRun=All, so each sample predicts the
// same namespace and nothing is deleted: kube-apiserver calls validating
// webhooks with sideEffects None for dry runs, and the guard answers them
// as any other.
package guardlatency

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Options say what to measure, on which control plane.
type Options struct {
	// Config is cluster-admin of a running control plane; Kubeconfig the
	// same as a file, for the plugin.
	Config     *rest.Config
	Kubeconfig string
	// Plugin is the built kubectl-ns_doctor.
	Plugin string
	// Objects and Types make the namespace predicted: Objects spread over
	// Types namespaced resource types (built-ins plus generated CRDs).
	// Default 10,000 and 150.
	Objects, Types int
	// Samples is how many DELETEs of it are timed per contender (default 30).
	Samples int
	// Content is how many ConfigMaps are deleted one by one, with the
	// guard and without, Rounds times each, alternating (default 2,000
	// and 3).
	Content, Rounds int
	// Budget is --guard-timeout (default 2s).
	Budget time.Duration
	// Log hears progress; nil: none.
	Log io.Writer
}

// Result is what was measured.
type Result struct {
	Objects, Types, Samples int
	Budget                  time.Duration
	// APIServerP50/P99: the guard's answer as kube-apiserver timed it,
	// interpolated within its histogram's buckets (0.005, 0.025, 0.1,
	// 0.5, 1, 2.5, 10, 25 s) as histogram_quantile does.
	APIServerP50, APIServerP99 time.Duration
	// PredictionP50/P99: the guard's own histogram of its predictions
	// (nsdoctor_guard_prediction_duration_seconds), interpolated too.
	PredictionP50, PredictionP99 time.Duration
	// WithGuard and Without: the DELETE (dry run) as the client saw it,
	// exact quantiles of the samples.
	WithGuardP50, WithGuardP99, WithoutP50, WithoutP99 time.Duration
	// WithGuardMax is the slowest DELETE with the guard.
	WithGuardMax time.Duration
	// FailedOpen counts the answers past the budget (or errors); Warned
	// those that reached a prediction with blockers.
	FailedOpen, Warned int
	// Content: ConfigMaps deleted per round; ContentWith and
	// ContentWithout the mean time of a round.
	Content, Rounds             int
	ContentWith, ContentWithout time.Duration
}

const (
	group          = "guardlatency.ns-doctor.io"
	bigNamespace   = "guard-latency"
	contentNS      = "guard-latency-content"
	holdFinalizer  = "guardlatency.ns-doctor.io/hold"
	createWorkers  = 32
	deleteWorkers  = 16
	finalizerEvery = 1000
	webhookName    = "guard.ns-doctor.io"
)

func (o *Options) defaults() {
	if o.Objects == 0 {
		o.Objects = 10_000
	}
	if o.Types == 0 {
		o.Types = 150
	}
	if o.Samples == 0 {
		o.Samples = 30
	}
	if o.Content == 0 {
		o.Content = 2_000
	}
	if o.Rounds == 0 {
		o.Rounds = 3
	}
	if o.Budget == 0 {
		o.Budget = 2 * time.Second
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
}

// Measure builds the namespace (once: a second call finds it), times its
// DELETE without the guard, starts the guard out of the cluster, times it
// again with kube-apiserver's and the guard's histograms, then times the
// deletion of content with the guard registered and without.
func Measure(ctx context.Context, o Options) (Result, error) {
	o.defaults()
	r := Result{Objects: o.Objects, Types: o.Types, Samples: o.Samples, Budget: o.Budget, Content: o.Content, Rounds: o.Rounds}
	cfg := rest.CopyConfig(o.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	cfg.WarningHandler = rest.NoWarnings{} // the guard's, at every sample
	c, err := newClients(cfg)
	if err != nil {
		return r, err
	}
	_, _ = fmt.Fprintf(o.Log, "guardlatency: namespace %s, %d objects in %d types\n", bigNamespace, o.Objects, o.Types)
	if err := c.fixture(ctx, o.Objects, o.Types); err != nil {
		return r, err
	}
	without, err := c.timeDeletes(ctx, o.Samples)
	if err != nil {
		return r, err
	}
	r.WithoutP50, r.WithoutP99 = quantile(without, 0.5), quantile(without, 0.99)

	g, err := startGuard(ctx, o)
	if err != nil {
		return r, err
	}
	defer g.stop()
	if err := c.waitCalled(ctx); err != nil {
		return r, err
	}
	before, err := c.apiserverHistogram(ctx)
	if err != nil {
		return r, err
	}
	guardBefore, err := g.histogram()
	if err != nil {
		return r, err
	}
	_, _ = fmt.Fprintf(o.Log, "guardlatency: %d DELETEs (dry run) with the guard\n", o.Samples)
	with, err := c.timeDeletes(ctx, o.Samples)
	if err != nil {
		return r, err
	}
	r.WithGuardP50, r.WithGuardP99, r.WithGuardMax = quantile(with, 0.5), quantile(with, 0.99), quantile(with, 1)
	after, err := c.apiserverHistogram(ctx)
	if err != nil {
		return r, err
	}
	guardAfter, err := g.histogram()
	if err != nil {
		return r, err
	}
	seen := after.minus(before)
	r.APIServerP50, r.APIServerP99 = seen.quantile(0.5), seen.quantile(0.99)
	predicted := guardAfter.minus(guardBefore)
	r.PredictionP50, r.PredictionP99 = predicted.quantile(0.5), predicted.quantile(0.99)
	if r.FailedOpen, r.Warned, err = g.outcomes(); err != nil {
		return r, err
	}

	g.stop()
	_, _ = fmt.Fprintf(o.Log, "guardlatency: deleting %d ConfigMaps, %d rounds with the guard and without, alternating\n", o.Content, o.Rounds)
	var withSum, withoutSum time.Duration
	for range o.Rounds {
		d, err := c.deleteContent(ctx, o.Content)
		if err != nil {
			return r, err
		}
		withoutSum += d
		if d, err = c.deleteContentGuarded(ctx, o); err != nil {
			return r, err
		}
		withSum += d
	}
	r.ContentWith, r.ContentWithout = withSum/time.Duration(o.Rounds), withoutSum/time.Duration(o.Rounds)
	return r, nil
}

type clients struct {
	kube  kubernetes.Interface
	dyn   dynamic.Interface
	disco discovery.DiscoveryInterface
}

func newClients(cfg *rest.Config) (*clients, error) {
	k, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &clients{kube: k, dyn: d, disco: disco}, nil
}

// fixture makes CRDs until discovery serves types namespaced listable
// types, then the namespace with objects round-robin over ConfigMaps and
// the CRDs, every 1000th held by a finalizer nobody removes (so the
// prediction reads owners and holders too).
func (c *clients) fixture(ctx context.Context, objects, types int) error {
	if _, err := c.kube.CoreV1().Namespaces().Get(ctx, bigNamespace, metav1.GetOptions{}); err == nil {
		return nil
	}
	crds, err := c.ensureTypes(ctx, types)
	if err != nil {
		return err
	}
	if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bigNamespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	slots := len(crds) + 1
	return parallel(ctx, objects, createWorkers, func(i int) error {
		name := fmt.Sprintf("obj-%06d", i)
		var fin []string
		if i%finalizerEvery == 0 {
			fin = []string{holdFinalizer}
		}
		slot := i % slots
		if slot == 0 {
			_, err := c.kube.CoreV1().ConfigMaps(bigNamespace).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: fin}}, metav1.CreateOptions{})
			return err
		}
		gvr := crds[slot-1]
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gvr.GroupVersion().String(), "kind": kindOf(gvr),
			"metadata": map[string]any{"name": name, "namespace": bigNamespace},
		}}
		obj.SetFinalizers(fin)
		_, err := c.dyn.Resource(gvr).Namespace(bigNamespace).Create(ctx, obj, metav1.CreateOptions{})
		return err
	})
}

func kindOf(gvr schema.GroupVersionResource) string {
	return "Gl" + strings.TrimSuffix(strings.TrimPrefix(gvr.Resource, "gl"), "s")
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// ensureTypes makes CRDs gl000s... until discovery serves want types.
func (c *clients) ensureTypes(ctx context.Context, want int) ([]schema.GroupVersionResource, error) {
	lists, err := discovery.ServerPreferredNamespacedResources(c.disco)
	if err != nil {
		return nil, err
	}
	have := 0
	for _, rl := range discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list"}}, lists) {
		have += len(rl.APIResources)
	}
	crds := make([]schema.GroupVersionResource, max(want-have, 0))
	err = parallel(ctx, len(crds), 8, func(i int) error {
		plural := fmt.Sprintf("gl%03ds", i)
		gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}
		crds[i] = gvr
		crd := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": plural + "." + group},
			"spec": map[string]any{
				"group": group, "scope": "Namespaced",
				"names": map[string]any{"kind": kindOf(gvr), "plural": plural, "singular": strings.TrimSuffix(plural, "s"), "listKind": kindOf(gvr) + "List"},
				"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
			},
		}}
		if _, err := c.dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			return err
		}
		return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := c.dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
			return err == nil, nil
		})
	})
	return crds, err
}

// timeDeletes times n DELETEs (dry run) of the big namespace, one after
// another.
func (c *clients) timeDeletes(ctx context.Context, n int) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for range n {
		started := time.Now()
		err := c.kube.CoreV1().Namespaces().Delete(ctx, bigNamespace, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return nil, fmt.Errorf("DELETE (dry run) of %s: %w", bigNamespace, err)
		}
		out = append(out, time.Since(started))
	}
	return out, nil
}

// waitCalled waits until kube-apiserver asks the guard (its configuration
// reaches kube-apiserver's informer a moment after it is written).
func (c *clients) waitCalled(ctx context.Context) error {
	start, err := c.apiserverHistogram(ctx)
	if err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.kube.CoreV1().Namespaces().Delete(ctx, bigNamespace, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			return false, err
		}
		h, err := c.apiserverHistogram(ctx)
		return err == nil && h.count > start.count, err
	})
}

// deleteContentGuarded is deleteContent with a guard registered.
func (c *clients) deleteContentGuarded(ctx context.Context, o Options) (time.Duration, error) {
	g, err := startGuard(ctx, o)
	if err != nil {
		return 0, err
	}
	defer g.stop()
	if err := c.waitCalled(ctx); err != nil {
		return 0, err
	}
	return c.deleteContent(ctx, o.Content)
}

// deleteContent creates n ConfigMaps and times their DELETEs,
// deleteWorkers at a time.
func (c *clients) deleteContent(ctx context.Context, n int) (time.Duration, error) {
	if _, err := c.kube.CoreV1().Namespaces().Get(ctx, contentNS, metav1.GetOptions{}); err != nil {
		if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: contentNS}}, metav1.CreateOptions{}); err != nil {
			return 0, err
		}
	}
	err := parallel(ctx, n, createWorkers, func(i int) error {
		_, err := c.kube.CoreV1().ConfigMaps(contentNS).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%05d", i)}}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return 0, err
	}
	started := time.Now()
	err = parallel(ctx, n, deleteWorkers, func(i int) error {
		return c.kube.CoreV1().ConfigMaps(contentNS).Delete(ctx, fmt.Sprintf("cm-%05d", i), metav1.DeleteOptions{})
	})
	return time.Since(started), err
}

// histogram is a cumulative histogram read from a /metrics text: the
// bucket bounds and their counts, summed over every series selected.
type histogram struct {
	bounds []float64
	counts []float64
	count  float64
}

func (h histogram) minus(o histogram) histogram {
	out := histogram{bounds: h.bounds, counts: make([]float64, len(h.counts)), count: h.count - o.count}
	for i := range h.counts {
		out.counts[i] = h.counts[i]
		if i < len(o.counts) {
			out.counts[i] -= o.counts[i]
		}
	}
	return out
}

// quantile interpolates linearly within the bucket the rank falls in, as
// Prometheus's histogram_quantile does.
func (h histogram) quantile(q float64) time.Duration {
	if h.count <= 0 || len(h.bounds) == 0 {
		return 0
	}
	rank := q * h.count
	lower, below := 0.0, 0.0
	for i, upper := range h.bounds {
		if h.counts[i] >= rank {
			if math.IsInf(upper, 1) {
				return time.Duration(lower * float64(time.Second))
			}
			in := h.counts[i] - below
			frac := 1.0
			if in > 0 {
				frac = (rank - below) / in
			}
			return time.Duration((lower + (upper-lower)*frac) * float64(time.Second))
		}
		lower, below = upper, h.counts[i]
	}
	return time.Duration(lower * float64(time.Second))
}

var bucketLine = regexp.MustCompile(`^(\w+)_bucket\{(.*)\} (\S+)$`)
var leLabel = regexp.MustCompile(`le="([^"]+)"`)

// parseHistogram reads metric's buckets from a /metrics text, summing the
// series whose labels hold every selector.
func parseHistogram(body, metric string, selectors ...string) histogram {
	byBound := map[float64]float64{}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<24)
	for sc.Scan() {
		m := bucketLine.FindStringSubmatch(sc.Text())
		if m == nil || m[1] != metric {
			continue
		}
		keep := true
		for _, s := range selectors {
			keep = keep && strings.Contains(m[2], s)
		}
		le := leLabel.FindStringSubmatch(m[2])
		if !keep || le == nil {
			continue
		}
		bound, err1 := strconv.ParseFloat(le[1], 64)
		v, err2 := strconv.ParseFloat(m[3], 64)
		if err1 == nil && err2 == nil {
			byBound[bound] += v
		}
	}
	var h histogram
	for b := range byBound {
		h.bounds = append(h.bounds, b)
	}
	sort.Float64s(h.bounds)
	for _, b := range h.bounds {
		h.counts = append(h.counts, byBound[b])
	}
	if n := len(h.counts); n > 0 {
		h.count = h.counts[n-1]
	}
	return h
}

func (c *clients) apiserverHistogram(ctx context.Context) (histogram, error) {
	body, err := c.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return histogram{}, fmt.Errorf("kube-apiserver's /metrics: %w", err)
	}
	return parseHistogram(string(body), "apiserver_admission_webhook_admission_duration_seconds", `name="`+webhookName+`"`, `operation="DELETE"`), nil
}

// guardProc is the plugin's watch with the guard, out of the cluster.
type guardProc struct {
	cmd     *exec.Cmd
	metrics string
	done    chan struct{}
	once    sync.Once
}

var startLine = regexp.MustCompile(`metrics on (http://[^/\s]+)/metrics; guard`)

func startGuard(ctx context.Context, o Options) (*guardProc, error) {
	cmd := exec.CommandContext(ctx, o.Plugin, "watch", "--guard=warn", "--guard-addr=127.0.0.1:0", "--metrics-addr=127.0.0.1:0",
		"--after=1h", "--guard-timeout="+o.Budget.String(), "--guard-webhook-configuration=ns-doctor-guard-latency")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+o.Kubeconfig, "NO_COLOR=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the guard: %w", err)
	}
	g := &guardProc{cmd: cmd, done: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := startLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		_ = cmd.Wait()
		close(g.done)
	}()
	select {
	case g.metrics = <-found:
		return g, nil
	case <-g.done:
		return nil, errors.New("the guard exited before serving")
	case <-time.After(time.Minute):
		g.stop()
		return nil, errors.New("the guard did not start within a minute")
	}
}

// stop ends it with SIGTERM: it removes its registration.
func (g *guardProc) stop() {
	g.once.Do(func() {
		_ = g.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-g.done:
		case <-time.After(30 * time.Second):
			_ = g.cmd.Process.Kill()
			<-g.done
		}
	})
}

func (g *guardProc) scrape() (string, error) {
	resp, err := http.Get(g.metrics + "/metrics")
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

func (g *guardProc) histogram() (histogram, error) {
	body, err := g.scrape()
	return parseHistogram(body, "nsdoctor_guard_prediction_duration_seconds"), err
}

// outcomes are the guard's failed_open and warned counts.
func (g *guardProc) outcomes() (failedOpen, warned int, err error) {
	body, err := g.scrape()
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, "nsdoctor_guard_admissions_total{") {
			continue
		}
		v, _ := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		switch {
		case strings.Contains(line, `outcome="failed_open"`):
			failedOpen += int(v)
		case strings.Contains(line, `outcome="warned"`):
			warned += int(v)
		}
	}
	return failedOpen, warned, nil
}

// quantile is the q-quantile of samples (nearest rank).
func quantile(samples []time.Duration, q float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), samples...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// parallel runs fn(0..n-1) on workers goroutines and returns the first
// error, after which the remaining items are skipped.
func parallel(ctx context.Context, n, workers int, fn func(i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, max(n, 1)) {
		wg.Go(func() {
			for i := range next {
				if err := fn(i); err != nil {
					cancel(err)
				}
			}
		})
	}
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}

// Markdown is the result as docs/benchmarks.md's tables put it.
func (r Result) Markdown() string {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
	var b strings.Builder
	fmt.Fprintf(&b, "Deletion guard (warn, --guard-timeout=%s): a namespace of %d objects in %d types, %d DELETEs (dry run) each\n\n", r.Budget, r.Objects, r.Types, r.Samples)
	b.WriteString("| measured | p50 | p99 |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| kube-apiserver's wait for the guard (apiserver_admission_webhook_admission_duration_seconds, interpolated in its buckets) | %s | %s |\n", ms(r.APIServerP50), ms(r.APIServerP99))
	fmt.Fprintf(&b, "| the guard's prediction (nsdoctor_guard_prediction_duration_seconds, interpolated) | %s | %s |\n", ms(r.PredictionP50), ms(r.PredictionP99))
	fmt.Fprintf(&b, "| DELETE of the namespace as the client sees it, with the guard (slowest: %s) | %s | %s |\n", ms(r.WithGuardMax), ms(r.WithGuardP50), ms(r.WithGuardP99))
	fmt.Fprintf(&b, "| the same without the guard | %s | %s |\n", ms(r.WithoutP50), ms(r.WithoutP99))
	b.WriteString("\nThe histograms' quantiles are interpolated within their buckets (kube-apiserver's: 0.1, 0.5, 1, 2.5 s around these values), so they can overstate the exact ones of the client's samples.\n")
	fmt.Fprintf(&b, "\nFailed open: %d of %d answers (warned: %d). Deleting %d ConfigMaps (%d at a time), mean of %d rounds: %s with the guard registered, %s without.\n",
		r.FailedOpen, r.Samples, r.Warned, r.Content, deleteWorkers, r.Rounds, ms(r.ContentWith), ms(r.ContentWithout))
	return b.String()
}
