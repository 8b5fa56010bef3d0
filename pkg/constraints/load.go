package constraints

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
)

// MaxLoadScore is the best load score: an idle node.
const MaxLoadScore int64 = 100

// NeutralLoadScore is the load score of a node whose usage is unknown (no NodeMetric, or an expired
// one): half way, so such a node is neither preferred nor avoided.
const NeutralLoadScore int64 = MaxLoadScore / 2

// ResourceThreshold is a usage limit for one resource, in percent of the node's allocatable.
type ResourceThreshold struct {
	Name corev1.ResourceName
	// Percent is the highest usage, in percent of allocatable, that is not over the threshold.
	// Zero or less disables the threshold.
	Percent int64
}

// ResourceWeight is how much one resource counts in the load score.
type ResourceWeight struct {
	Name corev1.ResourceName
	// Weight is the resource's weight; zero or less leaves the resource out.
	Weight int64
}

// MetricFresh reports whether a NodeMetric can be trusted at now: it exists, it has an UpdateTime
// and that time is at most maxAge before now. A maxAge of zero or less means metrics never expire.
// An UpdateTime in the future (clock skew) counts as fresh.
func MetricFresh(metric *slov1alpha1.NodeMetric, now time.Time, maxAge time.Duration) bool {
	if metric == nil || metric.Status.UpdateTime == nil {
		return false
	}
	return fresh(metric.Status.UpdateTime.UnixNano(), now, maxAge)
}

// fresh is the one freshness rule: an update at updated (Unix nanoseconds) is fresh at now when
// maxAge is zero or less, or when it is at most maxAge old.
func fresh(updated int64, now time.Time, maxAge time.Duration) bool {
	return maxAge <= 0 || now.UnixNano()-updated <= int64(maxAge)
}

// LoadCheck is the outcome of CheckLoad.
type LoadCheck struct {
	// Overloaded is true when a resource's usage is over its threshold.
	Overloaded bool
	// Resource is the first resource (in the order of the thresholds) over its threshold.
	Resource corev1.ResourceName
	// UsagePercent is that resource's usage in percent of allocatable, rounded down.
	UsagePercent int64
	// ThresholdPercent is that resource's threshold.
	ThresholdPercent int64
	// Stale is true when the metric was missing or expired, so nothing was checked.
	Stale bool
}

// CheckLoad reports whether a node is over its load thresholds: for each threshold, in order, the
// node's measured usage (metric.Status.NodeUsage) is compared with the node's allocatable, and the
// node is overloaded as soon as usage is strictly above Percent percent of allocatable. A resource
// the node has no allocatable for, or the metric has no usage for, is not checked.
//
// A missing or expired metric (see MetricFresh) never makes a node overloaded: without a current
// measurement the node is given the benefit of the doubt, and the result has Stale set.
//
// It is NodeLoad.Check on the metric compiled for this node (the one definition, in
// compiledload.go); a caller that checks one metric many times keeps the NodeLoad instead.
func CheckLoad(metric *slov1alpha1.NodeMetric, allocatable corev1.ResourceList, thresholds []ResourceThreshold, now time.Time, maxAge time.Duration) LoadCheck {
	if !MetricFresh(metric, now, maxAge) {
		return LoadCheck{Stale: true}
	}
	return NewNodeLoad(NewLoad(metric), allocatable, thresholds, nil).Check(now, maxAge)
}

// LoadScore rates how lightly loaded a node would be with the pod on it, from 0 (full) to 100
// (idle). For each weighted resource the node's free share is
//
//	100 * (allocatable - usage - podRequest) / allocatable
//
// clamped to 0..100, where usage comes from the NodeMetric and podRequest from podRequests (the
// pod's computed requests; nil for none). The score is the weighted mean of the free shares, rounded
// down. Resources with a weight of zero or less, or without allocatable on the node, are left out.
//
// A missing or expired metric, or weights that leave every resource out, give NeutralLoadScore.
//
// It is NodeLoad.Score on the metric compiled for this node, with the requests aligned by
// AlignRequests.
func LoadScore(metric *slov1alpha1.NodeMetric, allocatable, podRequests corev1.ResourceList, weights []ResourceWeight, now time.Time, maxAge time.Duration) int64 {
	if !MetricFresh(metric, now, maxAge) {
		return NeutralLoadScore
	}
	return NewNodeLoad(NewLoad(metric), allocatable, nil, weights).Score(AlignRequests(podRequests, weights), now, maxAge)
}

// CheckLoadEstimated is CheckLoad on the node's estimated usage: the metric's usage adjusted by est
// for pods, the pods bound to the node (UsageEstimator). A nil est is CheckLoad. It is the check
// LowNodeLoad makes and, with the pods of the scheduler's NodeInfo, LoadAware's Filter.
func CheckLoadEstimated(metric *slov1alpha1.NodeMetric, allocatable corev1.ResourceList, thresholds []ResourceThreshold, est *UsageEstimator, pods []*corev1.Pod, now time.Time, maxAge time.Duration) LoadCheck {
	if !MetricFresh(metric, now, maxAge) {
		return LoadCheck{Stale: true}
	}
	l := NewLoad(metric)
	adj := est.Adjust(l, allocatable, len(pods), func(i int) *corev1.Pod { return pods[i] }, now)
	return NewNodeLoad(l, allocatable, thresholds, nil).CheckEstimated(&adj, now, maxAge)
}
