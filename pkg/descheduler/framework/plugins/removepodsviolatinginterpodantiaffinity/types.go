package removepodsviolatinginterpodantiaffinity

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// RemovePodsViolatingInterPodAntiAffinityArgs are the upstream plugin's args.
type RemovePodsViolatingInterPodAntiAffinityArgs struct {
	metav1.TypeMeta `json:",inline"`

	Namespaces    *pluginutil.Namespaces `json:"namespaces,omitempty"`
	LabelSelector *metav1.LabelSelector  `json:"labelSelector,omitempty"`
}
