package highnodeutilization

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// HighNodeUtilizationArgs are the upstream plugin's args.
type HighNodeUtilizationArgs struct {
	metav1.TypeMeta `json:",inline"`

	// Thresholds: a node under all of them is underutilized and is emptied.
	Thresholds pluginutil.ResourceThresholds `json:"thresholds,omitempty"`
	// NumberOfNodes: act only when more than this many nodes are underutilized.
	NumberOfNodes int `json:"numberOfNodes,omitempty"`
	// EvictableNamespaces limits the pods that may be evicted.
	EvictableNamespaces *pluginutil.Namespaces `json:"evictableNamespaces,omitempty"`
	// EvictionModes change which pods may be evicted (OnlyThresholdingResources).
	EvictionModes []EvictionMode `json:"evictionModes,omitempty"`
}

// EvictionMode changes which pods the plugin may evict.
type EvictionMode string

// EvictionModeOnlyThresholdingResources: only pods with a request (in a container or an init
// container) for one of the resources of thresholds are evicted.
const EvictionModeOnlyThresholdingResources EvictionMode = "OnlyThresholdingResources"
