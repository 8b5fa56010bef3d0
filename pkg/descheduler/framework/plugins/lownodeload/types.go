package lownodeload

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// LowNodeLoadArgs configures the LowNodeLoad plugin.
type LowNodeLoadArgs struct {
	metav1.TypeMeta `json:",inline"`

	// HighThresholds is, per resource, the measured usage in percent of allocatable above which a
	// node is hot. It has the type and meaning of the scheduler LoadAware plugin's usageThresholds:
	// with --scheduler-config-file it defaults to it, and another value is rejected. With
	// UseDeviationThresholds it is the distance above the mean instead.
	HighThresholds map[corev1.ResourceName]int64 `json:"highThresholds,omitempty"`
	// LowThresholds is, per resource, the usage in percent of allocatable at or below which a node is
	// cool (a destination); a node must be under it for every resource. With UseDeviationThresholds it
	// is the distance below the mean.
	LowThresholds map[corev1.ResourceName]int64 `json:"lowThresholds,omitempty"`
	// UseDeviationThresholds makes both thresholds relative to the mean usage of the nodes with fresh
	// metrics.
	UseDeviationThresholds bool `json:"useDeviationThresholds,omitempty"`
	// NumberOfNodes: the plugin acts only when more than this many nodes are cool.
	NumberOfNodes int32 `json:"numberOfNodes,omitempty"`
	// ResourceWeights weigh the resources when ordering hot nodes, cool nodes and pods by usage.
	ResourceWeights map[corev1.ResourceName]int64 `json:"resourceWeights,omitempty"`
	// NodeMetricExpirationSeconds: a NodeMetric older than this is ignored (the node is neither hot
	// nor cool), as LoadAware does; 0 means metrics never expire.
	NodeMetricExpirationSeconds *int64 `json:"nodeMetricExpirationSeconds,omitempty"`
	// EstimatedScalingFactors and EstimatedSecondsAfterPodScheduled are the usage estimate's args,
	// with the type, meaning and defaults of the scheduler LoadAware plugin's (apis/config): a
	// node's usage is its NodeMetric's plus an estimate for each pod assigned since the
	// report, minus the reported usage of the pods that have left it (evicted, deleted). With
	// --scheduler-config-file they default to LoadAware's, and another value is rejected. {} turns
	// the estimate off.
	EstimatedScalingFactors           map[corev1.ResourceName]int64 `json:"estimatedScalingFactors,omitempty"`
	EstimatedSecondsAfterPodScheduled *int64                        `json:"estimatedSecondsAfterPodScheduled,omitempty"`
	// ConsecutiveAbnormalities is how many cycles in a row a node must be hot before it is drained,
	// so that a spike is no reason to evict. After a drain the count starts again.
	ConsecutiveAbnormalities int32 `json:"consecutiveAbnormalities,omitempty"`
	// EvictableNamespaces limits the pods that may be evicted to some namespaces (include) or keeps
	// some namespaces out (exclude).
	EvictableNamespaces *pluginutil.Namespaces `json:"evictableNamespaces,omitempty"`
	// PodSelectors, when set, limit the pods that may be evicted to those one of them matches.
	PodSelectors []PodSelector `json:"podSelectors,omitempty"`
}

// PodSelector is a named label selector.
type PodSelector struct {
	Name     string                `json:"name,omitempty"`
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}
