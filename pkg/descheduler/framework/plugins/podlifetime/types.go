package podlifetime

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PodLifeTimeArgs are the upstream plugin's args.
type PodLifeTimeArgs struct {
	metav1.TypeMeta `json:",inline"`

	Namespaces    *pluginutil.Namespaces `json:"namespaces,omitempty"`
	LabelSelector *metav1.LabelSelector  `json:"labelSelector,omitempty"`
	// MaxPodLifeTimeSeconds: pods older than this are evicted. Required.
	MaxPodLifeTimeSeconds *uint `json:"maxPodLifeTimeSeconds,omitempty"`
	// States, when set, limits the plugin to pods in one of them: a pod phase, a pod status reason or
	// a container waiting reason.
	States []string `json:"states,omitempty"`
	// IncludingInitContainers and IncludingEphemeralContainers make their waiting reasons count for
	// states.
	IncludingInitContainers      bool `json:"includingInitContainers,omitempty"`
	IncludingEphemeralContainers bool `json:"includingEphemeralContainers,omitempty"`
}
