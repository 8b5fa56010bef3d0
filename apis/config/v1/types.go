package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/accord-sched/accord/pkg/constraints"
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
	// filters it out, "Ignore" lets it through and scores it 0. Defaults to Reject.
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
	// UsageEstimateArgs are the args LowNodeLoad shares, with their meaning and defaults
	// (constraints.UsageEstimateArgs): resourceWeights (here each 0-100, at least one positive:
	// they make the score), nodeMetricExpirationSeconds (here greater than 0),
	// estimatedScalingFactors and estimatedSecondsAfterPodScheduled.
	constraints.UsageEstimateArgs `json:",inline"`
}
