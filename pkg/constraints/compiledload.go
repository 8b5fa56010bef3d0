package constraints

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
)

// Load is a NodeMetric parsed once: its update time and its node usage as a short list of numbers.
// A scheduler checks one NodeMetric against every pod it places, so it builds the Load once per
// metric version (NewLoad allocates) and compiles it per node with NewNodeLoad, which holds the one
// definition of the load check and score.
type Load struct {
	// updated is the metric's UpdateTime in Unix nanoseconds, valid when hasUpdated.
	updated    int64
	hasUpdated bool
	usage      []namedValue
}

type namedValue struct {
	name  corev1.ResourceName
	value float64
}

// NewLoad compiles a NodeMetric; nil gives nil, a missing metric.
func NewLoad(metric *slov1alpha1.NodeMetric) *Load {
	if metric == nil {
		return nil
	}
	l := &Load{}
	if metric.Status.UpdateTime != nil {
		l.updated, l.hasUpdated = metric.Status.UpdateTime.UnixNano(), true
	}
	for name, q := range metric.Status.NodeUsage {
		l.usage = append(l.usage, namedValue{name: name, value: q.AsApproximateFloat64()})
	}
	return l
}

// Fresh is MetricFresh for the parsed metric.
func (l *Load) Fresh(now time.Time, maxAge time.Duration) bool {
	return l != nil && l.hasUpdated && fresh(l.updated, now, maxAge)
}

func (l *Load) used(name corev1.ResourceName) (float64, bool) {
	for _, u := range l.usage {
		if u.name == name {
			return u.value, true
		}
	}
	return 0, false
}

// freeShare is a resource's free share, 0..100, once a pod's request joins the measured usage:
// 100 * (allocatable - (usage + request)) / allocatable, rounded toward zero and clamped.
func freeShare(alloc, used, req float64) int64 {
	return clamp(int64((alloc-(used+req))*100/alloc), 0, MaxLoadScore)
}

// NodeLoad is the one definition of a node's load check and load score: a Load compiled against one
// node's allocatable and one list of thresholds and weights (a scheduler profile's). It holds the
// answer Check gives while the metric is fresh, and for each weighted resource the node's
// allocatable and measured usage as numbers. A scheduler keeps one per node, rebuilt when the node's
// NodeMetric or its Node changes (NewNodeLoad allocates), so that Filter is a freshness test and Score
// a few arithmetic operations per weighted resource; neither allocates nor looks anything up.
// CheckLoad and LoadScore, which take the NodeMetric itself, are derived from it.
//
// Freshness is judged at the time of each call, from the metric's update time: a metric that expires
// after the NodeLoad was built is treated as expired.
type NodeLoad struct {
	updated    int64
	hasUpdated bool
	// check is the answer of Check while the metric is fresh.
	check LoadCheck
	// shares are the weighted resources that count in the score, in the order of the weights; up
	// to len(inline) of them are kept in inline, which shares then points into, so that Score reads
	// them without a further memory access.
	shares []resourceShare
	inline [2]resourceShare
	// total is the sum of the shares' weights.
	total int64
}

type resourceShare struct {
	// index is the resource's position in the weights, and so in the pod's aligned requests.
	index  int
	weight int64
	alloc  float64
	used   float64
}

// NewNodeLoad compiles l against a node's allocatable, thresholds and weights. A nil Load (no
// metric) gives nil, which Check and Score treat as a missing metric.
//
// The check: for each threshold, in order, the node is overloaded as soon as the measured usage of
// the resource is strictly above Percent percent of its allocatable; a threshold of zero or less, or a
// resource without usage or without positive allocatable, is not checked.
func NewNodeLoad(l *Load, allocatable corev1.ResourceList, thresholds []ResourceThreshold, weights []ResourceWeight) *NodeLoad {
	if l == nil {
		return nil
	}
	n := &NodeLoad{updated: l.updated, hasUpdated: l.hasUpdated}
	n.shares = n.inline[:0]
	for _, t := range thresholds {
		if t.Percent <= 0 {
			continue
		}
		used, ok := l.used(t.Name)
		if !ok {
			continue
		}
		a, ok := positive(allocatable, t.Name)
		if !ok {
			continue
		}
		if pct := used * 100 / a; pct > float64(t.Percent) {
			n.check = LoadCheck{Overloaded: true, Resource: t.Name, UsagePercent: int64(pct), ThresholdPercent: t.Percent}
			break
		}
	}
	for i, w := range weights {
		if w.Weight <= 0 {
			continue
		}
		a, ok := positive(allocatable, w.Name)
		if !ok {
			continue
		}
		used, _ := l.used(w.Name)
		n.shares = append(n.shares, resourceShare{index: i, weight: w.Weight, alloc: a, used: used})
		n.total += w.Weight
	}
	return n
}

// positive is the node's allocatable of name as a number, when it has a positive one.
func positive(allocatable corev1.ResourceList, name corev1.ResourceName) (float64, bool) {
	q, ok := allocatable[name]
	if !ok {
		return 0, false
	}
	a := q.AsApproximateFloat64()
	return a, a > 0
}

// Fresh is MetricFresh for the compiled metric.
func (n *NodeLoad) Fresh(now time.Time, maxAge time.Duration) bool {
	return n != nil && n.hasUpdated && fresh(n.updated, now, maxAge)
}

// OverThreshold reports whether the compiled usage is over one of the thresholds, whatever the
// metric's age: Check answers Overloaded only for such a NodeLoad, and only while it is fresh. A
// metric that expires can therefore turn an overloaded node into one that passes, never the
// reverse.
func (n *NodeLoad) OverThreshold() bool {
	return n != nil && n.check.Overloaded
}

// Check reports whether the node is over the thresholds NewNodeLoad was given; a missing or expired
// metric is never overloaded and gives Stale (see CheckLoad).
func (n *NodeLoad) Check(now time.Time, maxAge time.Duration) LoadCheck {
	if !n.Fresh(now, maxAge) {
		return LoadCheck{Stale: true}
	}
	return n.check
}

// Score is the node's load score with the pod on it (see LoadScore) for the weights NewNodeLoad was
// given; podRequests are aligned with those weights (AlignRequests).
func (n *NodeLoad) Score(podRequests []float64, now time.Time, maxAge time.Duration) int64 {
	if !n.Fresh(now, maxAge) || n.total == 0 {
		return NeutralLoadScore
	}
	var sum int64
	for _, s := range n.shares {
		var req float64
		if s.index < len(podRequests) {
			req = podRequests[s.index]
		}
		sum += s.weight * freeShare(s.alloc, s.used, req)
	}
	return sum / n.total
}

// AlignRequests returns the pod's requests (from a computed request list, e.g. component-helpers'
// PodRequests) as numbers aligned with weights, for NodeLoad.Score. It allocates once.
func AlignRequests(requests corev1.ResourceList, weights []ResourceWeight) []float64 {
	out := make([]float64, len(weights))
	for i, w := range weights {
		if q, ok := requests[w.Name]; ok {
			out[i] = q.AsApproximateFloat64()
		}
	}
	return out
}
