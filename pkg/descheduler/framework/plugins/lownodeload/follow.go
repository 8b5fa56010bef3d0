package lownodeload

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/apis/config"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

// FollowsScheduler implements framework.SchedulerFollower: the thresholds and the usage estimate
// follow the scheduler's LoadAware.
func (a *LowNodeLoadArgs) FollowsScheduler() []string {
	return []string{framework.SchedulerLoadAware}
}

// FollowScheduler implements framework.SchedulerFollower:
//
//	highThresholds                    = LoadAware usageThresholds (not with useDeviationThresholds)
//	nodeMetricExpirationSeconds       = LoadAware nodeMetricExpirationSeconds
//	estimatedScalingFactors           = LoadAware estimatedScalingFactors
//	estimatedSecondsAfterPodScheduled = LoadAware estimatedSecondsAfterPodScheduled
//
// resourceWeights, when left out, are LoadAware's too (they only order nodes and pods, so another
// explicit value is allowed), and lowThresholds, when left out with highThresholds, are the
// plugin's defaults capped at the scheduler's thresholds. With useDeviationThresholds the
// thresholds are relative to the mean and have no scheduler counterpart.
func (a *LowNodeLoadArgs) FollowScheduler(f *framework.Follow) field.ErrorList {
	var errs field.ErrorList
	for k, s := range f.Sources(framework.SchedulerLoadAware, nil) {
		la, ok := s.Args.(*config.LoadAwareArgs)
		if !ok {
			return field.ErrorList{f.WrongArgs(s, "usageThresholds")}
		}
		first := k == 0
		if !a.UseDeviationThresholds {
			switch {
			case !f.Given["highThresholds"] && first:
				a.HighThresholds = maps.Clone(la.UsageThresholds)
				if !f.Given["lowThresholds"] {
					a.LowThresholds = cappedLowThresholds(a.HighThresholds)
				}
			case !maps.Equal(a.HighThresholds, la.UsageThresholds):
				errs = append(errs, f.Contradiction("highThresholds", a.HighThresholds, s, "usageThresholds", la.UsageThresholds))
			}
		}
		switch {
		case !f.Given["nodeMetricExpirationSeconds"] && first:
			v := la.NodeMetricExpirationSeconds
			a.NodeMetricExpirationSeconds = &v
		case a.NodeMetricExpirationSeconds == nil || *a.NodeMetricExpirationSeconds != la.NodeMetricExpirationSeconds:
			errs = append(errs, f.Contradiction("nodeMetricExpirationSeconds", deref(a.NodeMetricExpirationSeconds), s, "nodeMetricExpirationSeconds", la.NodeMetricExpirationSeconds))
		}
		switch {
		case !f.Given["estimatedScalingFactors"] && first:
			a.EstimatedScalingFactors = maps.Clone(la.EstimatedScalingFactors)
		case !sameFactors(a.EstimatedScalingFactors, la.EstimatedScalingFactors):
			errs = append(errs, f.Contradiction("estimatedScalingFactors", a.EstimatedScalingFactors, s, "estimatedScalingFactors", la.EstimatedScalingFactors))
		}
		switch {
		case !f.Given["estimatedSecondsAfterPodScheduled"] && first:
			v := la.EstimatedSecondsAfterPodScheduled
			a.EstimatedSecondsAfterPodScheduled = &v
		case a.EstimatedSecondsAfterPodScheduled == nil || *a.EstimatedSecondsAfterPodScheduled != la.EstimatedSecondsAfterPodScheduled:
			errs = append(errs, f.Contradiction("estimatedSecondsAfterPodScheduled", deref(a.EstimatedSecondsAfterPodScheduled), s, "estimatedSecondsAfterPodScheduled", la.EstimatedSecondsAfterPodScheduled))
		}
		if !f.Given["resourceWeights"] && first {
			a.ResourceWeights = maps.Clone(la.ResourceWeights)
		}
	}
	return errs
}

// deref is *p, or nil (shown as null) when p is nil.
func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// sameFactors reports whether two estimatedScalingFactors estimate alike: the same positive factors
// (a factor of zero, like a missing one, estimates nothing).
func sameFactors(a, b map[corev1.ResourceName]int64) bool {
	pos := func(m map[corev1.ResourceName]int64) map[corev1.ResourceName]int64 {
		out := map[corev1.ResourceName]int64{}
		for k, v := range m {
			if v > 0 {
				out[k] = v
			}
		}
		return out
	}
	return maps.Equal(pos(a), pos(b))
}

// cappedLowThresholds returns the default low thresholds for the resources of high, each capped at
// its high threshold; resources without a default are left for the policy to set (validation names
// them).
func cappedLowThresholds(high map[corev1.ResourceName]int64) map[corev1.ResourceName]int64 {
	def := defaultLowThresholds()
	out := map[corev1.ResourceName]int64{}
	for r, h := range high {
		if l, ok := def[r]; ok {
			out[r] = min(l, h)
		}
	}
	return out
}
