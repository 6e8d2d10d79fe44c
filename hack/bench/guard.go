package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The guard's budget (--guard-timeout) and what it registers out of the
// cluster (--guard-webhook-configuration's default); its webhook's name.
const (
	guardBudget  = 2 * time.Second
	guardConfig  = "ns-doctor-guard"
	guardWebhook = "name=guard.ns-doctor.io"
)

// guard is issue #35's speed: the deletion guard (`watch --guard=warn`,
// out of the cluster) asked by kube-apiserver about DELETEs of an Active
// namespace with dryRun=All (kube-apiserver calls webhooks with
// sideEffects None for dry runs; nothing is deleted), timed as
// kube-apiserver sees them (its webhook histogram) and as the client
// does, without the guard and with it; then the deletion of content
// (purge's floor emptying a fresh namespace) with the guard registered
// and without: kube-apiserver asks it about the namespace, never about
// what the namespace holds.
func (b *bench) guard(ctx context.Context) error {
	s := b.size(1)
	sec := b.section("guard", s.Name)
	sec.Size, sec.Namespace, sec.Content = s, "guard-"+s.Name, content{Objects: s.Objects, FinalizerEvery: 10, Pods: 10}
	err := b.fx.ensureTypes(ctx, s.Types)
	if err == nil {
		err = b.fx.namespaces(ctx, []string{sec.Namespace}, nil, true, sec.Content)
	}
	if err == nil {
		sec.Types, err = b.fx.types()
	}
	if err != nil {
		return err
	}
	dryRun := func(s *Series) contender {
		return contender{Series: s, measure: func(ctx context.Context, _ string) (Sample, error) {
			var d float64
			x, err := b.meter.count(ctx, func() error {
				defer func(t0 time.Time) { d = since(t0) }(time.Now())
				return b.deleteDryRun(ctx, sec.Namespace)
			})
			x.Seconds = d
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
	sec.Commands = []string{strings.Join(append([]string{"kubectl-ns_doctor"}, w.Args[1:]...), " ")}
	with := sec.series("with", "`DELETE` (dry run) with the guard")
	a0, err := b.apiserverMetrics(ctx)
	g0, err2 := w.scrape(ctx)
	if err = cmp.Or(err, err2); err == nil {
		err = race(ctx, "guard-with", b.runs(30), settle, dryRun(with))
	}
	a1, err2 := b.apiserverMetrics(ctx)
	g1, err3 := w.scrape(ctx)
	if err := cmp.Or(err, err2, err3, b.stopGuard(ctx, w)); err != nil {
		return err
	}
	const seen, failedOpen = "apiserver_admission_webhook_admission_duration_seconds", "apiserver_admission_webhook_fail_open_count"
	sec.Webhook, sec.Predictions = histogram(a1[seen], guardWebhook).minus(histogram(a0[seen], guardWebhook)), g1.predictions.minus(g0.predictions)
	sec.FailedOpen = sum(a1[failedOpen], guardWebhook) - sum(a0[failedOpen], guardWebhook) + g1.failedOpen - g0.failedOpen
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
		err = w.poll(ctx, 200*time.Millisecond, time.Minute, func(m watchMetrics) bool {
			if m.answers == 0 {
				_ = b.deleteDryRun(ctx, ns) // answered by the next poll
			}
			return m.answers > 0
		})
	}
	if err != nil && w.Process != nil {
		w.stop()
	}
	return w, err
}

// stopGuard stops it: it must exit 0, its registration gone.
func (b *bench) stopGuard(ctx context.Context, w *watchProc) error {
	if err := w.end(); err != nil {
		return err
	}
	_, err := b.fx.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, guardConfig, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("%s still there after the guard exited (%v)", guardConfig, err)
	}
	return nil
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

func (b *bench) apiserverMetrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	raw, err := b.fx.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver's /metrics: %w", err)
	}
	return families(bytes.NewReader(raw))
}

func families(r io.Reader) (map[string]*dto.MetricFamily, error) {
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

// Histogram is what one or more series of a Prometheus histogram
// counted: the cumulative count at each finite upper bound, in all, and
// the sum of the values.
type Histogram struct {
	Bounds, Counts []float64
	Count, Sum     float64
}

func histogram(f *dto.MetricFamily, want ...string) (h Histogram) {
	for _, m := range series(f, want...) {
		for i, bucket := range m.GetHistogram().GetBucket() {
			if i == len(h.Bounds) && !math.IsInf(bucket.GetUpperBound(), 1) {
				h.Bounds, h.Counts = append(h.Bounds, bucket.GetUpperBound()), append(h.Counts, 0)
			}
			if i < len(h.Counts) {
				h.Counts[i] += float64(bucket.GetCumulativeCount())
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
