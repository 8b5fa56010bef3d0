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
	// OwnerKinds, when set, limits the plugin to pods with an owner of one of Include's kinds, or
	// to pods without an owner of one of Exclude's kinds (one of the two).
	OwnerKinds *OwnerKinds `json:"ownerKinds,omitempty"`
	// MaxPodLifeTimeSeconds: only pods older than this are evicted.
	MaxPodLifeTimeSeconds *uint `json:"maxPodLifeTimeSeconds,omitempty"`
	// States, when set, limits the plugin to pods in one of them: a pod phase, a pod status reason, or
	// a container's waiting or terminated reason.
	States []string `json:"states,omitempty"`
	// Conditions, when set, limits the plugin to pods with a status condition that one of the
	// filters matches.
	Conditions []PodConditionFilter `json:"conditions,omitempty"`
	// ExitCodes, when set, limits the plugin to pods with a container terminated with one of these
	// exit codes (init containers too with includingInitContainers).
	ExitCodes []int32 `json:"exitCodes,omitempty"`
	// IncludingInitContainers and IncludingEphemeralContainers make their states count for states
	// (and init containers' exit codes for exitCodes).
	IncludingInitContainers      bool `json:"includingInitContainers,omitempty"`
	IncludingEphemeralContainers bool `json:"includingEphemeralContainers,omitempty"`
}

// OwnerKinds filters pods by the kinds of their owners; at most one of Include and Exclude is set.
type OwnerKinds struct {
	Include []string `json:"include,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
}

// PodConditionFilter matches a pod status condition: every field that is set must match.
type PodConditionFilter struct {
	Type   string `json:"type,omitempty"`
	Status string `json:"status,omitempty"`
	Reason string `json:"reason,omitempty"`
	// MinTimeSinceLastTransitionSeconds requires the condition to have last changed at least this
	// many seconds ago.
	MinTimeSinceLastTransitionSeconds *uint `json:"minTimeSinceLastTransitionSeconds,omitempty"`
}
