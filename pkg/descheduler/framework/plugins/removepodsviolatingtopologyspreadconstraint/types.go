package removepodsviolatingtopologyspreadconstraint

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// RemovePodsViolatingTopologySpreadConstraintArgs are the upstream plugin's args.
type RemovePodsViolatingTopologySpreadConstraintArgs struct {
	metav1.TypeMeta `json:",inline"`

	Namespaces    *pluginutil.Namespaces `json:"namespaces,omitempty"`
	LabelSelector *metav1.LabelSelector  `json:"labelSelector,omitempty"`
	// Constraints lists the whenUnsatisfiable values whose constraints are balanced; default
	// [DoNotSchedule].
	Constraints []corev1.UnsatisfiableConstraintAction `json:"constraints,omitempty"`
	// TopologyBalanceNodeFit (default true) only moves a pod that fits a node of a less crowded
	// domain.
	TopologyBalanceNodeFit *bool `json:"topologyBalanceNodeFit,omitempty"`
	// Deprecated: use constraints [DoNotSchedule, ScheduleAnyway].
	IncludeSoftConstraints bool `json:"includeSoftConstraints,omitempty"`
}
