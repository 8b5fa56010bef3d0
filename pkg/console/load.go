package console

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	"github.com/accord-sched/accord/pkg/constraints"
)

// loadView compares a node's NodeMetric (nil when it has none), and its usage estimated for the pods
// bound to it, with the thresholds. Whether a resource is over its threshold, the estimate, and
// whether the metric is stale, are decided by pkg/constraints, the code LoadAware and LowNodeLoad
// decide with; the percentages are for the bars.
func loadView(nm *slov1alpha1.NodeMetric, allocatable corev1.ResourceList, pods []*corev1.Pod, th Thresholds, now time.Time) LoadView {
	lv := LoadView{Resources: []LoadResource{}}
	if nm == nil || nm.Status.UpdateTime == nil {
		lv.Stale = true
		return lv
	}
	lv.Reported = true
	lv.UpdatedAt = nm.Status.UpdateTime.Time
	lv.Stale = !constraints.MetricFresh(nm, now, th.MaxAge)
	names := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}
	for name := range th.Percent {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names[2:])
	load := constraints.NewLoad(nm)
	adj := th.Estimator.Adjust(load, allocatable, len(pods), func(i int) *corev1.Pod { return pods[i] }, now)
	lv.EstimatedPods, lv.GonePods = adj.Estimated, adj.Departed
	for _, name := range names {
		used, ok := nm.Status.NodeUsage[name]
		alloc, hasAlloc := allocatable[name]
		if !ok || !hasAlloc || alloc.MilliValue() <= 0 {
			continue
		}
		r := LoadResource{Name: string(name), Percent: used.MilliValue() * 100 / alloc.MilliValue(), Threshold: th.Percent[name]}
		r.EstimatedPercent = r.Percent
		if est, ok := load.EstimatedUsage(name, &adj); ok {
			r.EstimatedPercent = int64(est * 100 / alloc.AsApproximateFloat64())
		}
		if r.Threshold > 0 && !lv.Stale {
			check := constraints.NewNodeLoad(load, allocatable, []constraints.ResourceThreshold{{Name: name, Percent: r.Threshold}}, nil).CheckEstimated(&adj, now, th.MaxAge)
			r.Over = check.Overloaded
		}
		lv.Resources = append(lv.Resources, r)
	}
	return lv
}
