package reservationfirst

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ReservationFirstArgs configures the ReservationFirst evict plugin.
type ReservationFirstArgs struct {
	metav1.TypeMeta `json:",inline"`

	// SchedulerNames are the schedulers (spec.schedulerName) whose pods take the reservation path:
	// profiles of accord-scheduler that enable its Reservation plugin. Pods of other schedulers are
	// evicted directly. Default [accord-scheduler].
	SchedulerNames []string `json:"schedulerNames,omitempty"`
	// PlacementTimeout bounds the wait for accord-scheduler to place a reservation before the pod
	// is left alone and the reservation deleted. Default 30s.
	PlacementTimeout *metav1.Duration `json:"placementTimeout,omitempty"`
	// TTLMargin is added to the pod's termination grace period and the placement timeout to make the
	// reservation's TTL: the time its replacement has to be created and placed into it. Default 2m.
	TTLMargin *metav1.Duration `json:"ttlMargin,omitempty"`
}

// SetDefaults_ReservationFirstArgs fills in the defaults.
func SetDefaults_ReservationFirstArgs(a *ReservationFirstArgs) {
	if len(a.SchedulerNames) == 0 {
		a.SchedulerNames = []string{SchedulerName}
	}
	if a.PlacementTimeout == nil {
		a.PlacementTimeout = &metav1.Duration{Duration: PlacementTimeout}
	}
	if a.TTLMargin == nil {
		a.TTLMargin = &metav1.Duration{Duration: TTLMargin}
	}
}

// SetDefaults implements framework.ArgsDefaulter.
func (a *ReservationFirstArgs) SetDefaults() { SetDefaults_ReservationFirstArgs(a) }

// ValidateReservationFirstArgs checks the args; paths are below path.
func ValidateReservationFirstArgs(path *field.Path, a *ReservationFirstArgs) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, n := range a.SchedulerNames {
		for _, msg := range validation.IsDNS1123Subdomain(n) {
			errs = append(errs, field.Invalid(path.Child("schedulerNames").Index(i), n, msg))
		}
		if seen[n] {
			errs = append(errs, field.Duplicate(path.Child("schedulerNames").Index(i), n))
		}
		seen[n] = true
	}
	if a.PlacementTimeout != nil && a.PlacementTimeout.Duration <= 0 {
		errs = append(errs, field.Invalid(path.Child("placementTimeout"), a.PlacementTimeout.Duration.String(), "must be positive"))
	}
	if a.TTLMargin != nil && a.TTLMargin.Duration < time.Second {
		errs = append(errs, field.Invalid(path.Child("ttlMargin"), a.TTLMargin.Duration.String(), "must be at least 1s"))
	}
	return errs
}

// Validate implements framework.ArgsValidator.
func (a *ReservationFirstArgs) Validate(path *field.Path) field.ErrorList {
	return ValidateReservationFirstArgs(path, a)
}
