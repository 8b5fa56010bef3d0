package lownodeutilization

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// LowNodeUtilizationArgs are the upstream plugin's args.
type LowNodeUtilizationArgs struct {
	metav1.TypeMeta `json:",inline"`

	// UseDeviationThresholds makes thresholds and targetThresholds distances below and above the
	// mean utilization.
	UseDeviationThresholds bool `json:"useDeviationThresholds,omitempty"`
	// Thresholds: a node under all of them is underutilized (a destination).
	Thresholds pluginutil.ResourceThresholds `json:"thresholds,omitempty"`
	// TargetThresholds: a node over any of them is overutilized (a source).
	TargetThresholds pluginutil.ResourceThresholds `json:"targetThresholds,omitempty"`
	// NumberOfNodes: act only when more than this many nodes are underutilized.
	NumberOfNodes int `json:"numberOfNodes,omitempty"`
	// EvictableNamespaces limits the pods that may be evicted.
	EvictableNamespaces *pluginutil.Namespaces `json:"evictableNamespaces,omitempty"`
	// EvictionLimits bound the plugin's evictions per node and cycle.
	EvictionLimits *pluginutil.EvictionLimits `json:"evictionLimits,omitempty"`
	// MetricsUtilization makes the plugin judge nodes by measured usage instead of requests (see
	// metrics.go).
	MetricsUtilization *MetricsUtilization `json:"metricsUtilization,omitempty"`
}
