package config

import corev1 "k8s.io/api/core/v1"

// The defaults of the args the scheduler plugins share with the descheduler, in one place: the
// versioned scheduler args (apis/config/v1) and the descheduler plugins that mirror them
// (NodeCRDResourceFit, DefaultEvictor's nodeFit, LowNodeLoad) all default from here, so the two
// binaries agree out of the box. The docs, the chart and the shipped configurations that write these
// values are held to them by manifests' TestDefaultsWrittenAreTheGoDefaults,
// TestChartConstraintsAreTheGoDefaults and TestShippedConfigurationsAreTheChartConstraints.
const (
	// DefaultMissingCRPolicy is what a node without a ClusterScopedResource means by default.
	DefaultMissingCRPolicy = MissingCRPolicyReject
	// DefaultNodeMetricExpirationSeconds is the age after which a NodeMetric is ignored by default:
	// three minutes.
	DefaultNodeMetricExpirationSeconds int64 = 180
	// DefaultEstimatedSecondsAfterPodScheduled: a pod counts its estimate until a report includes
	// it, no longer.
	DefaultEstimatedSecondsAfterPodScheduled int64 = 0
)

// DefaultEstimatedScalingFactors returns the default estimatedScalingFactors of LoadAware and
// LowNodeLoad (Koordinator's: cpu 85, memory 70 percent), as a fresh map.
func DefaultEstimatedScalingFactors() map[corev1.ResourceName]int64 {
	return map[corev1.ResourceName]int64{corev1.ResourceCPU: 85, corev1.ResourceMemory: 70}
}

// DefaultUsageThresholds returns LoadAware's default usage thresholds (LowNodeLoad's default high
// thresholds), in percent of allocatable, as a fresh map: defaults never share memory between args.
func DefaultUsageThresholds() map[corev1.ResourceName]int64 {
	return map[corev1.ResourceName]int64{corev1.ResourceCPU: 65, corev1.ResourceMemory: 95}
}

// DefaultResourceWeights returns the default load-score weights of LoadAware and LowNodeLoad, as a
// fresh map.
func DefaultResourceWeights() map[corev1.ResourceName]int64 {
	return map[corev1.ResourceName]int64{corev1.ResourceCPU: 1, corev1.ResourceMemory: 1}
}
