package v1alpha1

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// DefaultReservationTTL is how long a Reservation without spec.ttl holds its place.
const DefaultReservationTTL = 5 * time.Minute

// MaxReservationTTL is the ceiling of spec.ttl (the CRD rejects a longer one): no reservation holds
// room longer than this, whatever the grace period of the pod it was made for.
const MaxReservationTTL = time.Hour

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=rsv,categories=accord
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`,description="Pending, Available, Bound, Expired or Failed"
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.nodeName`,description="The node the place is held on"
// +kubebuilder:printcolumn:name="Pod",type=string,JSONPath=`.status.boundPod.name`,description="The pod that consumed the reservation"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Reservation holds room on a node for a pod that does not exist yet (typically the replacement of
// a pod about to be evicted). accord-scheduler places it as it would place a pod built from
// spec.template (same profile, same filters and scores), then counts it as used capacity on that
// node for every other pod until a pod matching spec.owners is placed into it, or spec.ttl passes.
type Reservation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ReservationSpec `json:"spec"`
	// +optional
	Status ReservationStatus `json:"status,omitempty"`
}

// ReservationSpec is the pod a Reservation stands for, who may use it and for how long.
type ReservationSpec struct {
	// Template is the pod the reservation stands for: its containers' resource requests and its
	// scheduling constraints (schedulerName, which picks the scheduler profile, nodeSelector,
	// affinity, tolerations, topology spread constraints, priority). The scheduler places the
	// reservation as it would place this pod.
	Template corev1.PodTemplateSpec `json:"template"`

	// Owners are the pods that may consume the reservation: a pod that matches any of them is placed
	// on the reservation's node and the reservation becomes Bound.
	// +kubebuilder:validation:MinItems=1
	// +listType=atomic
	Owners []ReservationOwner `json:"owners"`

	// TTL is how long after its creation an unconsumed reservation holds its place; then it is
	// Expired and its room is free again. Default 300s, at most 1h (MaxReservationTTL).
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s') && duration(self) <= duration('1h')",message="must be positive and at most 1h"
	TTL *metav1.Duration `json:"ttl,omitempty"`
}

// ReservationOwner matches the pods that may consume a reservation. Exactly one field is set.
// +kubebuilder:validation:XValidation:rule="has(self.pod) != has(self.controller)",message="set exactly one of pod and controller"
type ReservationOwner struct {
	// Pod matches the pod of this name in the reservation's namespace (a StatefulSet's replacement
	// keeps its predecessor's name).
	// +optional
	Pod *ReservationPodOwner `json:"pod,omitempty"`
	// Controller matches any pod in the reservation's namespace whose controller (the owner
	// reference with controller: true) has this UID (a ReplicaSet's replacement).
	// +optional
	Controller *ReservationControllerOwner `json:"controller,omitempty"`
}

// ReservationPodOwner names a pod: the pod the reservation was made for (its replacement consumes
// it first; a StatefulSet's replacement keeps the name, its ordinal identity).
type ReservationPodOwner struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// UID is the UID of the pod the reservation was made for (the pod being moved). That pod itself
	// never consumes the reservation, only a pod of the same name created after it (its
	// replacement).
	// +optional
	UID types.UID `json:"uid,omitempty"`
}

// ReservationControllerOwner identifies a pod's controller.
// +kubebuilder:validation:XValidation:rule="size(self.uid) > 0",message="uid must not be empty"
type ReservationControllerOwner struct {
	// Kind and Name describe the controller, for people; UID is what matches.
	// +optional
	Kind string `json:"kind,omitempty"`
	// +optional
	Name string    `json:"name,omitempty"`
	UID  types.UID `json:"uid"`
}

// ReservationPhase is where a Reservation is in its life.
// +kubebuilder:validation:Enum=Pending;Available;Bound;Expired;Failed
type ReservationPhase string

const (
	// ReservationPending: not placed yet.
	ReservationPending ReservationPhase = "Pending"
	// ReservationAvailable: placed on status.nodeName, holding room there.
	ReservationAvailable ReservationPhase = "Available"
	// ReservationBound: an owner pod was placed into it (status.boundPod); it holds nothing any more.
	ReservationBound ReservationPhase = "Bound"
	// ReservationExpired: its TTL passed before an owner consumed it; it holds nothing any more.
	ReservationExpired ReservationPhase = "Expired"
	// ReservationFailed: it could not be placed (status.reason and status.message say why).
	ReservationFailed ReservationPhase = "Failed"
)

// ReservationStatus is what the scheduler did with a Reservation.
type ReservationStatus struct {
	// +optional
	Phase ReservationPhase `json:"phase,omitempty"`
	// Reason is a one-word cause of the phase (Unschedulable, NoProfile, TTLExpired...).
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message is the scheduler's explanation, for a Failed reservation its "0/N nodes are
	// available: ..." message.
	// +optional
	Message string `json:"message,omitempty"`
	// NodeName is the node the room is held on, once placed.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// ExpireTime is when an unconsumed reservation expires (creation time plus spec.ttl).
	// +optional
	ExpireTime *metav1.Time `json:"expireTime,omitempty"`
	// BoundPod is the owner pod that consumed the reservation.
	// +optional
	BoundPod *ReservationBoundPod `json:"boundPod,omitempty"`
	// CompletionTime is when accord-scheduler's reservation collector found the reservation
	// finished (Bound, Expired or Failed); it deletes the reservation --reservation-retention later.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// Finished reports whether the phase is final (Bound, Expired or Failed): the reservation holds
// nothing any more.
func (p ReservationPhase) Finished() bool {
	return p == ReservationBound || p == ReservationExpired || p == ReservationFailed
}

// ReservationBoundPod identifies the pod that consumed a reservation.
type ReservationBoundPod struct {
	Name string    `json:"name"`
	UID  types.UID `json:"uid"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// ReservationList is a list of Reservations.
type ReservationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Reservation `json:"items"`
}
