package watch

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/util/workqueue"
)

// clientMetrics are client-go's own metrics of the work queue and of
// leader election, under the names kube-controller-manager exports
// (k8s.io/component-base's workqueue and leaderelection providers),
// without component-base's global legacy registry. client-go takes one
// provider per process, the first one given (SetProvider runs once): so
// the collectors are made once, by the first NewMetrics, and every
// Metrics registers those same collectors in its own registry (a test
// makes several).
type clientMetrics struct {
	depth, unfinished, longest, leader *prometheus.GaugeVec
	adds, retries, slowpath            *prometheus.CounterVec
	latency, work                      *prometheus.HistogramVec
}

var sharedClientMetrics = sync.OnceValue(func() *clientMetrics {
	m := newClientMetrics()
	workqueue.SetProvider(m)
	leaderelection.SetProvider(m)
	return m
})

func newClientMetrics() *clientMetrics {
	name := []string{"name"}
	// component-base's buckets: 1ns to 10s.
	buckets := prometheus.ExponentialBuckets(10e-9, 10, 10)
	return &clientMetrics{
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "depth",
			Help: "Current depth of workqueue"}, name),
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: "adds_total",
			Help: "Total number of adds handled by workqueue"}, name),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "workqueue", Name: "queue_duration_seconds",
			Help: "How long in seconds an item stays in workqueue before being requested.", Buckets: buckets}, name),
		work: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "workqueue", Name: "work_duration_seconds",
			Help: "How long in seconds processing an item from workqueue takes.", Buckets: buckets}, name),
		unfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "unfinished_work_seconds",
			Help: "How many seconds of work has done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases."}, name),
		longest: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "longest_running_processor_seconds",
			Help: "How many seconds has the longest running processor for workqueue been running."}, name),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: "retries_total",
			Help: "Total number of retries handled by workqueue"}, name),
		leader: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "leader_election_master_status",
			Help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name."}, name),
		slowpath: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "leader_election_slowpath_total",
			Help: "Total number of slow path exercised in renewing leader leases. 'name' is the string used to identify the lease. Please make sure to group by name."}, name),
	}
}

func (m *clientMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.depth, m.adds, m.latency, m.work, m.unfinished, m.longest, m.retries, m.leader, m.slowpath}
}

// The work queue's provider (workqueue.MetricsProvider).

func (m *clientMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return m.depth.WithLabelValues(name)
}

func (m *clientMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return m.adds.WithLabelValues(name)
}

func (m *clientMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return m.latency.WithLabelValues(name)
}

func (m *clientMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return m.work.WithLabelValues(name)
}

func (m *clientMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.unfinished.WithLabelValues(name)
}

func (m *clientMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.longest.WithLabelValues(name)
}

func (m *clientMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return m.retries.WithLabelValues(name)
}

// Leader election's provider (leaderelection.MetricsProvider).

func (m *clientMetrics) NewLeaderMetric() leaderelection.LeaderMetric { return leaderMetric{m} }

type leaderMetric struct{ m *clientMetrics }

func (l leaderMetric) On(name string)                { l.m.leader.WithLabelValues(name).Set(1) }
func (l leaderMetric) Off(name string)               { l.m.leader.WithLabelValues(name).Set(0) }
func (l leaderMetric) SlowpathExercised(name string) { l.m.slowpath.WithLabelValues(name).Inc() }

var (
	_ workqueue.MetricsProvider      = (*clientMetrics)(nil)
	_ leaderelection.MetricsProvider = (*clientMetrics)(nil)
)
