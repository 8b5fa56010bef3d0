package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=pmig,categories=accord
// +kubebuilder:printcolumn:name="Pod",type=string,JSONPath=`.spec.podName`,description="The pod to move"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`,description="Pending, Running, Succeeded, Failed or Aborted"
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.status.sourceNode`,description="The node the pod ran on"
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.status.targetNode`,description="The node its replacement is reserved on (spec.targetNode or the predicted node)"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// PodMigration asks accord-descheduler to move one pod, reservation-first: the place of its
// replacement (spec.targetNode, or the node the scheduler simulation predicts) is reserved, the pod
// is evicted only once the reservation is placed, and the replacement is placed into it. The move
// runs under the descheduler profile's eviction limits, workload budgets, PodDisruptionBudgets
// (Eviction API) and eviction windows.
type PodMigration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PodMigrationSpec `json:"spec"`
	// +optional
	Status PodMigrationStatus `json:"status,omitempty"`
}

// PodMigrationSpec names the pod to move and, optionally, how, where and by when.
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode != 'EvictDirectly' || !has(self.targetNode) || size(self.targetNode) == 0",message="targetNode needs mode ReservationFirst: EvictDirectly reserves nothing, so it cannot send the pod to a node"
type PodMigrationSpec struct {
	// Mode is how the pod is moved. ReservationFirst (the default): the replacement's place is
	// reserved (accord-scheduler places a Reservation) before the pod is evicted, and the
	// migration succeeds once the replacement is placed into it. EvictDirectly: the pod is evicted
	// at once, under the same limits, budgets, windows and PodDisruptionBudgets, with no
	// reservation; the migration succeeds once the pod is evicted, and the scheduler places the
	// replacement wherever it fits.
	// +optional
	// +kubebuilder:validation:Enum=ReservationFirst;EvictDirectly
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="mode is immutable"
	Mode PodMigrationMode `json:"mode,omitempty"`
	// PodName is the pod to move, in the PodMigration's namespace. It must be placed by a scheduler
	// the descheduler reserves for (accord-scheduler) and have a controller that recreates it
	// (a ReplicaSet, a StatefulSet...).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="podName is immutable"
	PodName string `json:"podName"`
	// TargetNode, when set, is where the replacement must go: it must pass the scheduler's Filter
	// for the pod (in the descheduler's scheduler simulation), else the migration fails with the
	// scheduler's reason. Empty: the node the simulation predicts.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="targetNode is immutable"
	TargetNode string `json:"targetNode,omitempty"`
	// Deadline, when set, is when a migration that has not evicted its pod yet gives up (Aborted,
	// reason DeadlineExceeded): a move held by a closed eviction window, a limit, a budget or a
	// PodDisruptionBudget is retried (with a growing back-off) until then. Without it such a
	// migration is retried for DefaultPodMigrationDeadline after its creation. At most
	// MaxPodMigrationDeadline (1h) after the creation: a later one fails the migration at once
	// (reason Invalid, the field named).
	// +optional
	Deadline *metav1.Time `json:"deadline,omitempty"`
	// TTLSecondsAfterFinished, when set, deletes the PodMigration that long after it finished
	// (Succeeded, Failed or Aborted).
	// +optional
	// +kubebuilder:validation:Minimum=0
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// PodMigrationMode is how a PodMigration moves its pod.
type PodMigrationMode string

const (
	// PodMigrationReservationFirst reserves the replacement's place before evicting (the default).
	PodMigrationReservationFirst PodMigrationMode = "ReservationFirst"
	// PodMigrationEvictDirectly evicts without a reservation.
	PodMigrationEvictDirectly PodMigrationMode = "EvictDirectly"
)

// PodMigrationPhase is where a PodMigration is in its life.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed;Aborted
type PodMigrationPhase string

const (
	// PodMigrationPending: not started, or held (status.reason says by what) and retried.
	PodMigrationPending PodMigrationPhase = "Pending"
	// PodMigrationRunning: the pod was evicted into a placed reservation; waiting for its
	// replacement to be placed into it.
	PodMigrationRunning PodMigrationPhase = "Running"
	// PodMigrationSucceeded: the replacement (status.replacementPod) is on status.replacementNode.
	PodMigrationSucceeded PodMigrationPhase = "Succeeded"
	// PodMigrationFailed: the pod cannot be moved as asked (status.reason and status.message say
	// why: the scheduler's reason for an impossible target, a reservation that could not be placed,
	// a pod that does not exist...). Nothing was evicted, or the replacement did not land.
	PodMigrationFailed PodMigrationPhase = "Failed"
	// PodMigrationAborted: given up before its pod was evicted (its deadline passed).
	PodMigrationAborted PodMigrationPhase = "Aborted"
)

// DefaultPodMigrationDeadline is how long after its creation a PodMigration without
// spec.deadline may wait before its pod is evicted.
const DefaultPodMigrationDeadline = 10 * time.Minute

// MaxPodMigrationDeadline is the ceiling of spec.deadline, counted from the migration's creation.
const MaxPodMigrationDeadline = time.Hour

// PodMigrationStatus is the progress of a PodMigration.
type PodMigrationStatus struct {
	// +optional
	Phase PodMigrationPhase `json:"phase,omitempty"`
	// Reason is a one-word cause of the phase (Reserving, Evicted, Held, Unschedulable,
	// ReservationNotPlaced, PodNotFound, DeadlineExceeded, DryRun...).
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message explains the phase; for a target the scheduler refuses, its "0/N nodes are
	// available: ..." message.
	// +optional
	Message string `json:"message,omitempty"`
	// PodUID is the UID of the pod being moved, written before the pod is evicted: a migration
	// whose pod now has another UID (a StatefulSet's replacement keeps the name) never evicts it.
	// +optional
	PodUID types.UID `json:"podUID,omitempty"`
	// SourceNode is the node the pod ran on.
	// +optional
	SourceNode string `json:"sourceNode,omitempty"`
	// TargetNode is spec.targetNode, or the node the scheduler simulation predicted.
	// +optional
	TargetNode string `json:"targetNode,omitempty"`
	// ReservationName is the Reservation (same namespace) holding the replacement's place.
	// +optional
	ReservationName string `json:"reservationName,omitempty"`
	// ReplacementPod and ReplacementNode are the pod placed into the reservation and its node.
	// +optional
	ReplacementPod string `json:"replacementPod,omitempty"`
	// +optional
	ReplacementNode string `json:"replacementNode,omitempty"`
	// StartTime is when the descheduler first acted on the migration; EvictionTime when it evicted
	// the pod; CompletionTime when the migration finished.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	EvictionTime *metav1.Time `json:"evictionTime,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// Finished reports whether the phase is final (Succeeded, Failed or Aborted).
func (p PodMigrationPhase) Finished() bool {
	return p == PodMigrationSucceeded || p == PodMigrationFailed || p == PodMigrationAborted
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// PodMigrationList is a list of PodMigrations.
type PodMigrationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []PodMigration `json:"items"`
}

// ModeOrDefault is spec.mode, ReservationFirst when empty.
func (s *PodMigrationSpec) ModeOrDefault() PodMigrationMode {
	if s.Mode == "" {
		return PodMigrationReservationFirst
	}
	return s.Mode
}
