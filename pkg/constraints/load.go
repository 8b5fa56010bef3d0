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
	if maxAge <= 0 {
		return true
	}
	return now.Sub(metric.Status.UpdateTime.Time) <= maxAge
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
func CheckLoad(metric *slov1alpha1.NodeMetric, allocatable corev1.ResourceList, thresholds []ResourceThreshold, now time.Time, maxAge time.Duration) LoadCheck {
	if !MetricFresh(metric, now, maxAge) {
		return LoadCheck{Stale: true}
	}
	for _, t := range thresholds {
		if t.Percent <= 0 {
			continue
		}
		alloc, ok := allocatable[t.Name]
		if !ok {
			continue
		}
		used, ok := metric.Status.NodeUsage[t.Name]
		if !ok {
			continue
		}
		a := alloc.AsApproximateFloat64()
		if a <= 0 {
			continue
		}
		pct := used.AsApproximateFloat64() * 100 / a
		if pct > float64(t.Percent) {
			return LoadCheck{Overloaded: true, Resource: t.Name, UsagePercent: int64(pct), ThresholdPercent: t.Percent}
		}
	}
	return LoadCheck{}
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
func LoadScore(metric *slov1alpha1.NodeMetric, allocatable, podRequests corev1.ResourceList, weights []ResourceWeight, now time.Time, maxAge time.Duration) int64 {
	if !MetricFresh(metric, now, maxAge) {
		return NeutralLoadScore
	}
	var sum, total int64
	for _, w := range weights {
		if w.Weight <= 0 {
			continue
		}
		alloc, ok := allocatable[w.Name]
		if !ok {
			continue
		}
		a := alloc.AsApproximateFloat64()
		if a <= 0 {
			continue
		}
		var used, req float64
		if q, ok := metric.Status.NodeUsage[w.Name]; ok {
			used = q.AsApproximateFloat64()
		}
		if q, ok := podRequests[w.Name]; ok {
			req = q.AsApproximateFloat64()
		}
		sum += w.Weight * freeShare(a, used, req)
		total += w.Weight
	}
	if total == 0 {
		return NeutralLoadScore
	}
	return sum / total
}
