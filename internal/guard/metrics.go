package guard

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the guard's, on the watch's registry (deploy/README.md
// lists them).
type Metrics struct {
	admissions *prometheus.CounterVec
	latency    *prometheus.HistogramVec
}

// NewMetrics registers the guard's metrics in reg, every series of mode
// at 0, so that a rate of failures has its denominator from the start.
func NewMetrics(reg prometheus.Registerer, mode Mode) *Metrics {
	m := &Metrics{
		admissions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nsdoctor_guard_admissions_total",
			Help: "DELETE requests the guard answered, by mode, resource (namespaces, customresourcedefinitions) and outcome (allowed: nothing predicted; warned; denied; failed_open: no prediction within --guard-timeout, or an error).",
		}, []string{"mode", "resource", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "nsdoctor_guard_prediction_duration_seconds",
			Help:    "Time per prediction of a deletion, cut short at --guard-timeout, by what it read with (informers: the content from the guard's informers, the rest kept ready; live: read afresh, before they are warm, after a change to webhooks, CRDs, APIServices, RBAC or workloads, or without permission to watch).",
			Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10},
		}, []string{"reads"}),
	}
	reg.MustRegister(m.admissions, m.latency)
	for _, r := range []ReadsFrom{ReadsInformers, ReadsLive} {
		m.latency.WithLabelValues(string(r))
	}
	for _, resource := range Targets() {
		for _, o := range Outcomes() {
			m.admissions.WithLabelValues(string(mode), resource, string(o))
		}
	}
	return m
}

func (m *Metrics) admitted(v Verdict) {
	m.admissions.WithLabelValues(string(v.Mode), Targets()[v.Target], string(v.Outcome)).Inc()
}

func (m *Metrics) predicted(d time.Duration, r ReadsFrom) {
	m.latency.WithLabelValues(string(r)).Observe(d.Seconds())
}

// ReadsFrom is what a prediction read with.
type ReadsFrom string

// What a prediction reads with.
const (
	ReadsInformers ReadsFrom = "informers"
	ReadsLive      ReadsFrom = "live"
)
