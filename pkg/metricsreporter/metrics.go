package metricsreporter

import (
	"net/http"

	"k8s.io/component-base/metrics"
)

// Metrics are the reporter's Prometheus metrics, in their own registry.
type Metrics struct {
	Registry metrics.KubeRegistry

	// SourceErrors counts failed readings of the source.
	SourceErrors *metrics.CounterVec
	// NodesSkipped counts node reports not written because the source had no new sample of the
	// node (the NodeMetric goes stale instead of showing zero usage).
	NodesSkipped *metrics.CounterVec
	// Writes counts NodeMetric writes by operation (create, apply-status) and result.
	Writes *metrics.CounterVec
	// RoundDuration is the wall time of one report round (all its writes included).
	RoundDuration *metrics.Histogram
	// UpdateTime is, per node, the status.updateTime of the NodeMetric this reporter last wrote
	// (Unix seconds); a deleted node's series is dropped.
	UpdateTime *metrics.GaugeVec
}

// NewMetrics returns metrics registered with a fresh registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: metrics.NewKubeRegistry(),
		SourceErrors: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: "accord", Subsystem: "metrics_reporter", Name: "source_errors_total",
			Help: "Failed readings of the usage source, by source.", StabilityLevel: metrics.ALPHA,
		}, []string{"source"}),
		NodesSkipped: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: "accord", Subsystem: "metrics_reporter", Name: "nodes_skipped_total",
			Help: "Node reports not written because the source had no new usage for the node, by source.", StabilityLevel: metrics.ALPHA,
		}, []string{"source"}),
		Writes: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: "accord", Subsystem: "metrics_reporter", Name: "writes_total",
			Help: "NodeMetric writes by operation (create, apply-status) and result (success, error).", StabilityLevel: metrics.ALPHA,
		}, []string{"operation", "result"}),
		RoundDuration: metrics.NewHistogram(&metrics.HistogramOpts{
			Namespace: "accord", Subsystem: "metrics_reporter", Name: "round_duration_seconds",
			Help: "Duration of one report round, its writes included.", Buckets: metrics.ExponentialBuckets(0.001, 2, 18),
			StabilityLevel: metrics.ALPHA,
		}),
		UpdateTime: metrics.NewGaugeVec(&metrics.GaugeOpts{
			Namespace: "accord", Subsystem: "metrics_reporter", Name: "nodemetric_update_timestamp_seconds",
			Help: "Per node, the status.updateTime (Unix seconds) of the NodeMetric this reporter last wrote; time() minus it is the NodeMetric's age.", StabilityLevel: metrics.ALPHA,
		}, []string{"node"}),
	}
	m.Registry.MustRegister(m.SourceErrors, m.NodesSkipped, m.Writes, m.RoundDuration, m.UpdateTime)
	// Every write's series starts at 0, so that an alert's rate sees the first failure.
	for _, op := range []string{"create", "apply-status"} {
		for _, result := range []string{"success", "error"} {
			m.Writes.WithLabelValues(op, result)
		}
	}
	return m
}

// Handler serves the registry.
func (m *Metrics) Handler() http.Handler {
	return metrics.HandlerFor(m.Registry, metrics.HandlerOpts{})
}
