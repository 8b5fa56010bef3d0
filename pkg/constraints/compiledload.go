package constraints

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
)

// Load is a NodeMetric compiled for repeated checks: its update time and its node usage as a short
// list of numbers. A scheduler checks one NodeMetric against every pod it places, so it builds the
// Load once per metric version (NewLoad allocates) and then answers Check and Score without
// parsing quantities. The answers are exactly those of CheckLoad and LoadScore on the NodeMetric.
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

// Fresh is MetricFresh for the compiled metric.
func (l *Load) Fresh(now time.Time, maxAge time.Duration) bool {
	if l == nil || !l.hasUpdated {
		return false
	}
	return maxAge <= 0 || now.UnixNano()-l.updated <= int64(maxAge)
}

func (l *Load) used(name corev1.ResourceName) (float64, bool) {
	for _, u := range l.usage {
		if u.name == name {
			return u.value, true
		}
	}
	return 0, false
}

// Check is CheckLoad for the compiled metric.
func (l *Load) Check(allocatable corev1.ResourceList, thresholds []ResourceThreshold, now time.Time, maxAge time.Duration) LoadCheck {
	if !l.Fresh(now, maxAge) {
		return LoadCheck{Stale: true}
	}
	for _, t := range thresholds {
		if t.Percent <= 0 {
			continue
		}
		used, ok := l.used(t.Name)
		if !ok {
			continue
		}
		alloc, ok := allocatable[t.Name]
		if !ok {
			continue
		}
		a := alloc.AsApproximateFloat64()
		if a <= 0 {
			continue
		}
		if pct := used * 100 / a; pct > float64(t.Percent) {
			return LoadCheck{Overloaded: true, Resource: t.Name, UsagePercent: int64(pct), ThresholdPercent: t.Percent}
		}
	}
	return LoadCheck{}
}

// Score is LoadScore for the compiled metric, with the pod's requests given as numbers aligned
// with weights (podRequests[i] is the request for weights[i].Name; nil for none), as
// AlignRequests computes them once per pod.
func (l *Load) Score(allocatable corev1.ResourceList, podRequests []float64, weights []ResourceWeight, now time.Time, maxAge time.Duration) int64 {
	if !l.Fresh(now, maxAge) {
		return NeutralLoadScore
	}
	var sum, total int64
	for i, w := range weights {
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
		used, _ := l.used(w.Name)
		if i < len(podRequests) {
			used += podRequests[i]
		}
		free := int64((a - used) * 100 / a)
		sum += w.Weight * clamp(free, 0, MaxLoadScore)
		total += w.Weight
	}
	if total == 0 {
		return NeutralLoadScore
	}
	return sum / total
}

// AlignRequests returns the pod's requests (from a computed request list, e.g. component-helpers'
// PodRequests) as numbers aligned with weights, for Load.Score. It allocates once.
func AlignRequests(requests corev1.ResourceList, weights []ResourceWeight) []float64 {
	out := make([]float64, len(weights))
	for i, w := range weights {
		if q, ok := requests[w.Name]; ok {
			out[i] = q.AsApproximateFloat64()
		}
	}
	return out
}
