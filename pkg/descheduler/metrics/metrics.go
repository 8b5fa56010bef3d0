// Package metrics holds the descheduler's Prometheus metrics. Each Metrics value has its own
// registry, so several descheduler instances (tests, the playground) never share counters.
package metrics

import (
	"net/http"

	"k8s.io/component-base/metrics"
)

// Results of an eviction attempt, the `result` label of accord_descheduler_pods_evicted_total.
const (
	ResultSuccess = "success"
	ResultError   = "error"
	ResultDryRun  = "dry-run"
	// ResultSoft: the pod was annotated soft-evicted (evictionMode Soft) for its controller to move.
	ResultSoft = "soft"
	// ResultBackground: the eviction was answered "in progress" (EvictionsInBackground).
	ResultBackground = "background"
)

// SkipCachesNotSynced is the `reason` label of accord_descheduler_cycles_skipped_total for a cycle
// skipped because the informer caches had not re-synced after a broken watch.
const SkipCachesNotSynced = "caches_not_synced"

// Reasons of accord_descheduler_evictions_held_total: what kept a nominated pod.
const (
	HeldWorkloadBudget = "workload_budget"
	HeldWindowClosed   = "window_closed"
)

// Metrics are the descheduler's metrics and the registry they are registered with.
type Metrics struct {
	Registry metrics.KubeRegistry

	// PodsEvicted counts eviction attempts by result, plugin, profile, namespace and node.
	PodsEvicted *metrics.CounterVec
	// CycleDuration is the wall time of a whole descheduling cycle.
	CycleDuration *metrics.Histogram
	// PluginDuration is the wall time of one plugin call at one extension point.
	PluginDuration *metrics.HistogramVec
	// PluginFailures counts failed plugin calls (an error status or a panic).
	PluginFailures *metrics.CounterVec
	// Cycles counts completed descheduling cycles.
	Cycles *metrics.Counter
	// CyclesSkipped counts the cycles skipped, by reason.
	CyclesSkipped *metrics.CounterVec
	// CapSkippedPluginCalls counts the Deschedule and Balance calls a cycle did not make because the
	// cycle's total eviction cap was already reached (nothing they found could have been evicted).
	CapSkippedPluginCalls *metrics.CounterVec
	// EvictionsHeld counts nominated pods not evicted because of a workload budget or a closed
	// eviction window, by reason and profile.
	EvictionsHeld *metrics.CounterVec
	// EvictionsInProgress is the evictions in progress by kind (soft, background), set each cycle.
	EvictionsInProgress *metrics.GaugeVec
	// WindowOpen is 1 while a profile's eviction window is open, 0 while closed (profiles with
	// eviction windows only).
	WindowOpen *metrics.GaugeVec
	// CachesStale is 1 while the last check found caches that have not re-synced, else 0.
	CachesStale *metrics.Gauge
}

// New returns metrics registered with a fresh registry.
func New() *Metrics {
	m := &Metrics{
		Registry: NewSharedRegistry(metrics.NewKubeRegistry()),
		PodsEvicted: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace:      "accord",
			Subsystem:      "descheduler",
			Name:           "pods_evicted_total",
			Help:           "Eviction attempts by result (success, error, dry-run), plugin, profile, namespace and node.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"result", "plugin", "profile", "namespace", "node"}),
		CycleDuration: metrics.NewHistogram(&metrics.HistogramOpts{
			Namespace:      "accord",
			Subsystem:      "descheduler",
			Name:           "cycle_duration_seconds",
			Help:           "Duration of a descheduling cycle (every profile's Deschedule, then every profile's Balance).",
			Buckets:        metrics.ExponentialBuckets(0.001, 2, 18),
			StabilityLevel: metrics.ALPHA,
		}),
		PluginDuration: metrics.NewHistogramVec(&metrics.HistogramOpts{
			Namespace:      "accord",
			Subsystem:      "descheduler",
			Name:           "plugin_duration_seconds",
			Help:           "Duration of one plugin call at an extension point.",
			Buckets:        metrics.ExponentialBuckets(0.0001, 2, 20),
			StabilityLevel: metrics.ALPHA,
		}, []string{"plugin", "profile", "extension_point", "status"}),
		PluginFailures: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace:      "accord",
			Subsystem:      "descheduler",
			Name:           "plugin_failures_total",
			Help:           "Plugin calls that returned an error status or panicked.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"plugin", "profile", "extension_point"}),
		Cycles: metrics.NewCounter(&metrics.CounterOpts{
			Namespace:      "accord",
			Subsystem:      "descheduler",
			Name:           "cycles_total",
			Help:           "Completed descheduling cycles.",
			StabilityLevel: metrics.ALPHA,
		}),
		CyclesSkipped: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace:      "accord",
			Subsystem:      "descheduler",
			Name:           "cycles_skipped_total",
			Help:           "Descheduling cycles skipped, by reason (caches_not_synced: a watch broke and the informers have not re-synced).",
			StabilityLevel: metrics.ALPHA,
		}, []string{"reason"}),
		CapSkippedPluginCalls: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace:      "accord",
			Subsystem:      "descheduler",
			Name:           "cap_skipped_plugin_calls_total",
			Help:           "Deschedule and Balance plugin calls a cycle did not make because its total eviction cap (maxNoOfPodsToEvictTotal) was already reached.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"plugin", "profile", "extension_point"}),
		CachesStale: metrics.NewGauge(&metrics.GaugeOpts{
			Namespace:      "accord",
			Subsystem:      "descheduler",
			Name:           "caches_stale",
			Help:           "1 while the descheduler's informer caches have not re-synced after a broken watch (no cycle runs, no eviction is made), else 0.",
			StabilityLevel: metrics.ALPHA,
		}),
		EvictionsHeld: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace:      "accord",
			Subsystem:      "descheduler",
			Name:           "evictions_held_total",
			Help:           "Nominated pods not evicted, by reason (workload_budget: the workload's maxMigratingPerWorkload/maxUnavailablePerWorkload; window_closed: outside the profile's eviction windows) and profile.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"reason", "profile"}),
		EvictionsInProgress: metrics.NewGaugeVec(&metrics.GaugeOpts{
			Namespace:      "accord",
			Subsystem:      "descheduler",
			Name:           "evictions_in_progress",
			Help:           "Evictions in progress at the end of the last cycle, by kind (soft: pods annotated descheduler.accord.dev/soft-eviction; background: EvictionsInBackground); each counts against the caps and its workload budget until its pod is gone.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"kind"}),
		WindowOpen: metrics.NewGaugeVec(&metrics.GaugeOpts{
			Namespace:      "accord",
			Subsystem:      "descheduler",
			Name:           "eviction_window_open",
			Help:           "1 while the profile's eviction window is open, 0 while it is closed (profiles with evictionWindows only).",
			StabilityLevel: metrics.ALPHA,
		}, []string{"profile"}),
	}
	m.Registry.MustRegister(m.PodsEvicted, m.CycleDuration, m.PluginDuration, m.PluginFailures, m.Cycles, m.CyclesSkipped, m.CapSkippedPluginCalls, m.CachesStale, m.EvictionsHeld, m.EvictionsInProgress, m.WindowOpen)
	// Known label values start at 0, so that the first skip is an increase (alert rules read it).
	m.CyclesSkipped.WithLabelValues(SkipCachesNotSynced)
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return metrics.HandlerFor(m.Registry, metrics.HandlerOpts{})
}
