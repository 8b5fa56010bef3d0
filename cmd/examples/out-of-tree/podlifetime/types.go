package podlifetime

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PodLifeTimeArgs configures PodLifeTime.
type PodLifeTimeArgs struct {
	metav1.TypeMeta `json:",inline"`

	// MaxPodLifeTimeSeconds is the age past which a pod is evicted. Default 86400 (one day).
	MaxPodLifeTimeSeconds *int64 `json:"maxPodLifeTimeSeconds,omitempty"`
	// Namespaces, when not empty, limits the plugin to these namespaces.
	Namespaces []string `json:"namespaces,omitempty"`
}
