package lownodeload

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/accord-sched/accord/apis/config"
)

// Defaults. The high thresholds are the scheduler LoadAware plugin's usage thresholds
// (apis/config's DefaultUsageThresholds), and the weights, the metric expiry and the usage
// estimate are the shared args' (constraints.UsageEstimateArgs.SetDefaults), so that the two
// plugins agree out of the box.
const (
	DefaultNodeMetricExpirationSeconds       = config.DefaultNodeMetricExpirationSeconds
	DefaultConsecutiveAbnormalities    int32 = 3
)

func defaultHighThresholds() map[corev1.ResourceName]int64 { return config.DefaultUsageThresholds() }

func defaultLowThresholds() map[corev1.ResourceName]int64 {
	return map[corev1.ResourceName]int64{corev1.ResourceCPU: 45, corev1.ResourceMemory: 75}
}

// SetDefaults_LowNodeLoadArgs fills unset fields. Thresholds are defaulted only without
// useDeviationThresholds (deviations have no sensible default) and only when both are unset.
func SetDefaults_LowNodeLoadArgs(a *LowNodeLoadArgs) {
	if !a.UseDeviationThresholds && a.HighThresholds == nil && a.LowThresholds == nil {
		a.HighThresholds = defaultHighThresholds()
		a.LowThresholds = defaultLowThresholds()
	}
	a.UsageEstimateArgs.SetDefaults()
	if a.ConsecutiveAbnormalities == 0 {
		a.ConsecutiveAbnormalities = DefaultConsecutiveAbnormalities
	}
}

// SetDefaults implements framework.ArgsDefaulter.
func (a *LowNodeLoadArgs) SetDefaults() { SetDefaults_LowNodeLoadArgs(a) }
