package removepodsviolatingnodetaints

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// RemovePodsViolatingNodeTaintsArgs are the upstream plugin's args.
type RemovePodsViolatingNodeTaintsArgs struct {
	metav1.TypeMeta `json:",inline"`

	Namespaces    *pluginutil.Namespaces `json:"namespaces,omitempty"`
	LabelSelector *metav1.LabelSelector  `json:"labelSelector,omitempty"`
	// IncludePreferNoSchedule also evicts pods not tolerating PreferNoSchedule taints.
	IncludePreferNoSchedule bool `json:"includePreferNoSchedule,omitempty"`
	// ExcludedTaints are taints ("key" or "key=value") that never cause an eviction.
	ExcludedTaints []string `json:"excludedTaints,omitempty"`
	// IncludedTaints, when set, are the only taints ("key" or "key=value") that cause evictions.
	IncludedTaints []string `json:"includedTaints,omitempty"`
}
