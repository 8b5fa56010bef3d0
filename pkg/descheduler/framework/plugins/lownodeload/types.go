package lownodeload

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/pkg/constraints"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
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
	// UsageEstimateArgs are the args the scheduler's LoadAware shares, with its meaning and
	// defaults (constraints.UsageEstimateArgs): resourceWeights weigh the resources when ordering
	// hot nodes, cool nodes and pods by usage (any non-negative weight); a NodeMetric older than
	// nodeMetricExpirationSeconds is ignored (the node is neither hot nor cool; 0 means metrics
	// never expire); a node's usage is its NodeMetric's plus an estimate
	// (estimatedScalingFactors, estimatedSecondsAfterPodScheduled) for each pod assigned since
	// the report, minus the reported usage of the pods that have left it (evicted, deleted); {}
	// factors turn the estimate off. With --scheduler-config-file they follow LoadAware's
	// (constraints.UsageFollowing): left out, they are LoadAware's, and another value is rejected
	// (resourceWeights excepted: they only order).
	constraints.UsageEstimateArgs `json:",inline"`
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

// FollowsScheduler implements framework.SchedulerFollower: the thresholds and the shared args
// follow the scheduler's LoadAware.
func (a *LowNodeLoadArgs) FollowsScheduler() []string {
	return []string{constraints.UsageFollowing.Scheduler}
}

// FollowScheduler implements framework.SchedulerFollower, as constraints.UsageFollowing declares:
// highThresholds is LoadAware's usageThresholds (not with useDeviationThresholds; lowThresholds,
// left out with it, are the defaults capped at it), and the shared args are LoadAware's
// (resourceWeights may differ).
func (a *LowNodeLoadArgs) FollowScheduler(f *framework.Follow) field.ErrorList {
	return framework.FollowShared(f, a, constraints.UsageFollowing, nil)
}
