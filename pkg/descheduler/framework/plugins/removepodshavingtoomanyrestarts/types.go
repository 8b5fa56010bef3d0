package removepodshavingtoomanyrestarts

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// RemovePodsHavingTooManyRestartsArgs are the upstream plugin's args.
type RemovePodsHavingTooManyRestartsArgs struct {
	metav1.TypeMeta `json:",inline"`

	Namespaces    *pluginutil.Namespaces `json:"namespaces,omitempty"`
	LabelSelector *metav1.LabelSelector  `json:"labelSelector,omitempty"`
	// PodRestartThreshold: a pod whose containers restarted this many times in total is evicted.
	PodRestartThreshold int32 `json:"podRestartThreshold,omitempty"`
	// IncludingInitContainers adds the init containers' restarts.
	IncludingInitContainers bool `json:"includingInitContainers,omitempty"`
	// States, when set, limits the plugin to pods in one of them: Running (the phase) or
	// CrashLoopBackOff (a container's waiting reason).
	States []string `json:"states,omitempty"`
}
