package pluginutil

import (
	corev1 "k8s.io/api/core/v1"
)

// Namespaces limits a plugin to some namespaces (Include) or keeps it away from some (Exclude); at
// most one of the two may be set. It is the upstream descheduler's `namespaces` arg.
//
// +k8s:deepcopy-gen=true
type Namespaces struct {
	Include []string `json:"include,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
}

// EvictionLimits bound one plugin's evictions in a cycle, under the policy's own limits (upstream's
// `evictionLimits` arg).
//
// +k8s:deepcopy-gen=true
type EvictionLimits struct {
	// Node bounds the plugin's evictions from one node in one cycle.
	Node *uint `json:"node,omitempty"`
}

// Percentage is a share of a node's allocatable, 0 to 100.
type Percentage float64

// ResourceThresholds maps resource names (cpu, memory, pods, extended resources) to percentages of a
// node's allocatable: the upstream descheduler's `thresholds`/`targetThresholds` type.
type ResourceThresholds map[corev1.ResourceName]Percentage
