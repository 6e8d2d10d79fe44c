package watch

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// Metrics are watch's Prometheus metrics (deploy/README.md lists them), in
// a registry of their own. The per-namespace series are collected at
// scrape time from the informer's cache and the last diagnoses, so a
// namespace that goes takes its series with it.
type Metrics struct {
	Registry *prometheus.Registry

	duration    prometheus.Histogram
	errors      prometheus.Counter
	janitor     *prometheus.CounterVec
	leader      prometheus.Gauge
	eventErrors prometheus.Counter

	mu     sync.Mutex
	lister corelisters.NamespaceLister
	state  *state
	now    func() time.Time
}

var (
	terminatingDesc = prometheus.NewDesc("nsdoctor_namespace_terminating_seconds",
		"Seconds since the namespace's deletionTimestamp, for every terminating namespace.", []string{"namespace"}, nil)
	stuckDesc = prometheus.NewDesc("nsdoctor_namespace_stuck",
		"1 when the last diagnosis of the terminating namespace says Stuck, else 0; absent before the first diagnosis.", []string{"namespace"}, nil)
	blockerDesc = prometheus.NewDesc("nsdoctor_namespace_blocker",
		"1 per blocker of a terminating namespace: its kind and what it names (subject).", []string{"namespace", "kind", "subject"}, nil)
)

// NewMetrics registers watch's metrics, the Go runtime's and the
// process's, and client-go's work queue and leader election metrics
// (clientmetrics.go), in a new registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "nsdoctor_diagnosis_duration_seconds", Help: "Time per diagnosis of a namespace.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "nsdoctor_diagnosis_errors_total", Help: "Diagnoses that failed.",
		}),
		janitor: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nsdoctor_janitor_actions_total", Help: "The janitor's purge runs, by action (dry-run, purge) and result (gone, remaining, refused, error).",
		}, []string{"action", "result"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "nsdoctor_leader", Help: "1 on the replica that leads (diagnoses and records Events).",
		}),
		eventErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "nsdoctor_event_errors_total", Help: "Events the API server refused (no permission to create events, for instance).",
		}),
	}
	m.Registry.MustRegister(m.duration, m.errors, m.janitor, m.leader, m.eventErrors, m,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.Registry.MustRegister(sharedClientMetrics().collectors()...)
	return m
}

// SetLeader exports whether this replica leads.
func (m *Metrics) SetLeader(leads bool) {
	if leads {
		m.leader.Set(1)
	} else {
		m.leader.Set(0)
	}
}

func (m *Metrics) bind(lister corelisters.NamespaceLister, s *state, now func() time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lister, m.state, m.now = lister, s, now
}

func (m *Metrics) diagnosed(d time.Duration, err error) {
	m.duration.Observe(d.Seconds())
	if err != nil {
		m.errors.Inc()
	}
}

func (m *Metrics) janitorRan(action, result string) { m.janitor.WithLabelValues(action, result).Inc() }

func (m *Metrics) eventRefused() { m.eventErrors.Inc() }

// Describe is the per-namespace collector's part of prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- terminatingDesc
	ch <- stuckDesc
	ch <- blockerDesc
}

// Collect exports the per-namespace series: every terminating namespace's
// age from the cache, the last diagnosis of each.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	lister, s, now := m.lister, m.state, m.now
	m.mu.Unlock()
	if lister == nil {
		return
	}
	namespaces, err := lister.List(labels.Everything())
	if err != nil {
		return
	}
	terminating := map[string]bool{}
	for _, ns := range namespaces {
		if ns.DeletionTimestamp == nil {
			continue
		}
		terminating[ns.Name] = true
		ch <- prometheus.MustNewConstMetric(terminatingDesc, prometheus.GaugeValue, now().Sub(ns.DeletionTimestamp.Time).Seconds(), ns.Name)
	}
	s.each(func(name string, v verdict) {
		if !terminating[name] {
			return // gone since its diagnosis: forgotten on its next turn
		}
		stuck := 0.0
		if v.stuck {
			stuck = 1
		}
		ch <- prometheus.MustNewConstMetric(stuckDesc, prometheus.GaugeValue, stuck, name)
		for _, b := range v.blockers {
			ch <- prometheus.MustNewConstMetric(blockerDesc, prometheus.GaugeValue, 1, name, b.kind, b.subject)
		}
	})
}
