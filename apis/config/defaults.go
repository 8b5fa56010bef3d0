package config

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/accord-sched/accord/pkg/constraints"
)

// The defaults of the args the scheduler plugins share with the descheduler, in one place: the
// versioned scheduler args (apis/config/v1) and the descheduler plugins that mirror them
// (NodeCRDResourceFit, DefaultEvictor's nodeFit, LowNodeLoad) all default from here, so the two
// binaries agree out of the box. The docs, the chart and the shipped configurations that write these
// values (their defaults regions, and the "Defaults to" of the args' doc comments) are written from
// the defaulting functions by `make generate` (hack/chartdoc); `make verify` fails when one is stale.
const (
	// DefaultMissingCRPolicy is what a node without a ClusterScopedResource means by default.
	DefaultMissingCRPolicy = MissingCRPolicyReject
	// DefaultNodeMetricExpirationSeconds is the age after which a NodeMetric is ignored by default
	// (the shared args' default, constraints.UsageEstimateArgs).
	DefaultNodeMetricExpirationSeconds = constraints.DefaultNodeMetricExpirationSeconds
	// DefaultEstimatedSecondsAfterPodScheduled: a pod counts its estimate until a report includes
	// it, no longer (constraints.UsageEstimateArgs).
	DefaultEstimatedSecondsAfterPodScheduled = constraints.DefaultEstimatedSecondsAfterPodScheduled
)

// DefaultEstimatedScalingFactors returns the default estimatedScalingFactors of LoadAware and
// LowNodeLoad (constraints.UsageEstimateArgs), as a fresh map.
func DefaultEstimatedScalingFactors() map[corev1.ResourceName]int64 {
	return constraints.DefaultEstimatedScalingFactors()
}

// DefaultUsageThresholds returns LoadAware's default usage thresholds (LowNodeLoad's default high
// thresholds), in percent of allocatable, as a fresh map: defaults never share memory between args.
func DefaultUsageThresholds() map[corev1.ResourceName]int64 {
	return map[corev1.ResourceName]int64{corev1.ResourceCPU: 65, corev1.ResourceMemory: 95}
}

// DefaultResourceWeights returns the default resourceWeights of LoadAware and LowNodeLoad
// (constraints.UsageEstimateArgs), as a fresh map.
func DefaultResourceWeights() map[corev1.ResourceName]int64 {
	return constraints.DefaultResourceWeights()
}
