package reservation

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/testutil"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	accordfake "github.com/accord-sched/accord/pkg/generated/clientset/versioned/fake"
)

// A status the Placer writes is counted by its phase and reason; one it could not write is not.
func TestTransitionsCounted(t *testing.T) {
	registerMetrics()
	r := &schedv1alpha1.Reservation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"}}
	p := &Placer{accord: accordfake.NewSimpleClientset(r)}
	count := func(phase schedv1alpha1.ReservationPhase, reason string) float64 {
		t.Helper()
		v, err := testutil.GetCounterMetricValue(transitions.WithLabelValues(string(phase), reason))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	failed0, expired0 := count(schedv1alpha1.ReservationFailed, ReasonUnschedulable), count(schedv1alpha1.ReservationExpired, ReasonTTLExpired)
	ctx := context.Background()
	if err := p.setStatus(ctx, r, schedv1alpha1.ReservationFailed, ReasonUnschedulable, "0/3 nodes are available", "", nil); err != nil {
		t.Fatal(err)
	}
	if err := p.setStatus(ctx, r, schedv1alpha1.ReservationExpired, ReasonTTLExpired, "no owner pod was placed", "n1", nil); err != nil {
		t.Fatal(err)
	}
	gone := &schedv1alpha1.Reservation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gone"}}
	if err := p.setStatus(ctx, gone, schedv1alpha1.ReservationExpired, ReasonTTLExpired, "", "", nil); err != nil {
		t.Fatal(err)
	}
	if got := count(schedv1alpha1.ReservationFailed, ReasonUnschedulable) - failed0; got != 1 {
		t.Errorf("Failed/Unschedulable counted %v times, want 1", got)
	}
	if got := count(schedv1alpha1.ReservationExpired, ReasonTTLExpired) - expired0; got != 1 {
		t.Errorf("Expired/TTLExpired counted %v times, want 1 (the reservation that is gone is not counted)", got)
	}
}
