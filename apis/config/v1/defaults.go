package v1

import (
	corev1 "k8s.io/api/core/v1"
)

// DefaultNodeMetricExpirationSeconds is the default NodeMetricExpirationSeconds: three minutes.
const DefaultNodeMetricExpirationSeconds int64 = 180

// defaultUsageThresholds and defaultResourceWeights return fresh maps: defaults must never share
// memory between args objects.
func defaultUsageThresholds() map[corev1.ResourceName]int64 {
	return map[corev1.ResourceName]int64{corev1.ResourceCPU: 65, corev1.ResourceMemory: 95}
}

func defaultResourceWeights() map[corev1.ResourceName]int64 {
	return map[corev1.ResourceName]int64{corev1.ResourceCPU: 1, corev1.ResourceMemory: 1}
}

// SetDefaults_NodeCRDResourceFitArgs sets MissingCRPolicy to Reject when it is unset.
func SetDefaults_NodeCRDResourceFitArgs(obj *NodeCRDResourceFitArgs) {
	if obj.MissingCRPolicy == nil {
		p := MissingCRPolicyReject
		obj.MissingCRPolicy = &p
	}
}

// SetDefaults_LoadAwareArgs fills unset thresholds, weights and expiration. A map that is set,
// even to {}, is kept as written.
func SetDefaults_LoadAwareArgs(obj *LoadAwareArgs) {
	if obj.UsageThresholds == nil {
		obj.UsageThresholds = defaultUsageThresholds()
	}
	if obj.ResourceWeights == nil {
		obj.ResourceWeights = defaultResourceWeights()
	}
	if obj.NodeMetricExpirationSeconds == nil {
		s := DefaultNodeMetricExpirationSeconds
		obj.NodeMetricExpirationSeconds = &s
	}
}
