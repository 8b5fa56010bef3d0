package crcache

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	accordfake "github.com/accord-sched/accord/pkg/generated/clientset/versioned/fake"
	accordinformers "github.com/accord-sched/accord/pkg/generated/informers/externalversions"
)

// TestReservationsTwoCachesOneFactory: the descheduler builds one scheduler simulation per profile,
// each with its own Cache over the descheduler's informer factory. The second Cache to ask for
// Reservations finds the indexes the first added instead of failing with an indexer conflict (which
// stopped accord-descheduler at start when two profiles simulated a configuration with the
// Reservation plugin), and both read the same indexed informer.
func TestReservationsTwoCachesOneFactory(t *testing.T) {
	in := &schedv1alpha1.Reservation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r1"},
		Spec:   schedv1alpha1.ReservationSpec{Owners: []schedv1alpha1.ReservationOwner{{Pod: &schedv1alpha1.ReservationPodOwner{Name: "web-0"}}}},
		Status: schedv1alpha1.ReservationStatus{Phase: schedv1alpha1.ReservationAvailable, NodeName: "node-1"}}
	factory := accordinformers.NewSharedInformerFactory(accordfake.NewSimpleClientset(in), 0) //nolint:staticcheck // as TestTypeEventInformersReservations
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first, second := NewForFactory(factory, nil), NewForFactory(factory, nil)
	if _, err := first.Reservations(ctx, nil); err != nil {
		t.Fatalf("first Cache: %v", err)
	}
	inf, err := second.Reservations(ctx, nil)
	if err != nil {
		t.Fatalf("second Cache over the same factory: %v", err)
	}
	factory.Start(ctx.Done())
	defer func() { cancel(); factory.Shutdown() }()
	factory.WaitForCacheSync(ctx.Done())
	for _, idx := range []struct{ name, key string }{{IndexReservationNode, "node-1"}, {IndexReservationOwner, OwnerPodKey("ns", "web-0")}} {
		got, err := inf.Informer().GetIndexer().ByIndex(idx.name, idx.key)
		if err != nil || len(got) != 1 {
			t.Errorf("index %s[%s] = %d objects (%v), want r1", idx.name, idx.key, len(got), err)
		}
	}
}
