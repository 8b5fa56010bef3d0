package config

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/accord-sched/accord/pkg/constraints"
)

// MissingCRPolicy says what NodeCRDResourceFit does with a node that has no ClusterScopedResource.
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
	metav1.TypeMeta

	// MissingCRPolicy is what to do with a node that has no ClusterScopedResource.
	MissingCRPolicy MissingCRPolicy
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// LoadAwareArgs are the arguments of the LoadAware plugin.
type LoadAwareArgs struct {
	metav1.TypeMeta

	// UsageThresholds is, per resource, the highest measured usage, in percent of the node's
	// allocatable, at which a node still passes the filter. 0 disables a resource's threshold.
	UsageThresholds map[corev1.ResourceName]int64
	// UsageEstimateArgs are the load rule's args LowNodeLoad shares: resourceWeights,
	// nodeMetricExpirationSeconds and the usage estimate (constraints.UsageEstimateArgs), defaulted.
	constraints.UsageEstimateArgs `json:",inline"`
}
