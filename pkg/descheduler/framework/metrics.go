package framework

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// MetricsProviders are the sources of real utilization the policy configures (its metricsProviders,
// and the deprecated metricsCollector). A plugin asks for the source it needs in its factory; the
// asking is what makes the runtime run it (a source nobody asks for is never polled). An error means
// the policy does not configure that source.
type MetricsProviders interface {
	// KubernetesMetrics returns the metrics.k8s.io source.
	KubernetesMetrics() (KubernetesMetrics, error)
	// Prometheus returns the Prometheus source.
	Prometheus() (PrometheusMetrics, error)
}

// KubernetesMetrics is node and pod usage from metrics.k8s.io (metrics-server).
type KubernetesMetrics interface {
	// NodeUsage returns a node's cpu and memory usage in milli-units, smoothed over the recent polls
	// (see pkg/metricsource.NodeCollector), or an error saying why there is none (the source is
	// down, or has not reported the node): never zeros in place of data.
	NodeUsage(node string) (map[corev1.ResourceName]int64, error)
	// PodUsage returns a pod's current cpu and memory usage in milli-units, read from the source.
	PodUsage(ctx context.Context, pod *corev1.Pod) (map[corev1.ResourceName]int64, error)
}

// PrometheusMetrics runs PromQL against the configured Prometheus server.
type PrometheusMetrics interface {
	// NodeFractions runs an instant query whose samples name nodes by their `instance` label and
	// carry a value in [0, 1], and returns the values by node name.
	NodeFractions(ctx context.Context, query string) (map[string]float64, error)
}
