// Package rejections counts the nodes accord-scheduler's plugins reject in Filter, by plugin and
// reason, in kube-scheduler's registry (its /metrics): accord_scheduler_filter_rejections_total.
// The reason is one of a fixed set (Reason), never the Filter message (which names resources), so
// the series are bounded by plugins × reasons.
package rejections

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Reason is the `reason` label of accord_scheduler_filter_rejections_total.
type Reason string

// The reasons the plugins reject a node for.
const (
	// NoClusterScopedResource: NodeCRDResourceFit, a node without a ClusterScopedResource
	// (missingCRPolicy Reject).
	NoClusterScopedResource Reason = "no_cluster_scoped_resource"
	// ResourceNotEnabled: NodeCRDResourceFit, the node's ClusterScopedResource does not enable a
	// resource the pod requests.
	ResourceNotEnabled Reason = "resource_not_enabled"
	// OverThreshold: LoadAware, the node's estimated usage is over a resource's threshold.
	OverThreshold Reason = "over_threshold"
	// HeldByReservation: Reservation, the room the pod needs is held by reservations it does not
	// consume.
	HeldByReservation Reason = "held_by_reservation"
)

var rejections = metrics.NewCounterVec(&metrics.CounterOpts{
	Namespace: "accord", Subsystem: "scheduler", Name: "filter_rejections_total",
	Help: "Nodes rejected by an Accord scheduler plugin's Filter (one per pod and node), by plugin and reason (no_cluster_scoped_resource, " +
		"resource_not_enabled, over_threshold, held_by_reservation).",
	StabilityLevel: metrics.ALPHA,
}, []string{"plugin", "reason"})

var registerOnce sync.Once

// Counter registers the counter with kube-scheduler's registry (once) and returns the series of
// plugin and reason, created at 0 so that a rate sees the first rejection. A plugin keeps the
// series it increments: Inc on it is an atomic add, nothing allocated per Filter call.
func Counter(plugin string, reason Reason) metrics.CounterMetric {
	registerOnce.Do(func() { legacyregistry.MustRegister(rejections) })
	return rejections.WithLabelValues(plugin, string(reason))
}
