package removefailedpods

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// RemoveFailedPodsArgs are the upstream plugin's args.
type RemoveFailedPodsArgs struct {
	metav1.TypeMeta `json:",inline"`

	Namespaces    *pluginutil.Namespaces `json:"namespaces,omitempty"`
	LabelSelector *metav1.LabelSelector  `json:"labelSelector,omitempty"`
	// ExcludeOwnerKinds: pods owned by one of these kinds (e.g. Job) are left alone.
	ExcludeOwnerKinds []string `json:"excludeOwnerKinds,omitempty"`
	// MinPodLifetimeSeconds: younger pods are left alone.
	MinPodLifetimeSeconds *uint `json:"minPodLifetimeSeconds,omitempty"`
	// Reasons, when set: the pod's status reason, or a container's terminated or waiting reason, must
	// be one of them.
	Reasons []string `json:"reasons,omitempty"`
	// ExitCodes, when set: a container must have terminated with one of them.
	ExitCodes []int32 `json:"exitCodes,omitempty"`
	// IncludingInitContainers makes init containers' reasons and exit codes count.
	IncludingInitContainers bool `json:"includingInitContainers,omitempty"`
}
