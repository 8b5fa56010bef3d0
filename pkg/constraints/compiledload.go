package constraints

import (
	"slices"
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
	// window is the metric's report interval in nanoseconds: the report covers the window before
	// updated (UsageEstimator).
	window int64
	// pods is the report's podsUsage, in its order, and podIndex finds a pod in it.
	pods     []reportedPod
	podIndex map[podKey]int
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
	if s := metric.Spec.ReportIntervalSeconds; s != nil && *s > 0 {
		l.window = *s * int64(time.Second)
	}
	if len(metric.Status.PodsUsage) > 0 {
		l.podIndex = make(map[podKey]int, len(metric.Status.PodsUsage))
	}
	for _, u := range metric.Status.PodsUsage {
		key := podKey{namespace: u.Namespace, name: u.Name}
		if _, dup := l.podIndex[key]; dup {
			continue
		}
		rp := reportedPod{key: key}
		for name, q := range u.Usage {
			rp.usage = append(rp.usage, namedValue{name: name, value: q.AsApproximateFloat64()})
		}
		l.podIndex[key] = len(l.pods)
		l.pods = append(l.pods, rp)
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
// node's allocatable and one list of thresholds and weights (a scheduler profile's). It holds, for
// each threshold and each weighted resource, the node's allocatable and reported usage as numbers.
// A scheduler keeps one per node, rebuilt when the node's NodeMetric or its Node changes
// (NewNodeLoad allocates), so that Filter is a freshness test and a comparison per threshold, and
// Score a few arithmetic operations per weighted resource; neither allocates nor looks anything up.
// CheckLoad and LoadScore, which take the NodeMetric itself, are derived from it. The Estimated
// variants add an Adjustment (UsageEstimator) to the reported usage.
//
// Freshness is judged at the time of each call, from the metric's update time: a metric that expires
// after the NodeLoad was built is treated as expired.
type NodeLoad struct {
	updated    int64
	hasUpdated bool
	// limits are the thresholds that are checked, in order; like shares, up to len(limitsInline)
	// of them are kept inline.
	limits       []resourceLimit
	limitsInline [2]resourceLimit
	// shares are the weighted resources that count in the score, in the order of the weights; up
	// to len(inline) of them are kept in inline, which shares then points into, so that Score reads
	// them without a further memory access.
	shares []resourceShare
	inline [2]resourceShare
	// total is the sum of the shares' weights.
	total int64
}

type resourceLimit struct {
	name    corev1.ResourceName
	percent int64
	alloc   float64
	used    float64
}

type resourceShare struct {
	// index is the resource's position in the weights, and so in the pod's aligned requests.
	index  int
	name   corev1.ResourceName
	weight int64
	alloc  float64
	used   float64
}

// NewNodeLoad compiles l against a node's allocatable, thresholds and weights. A nil Load (no
// metric) gives nil, which Check and Score treat as a missing metric.
//
// The check: for each threshold, in order, the node is overloaded as soon as the usage of the
// resource is strictly above Percent percent of its allocatable; a threshold of zero or less, or a
// resource without reported usage or without positive allocatable, is not checked.
func NewNodeLoad(l *Load, allocatable corev1.ResourceList, thresholds []ResourceThreshold, weights []ResourceWeight) *NodeLoad {
	if l == nil {
		return nil
	}
	n := &NodeLoad{}
	n.Compile(l, allocatable, thresholds, weights)
	return n
}

// Compile sets n to what NewNodeLoad returns for a non-nil l, in place: for a NodeLoad held inside
// a caller's own structure (one allocation, and one memory access fewer for each read). n points
// into itself afterwards and must not be copied.
func (n *NodeLoad) Compile(l *Load, allocatable corev1.ResourceList, thresholds []ResourceThreshold, weights []ResourceWeight) {
	*n = NodeLoad{updated: l.updated, hasUpdated: l.hasUpdated}
	n.shares = n.inline[:0]
	n.limits = n.limitsInline[:0]
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
		n.limits = append(n.limits, resourceLimit{name: t.Name, percent: t.Percent, alloc: a, used: used})
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
		n.shares = append(n.shares, resourceShare{index: i, name: w.Name, weight: w.Weight, alloc: a, used: used})
		n.total += w.Weight
	}
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

// Check reports whether the node is over the thresholds NewNodeLoad was given, by its reported
// usage; a missing or expired metric is never overloaded and gives Stale (see CheckLoad).
func (n *NodeLoad) Check(now time.Time, maxAge time.Duration) LoadCheck {
	return n.CheckEstimated(nil, now, maxAge)
}

// CheckEstimated is Check on the reported usage changed by adj (nil: unchanged), never below zero.
func (n *NodeLoad) CheckEstimated(adj *Adjustment, now time.Time, maxAge time.Duration) LoadCheck {
	var buf [inlineDeltas]float64
	return n.CheckDeltas(n.Deltas(adj, buf[:0]), now, maxAge)
}

// inlineDeltas is how many deltas CheckEstimated and ScoreEstimated keep on the stack: a NodeLoad
// with two thresholds and two weights, as LoadAware's defaults, has four.
const inlineDeltas = 4

// Deltas returns what adj changes in each usage n reads, aligned with n (its thresholds, then its
// weighted resources), appended to out[:0]; nil for a nil adj or a nil n. CheckDeltas and
// ScoreDeltas given them answer what CheckEstimated and ScoreEstimated answer given adj: a caller
// that checks one adjustment many times can keep these numbers instead of the Adjustment (a
// scheduler keeps them inline, next to its NodeLoad).
func (n *NodeLoad) Deltas(adj *Adjustment, out []float64) []float64 {
	if n == nil || adj == nil {
		return nil
	}
	out = slices.Grow(out[:0], n.NumDeltas())
	for _, t := range n.limits {
		out = append(out, adj.Delta(t.name))
	}
	for _, s := range n.shares {
		out = append(out, adj.Delta(s.name))
	}
	return out
}

// NumDeltas is how many deltas Deltas returns for n: one per threshold, then one per weighted
// resource.
func (n *NodeLoad) NumDeltas() int {
	if n == nil {
		return 0
	}
	return len(n.limits) + len(n.shares)
}

// CheckDeltas is Check on the reported usage changed by deltas (Deltas; nil: unchanged), never
// below zero.
func (n *NodeLoad) CheckDeltas(deltas []float64, now time.Time, maxAge time.Duration) LoadCheck {
	if !n.Fresh(now, maxAge) {
		return LoadCheck{Stale: true}
	}
	for i, t := range n.limits {
		used := t.used
		if deltas != nil {
			used = max(used+deltas[i], 0)
		}
		if pct := used * 100 / t.alloc; pct > float64(t.percent) {
			return LoadCheck{Overloaded: true, Resource: t.name, UsagePercent: int64(pct), ThresholdPercent: t.percent}
		}
	}
	return LoadCheck{}
}

// Score is the node's load score with the pod on it (see LoadScore) for the weights NewNodeLoad was
// given; podRequests are aligned with those weights (AlignRequests).
func (n *NodeLoad) Score(podRequests []float64, now time.Time, maxAge time.Duration) int64 {
	return n.ScoreEstimated(nil, podRequests, now, maxAge)
}

// ScoreEstimated is Score on the reported usage changed by adj (nil: unchanged), never below zero.
func (n *NodeLoad) ScoreEstimated(adj *Adjustment, podRequests []float64, now time.Time, maxAge time.Duration) int64 {
	var buf [inlineDeltas]float64
	return n.ScoreDeltas(n.Deltas(adj, buf[:0]), podRequests, now, maxAge)
}

// ScoreDeltas is Score on the reported usage changed by deltas (Deltas; nil: unchanged), never
// below zero.
func (n *NodeLoad) ScoreDeltas(deltas []float64, podRequests []float64, now time.Time, maxAge time.Duration) int64 {
	if !n.Fresh(now, maxAge) || n.total == 0 {
		return NeutralLoadScore
	}
	var sum int64
	for i, s := range n.shares {
		var req float64
		if s.index < len(podRequests) {
			req = podRequests[s.index]
		}
		used := s.used
		if deltas != nil {
			used = max(used+deltas[len(n.limits)+i], 0)
		}
		sum += s.weight * freeShare(s.alloc, used, req)
	}
	return sum / n.total
}

// EstimatedUsage returns the node's usage of the resource with adj applied (never below zero), and
// false when the metric reports no usage of it.
func (l *Load) EstimatedUsage(name corev1.ResourceName, adj *Adjustment) (float64, bool) {
	if l == nil {
		return 0, false
	}
	used, ok := l.used(name)
	if !ok {
		return 0, false
	}
	return max(used+adj.Delta(name), 0), true
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
