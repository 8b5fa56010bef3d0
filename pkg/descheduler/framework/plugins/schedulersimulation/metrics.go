package schedulersimulation

import (
	"k8s.io/component-base/metrics"
)

// Decision reasons, the `reason` label of accord_descheduler_simulation_decisions_total.
const (
	ReasonAdmitted    = "admitted"
	ReasonInfeasible  = "infeasible"
	ReasonSameNode    = "same_node"
	ReasonFlagged     = "predicted_node_flagged"
	ReasonFlapBackoff = "flap_backoff"
	ReasonError       = "error"
	// ReasonPodIntrinsic: nominated by a PodIntrinsicNominator, admitted without conditions.
	ReasonPodIntrinsic = "pod_intrinsic"
)

// Metrics are the plugin's metrics. Each plugin instance has its own; register them with the
// descheduler's registry (metrics.Metrics.Registry) with Register.
type Metrics struct {
	// Decisions counts preEvictionFilter decisions by profile, verdict (evict, blocked) and reason.
	Decisions *metrics.CounterVec
	// Duration is the wall time of one simulation.
	Duration *metrics.HistogramVec
	// Flaps counts replacements that landed back on the node their predecessor was evicted from.
	Flaps *metrics.CounterVec
	// Landings counts replacements of admitted evictions by whether they landed on the predicted
	// node (result=predicted) or elsewhere (result=elsewhere).
	Landings *metrics.CounterVec
	// BackoffsActive is the number of owner/node pairs whose evictions are backing off.
	BackoffsActive *metrics.GaugeVec
}

func newMetrics() *Metrics {
	return &Metrics{
		Decisions: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: "accord", Subsystem: "descheduler", Name: "simulation_decisions_total",
			Help:           "SchedulerSimulation preEvictionFilter decisions by profile, verdict (evict, blocked) and reason.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"profile", "verdict", "reason"}),
		Duration: metrics.NewHistogramVec(&metrics.HistogramOpts{
			Namespace: "accord", Subsystem: "descheduler", Name: "simulation_duration_seconds",
			Help:           "Duration of one scheduling simulation of an eviction candidate.",
			Buckets:        metrics.ExponentialBuckets(0.00005, 2, 16),
			StabilityLevel: metrics.ALPHA,
		}, []string{"profile"}),
		Flaps: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: "accord", Subsystem: "descheduler", Name: "flaps_total",
			Help:           "Replacement pods that landed back on the node their evicted predecessor was on, within the flap window.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"profile", "namespace"}),
		Landings: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: "accord", Subsystem: "descheduler", Name: "simulation_landings_total",
			Help:           "Replacements of admitted evictions by whether they landed on the predicted node.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"profile", "result"}),
		BackoffsActive: metrics.NewGaugeVec(&metrics.GaugeOpts{
			Namespace: "accord", Subsystem: "descheduler", Name: "flap_backoffs_active",
			Help:           "Owner/node pairs whose evictions are backing off after a flap.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"profile"}),
	}
}

// Register registers the metrics with reg.
func (m *Metrics) Register(reg metrics.KubeRegistry) error {
	for _, c := range []metrics.Registerable{m.Decisions, m.Duration, m.Flaps, m.Landings, m.BackoffsActive} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
