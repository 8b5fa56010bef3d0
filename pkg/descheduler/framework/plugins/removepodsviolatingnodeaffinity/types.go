package removepodsviolatingnodeaffinity

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// RemovePodsViolatingNodeAffinityArgs are the upstream plugin's args.
type RemovePodsViolatingNodeAffinityArgs struct {
	metav1.TypeMeta `json:",inline"`

	Namespaces    *pluginutil.Namespaces `json:"namespaces,omitempty"`
	LabelSelector *metav1.LabelSelector  `json:"labelSelector,omitempty"`
	// NodeAffinityType lists the affinity kinds to enforce: requiredDuringSchedulingIgnoredDuringExecution
	// and/or preferredDuringSchedulingIgnoredDuringExecution. Required.
	NodeAffinityType []string `json:"nodeAffinityType,omitempty"`
}

// Node affinity types.
const (
	Required  = "requiredDuringSchedulingIgnoredDuringExecution"
	Preferred = "preferredDuringSchedulingIgnoredDuringExecution"
)
