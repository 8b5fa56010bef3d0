package reservation

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
)

// transitions counts the reservation statuses the Placer writes, in kube-scheduler's registry (its
// /metrics): placed (Available), consumed (Bound), failed to place (Failed) and expired unused
// (Expired), with the reason the status names.
var transitions = metrics.NewCounterVec(&metrics.CounterOpts{
	Namespace: "accord", Subsystem: "scheduler", Name: "reservation_transitions_total",
	Help:           "Reservation statuses written by accord-scheduler's reservation placer, by phase (Available, Bound, Failed, Expired) and reason (Placed, Consumed, Unschedulable, NoProfile, Unsupported, NodeNoLongerFits, TTLExpired).",
	StabilityLevel: metrics.ALPHA,
}, []string{"phase", "reason"})

var registerOnce sync.Once

// registerMetrics registers transitions with kube-scheduler's registry once, each phase and reason
// the Placer writes starting at 0 (so a rate sees the first one).
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(transitions)
		for phase, reasons := range map[schedv1alpha1.ReservationPhase][]string{
			schedv1alpha1.ReservationAvailable: {ReasonPlaced},
			schedv1alpha1.ReservationBound:     {ReasonConsumed},
			schedv1alpha1.ReservationFailed:    {ReasonUnschedulable, ReasonNoProfile, ReasonUnsupported, ReasonNodeNoLongerFits},
			schedv1alpha1.ReservationExpired:   {ReasonTTLExpired},
		} {
			for _, reason := range reasons {
				transitions.WithLabelValues(string(phase), reason)
			}
		}
	})
}
