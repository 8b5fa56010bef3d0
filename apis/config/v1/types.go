package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MissingCRPolicy says what NodeCRDResourceFit does with a node that has no ClusterScopedResource:
// "Reject" or "Ignore".
type MissingCRPolicy string

const (
	// MissingCRPolicyReject filters out a node without a ClusterScopedResource.
	MissingCRPolicyReject MissingCRPolicy = "Reject"
	// MissingCRPolicyIgnore lets a node without a ClusterScopedResource through the filter and
	// scores it 0.
	MissingCRPolicyIgnore MissingCRPolicy = "Ignore"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NodeCRDResourceFitArgs are the arguments of the NodeCRDResourceFit plugin.
type NodeCRDResourceFitArgs struct {
	metav1.TypeMeta `json:",inline"`

	// MissingCRPolicy is what to do with a node that has no ClusterScopedResource: "Reject"
	// (default) filters it out, "Ignore" lets it through and scores it 0.
	// +optional
	MissingCRPolicy *MissingCRPolicy `json:"missingCRPolicy,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// LoadAwareArgs are the arguments of the LoadAware plugin.
type LoadAwareArgs struct {
	metav1.TypeMeta `json:",inline"`

	// UsageThresholds is, per resource, the highest measured usage, in percent of the node's
	// allocatable (0-100), at which a node still passes the filter; 0 disables a resource's
	// threshold. Defaults to cpu: 65, memory: 95.
	// +optional
	UsageThresholds map[corev1.ResourceName]int64 `json:"usageThresholds,omitempty"`
	// ResourceWeights is, per resource, its weight (0-100) in the score. Defaults to cpu: 1,
	// memory: 1.
	// +optional
	ResourceWeights map[corev1.ResourceName]int64 `json:"resourceWeights,omitempty"`
	// NodeMetricExpirationSeconds is the age after which a NodeMetric is ignored: the node is then
	// never filtered out and scores neutral. Defaults to 180.
	// +optional
	NodeMetricExpirationSeconds *int64 `json:"nodeMetricExpirationSeconds,omitempty"`
	// EstimatedScalingFactors is, per resource, the percent (0-100) of the larger of a pod's
	// request and limit that counts as the pod's usage on its node until the node's NodeMetric
	// includes it: the pod is missing from podsUsage, or was assigned after the report's window
	// began. Pods that requests and limits leave without cpu or memory count 250m and 200Mi before
	// scaling; a pod's accord.dev/estimated-usage annotation replaces its estimate. Pods the report
	// lists that have left the node are taken off its usage. Defaults to cpu: 85, memory: 70
	// (Koordinator's); {} turns the estimate off (the reported usage alone, as before).
	// +optional
	EstimatedScalingFactors map[corev1.ResourceName]int64 `json:"estimatedScalingFactors,omitempty"`
	// EstimatedSecondsAfterPodScheduled is how long after its assignment a pod counts at least its
	// estimate even when a report includes it (a starting pod uses less than it will). Defaults to
	// 0: until a report includes it.
	// +optional
	EstimatedSecondsAfterPodScheduled *int64 `json:"estimatedSecondsAfterPodScheduled,omitempty"`
}
