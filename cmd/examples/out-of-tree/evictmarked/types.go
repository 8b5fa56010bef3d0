package evictmarked

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// +k8s:deepcopy-gen=true
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// EvictMarkedArgs configures EvictMarked.
type EvictMarkedArgs struct {
	metav1.TypeMeta `json:",inline"`

	// LabelKey marks a pod for eviction when its value is "true". Default accord.dev/evict.
	LabelKey string `json:"labelKey,omitempty"`
	// Namespaces, when not empty, limits the plugin to these namespaces.
	Namespaces []string `json:"namespaces,omitempty"`
}
