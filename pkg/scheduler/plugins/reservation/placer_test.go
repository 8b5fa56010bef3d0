package reservation

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
)

// TestPlacerConsumerWaitsForThePredecessor: a Placer without the ledger's record of a consumption
// (the pod was placed by a scheduler cycle before a restart of the leader, or by another
// scheduler) finds r's consumer among the owner pods on r's node. A ReplicaSet sibling running
// there, created after r (the replacement of another pod migrated at once), is not r's
// consumer while the pod r was made for runs: r waits for that pod's eviction, which would
// otherwise find r Bound and give up. Found by test/simulation (reservation-first, two pods of one
// workload migrated at once).
func TestPlacerConsumerWaitsForThePredecessor(t *testing.T) {
	old := pod("web-a", t0.Add(-time.Hour), "1", "rs-uid")
	old.UID = "web-a-uid"
	old.Spec.NodeName = "n1"
	r := rsv("web-a-1", "n2", schedv1alpha1.ReservationAvailable, "1",
		schedv1alpha1.ReservationOwner{Pod: &schedv1alpha1.ReservationPodOwner{Name: old.Name, UID: old.UID}},
		schedv1alpha1.ReservationOwner{Controller: &schedv1alpha1.ReservationControllerOwner{Kind: "ReplicaSet", Name: "rs", UID: "rs-uid"}})
	sibling := pod("web-b2", t0.Add(time.Second), "1", "rs-uid")
	sibling.UID = "web-b2-uid"
	sibling.Spec.NodeName = "n2"
	pods := podIndexer(t, old, sibling)
	p := &Placer{pods: corelisters.NewPodLister(pods), indexer: indexer(t, r), ledger: NewLedger()}
	if c := p.consumer(r); c != nil {
		t.Fatalf("consumer while %s runs: %s, want none (the reservation waits for its eviction)", old.Name, c.Name)
	}
	evicted := old.DeepCopy()
	evicted.DeletionTimestamp = new(metav1.NewTime(t0.Add(time.Second)))
	if err := pods.Update(evicted); err != nil {
		t.Fatal(err)
	}
	if c := p.consumer(r); c == nil || c.Name != sibling.Name {
		t.Fatalf("consumer once %s is terminating: %v, want the sibling %s", old.Name, c, sibling.Name)
	}
}

// TestPlacerConsumerNotAPodOfTheReservationsSecond: creation times have whole seconds. A sibling
// already running on r's node, created in r's second (it may have run there before r was placed,
// its room counted beside r's), never becomes r's consumer, even once the pod r was made for is
// evicted: r keeps its room for that pod's replacement, which, created a second later, is the
// consumer. Seen in test/simulation (a descheduler killed while waiting for its reservations: its
// reservations and the next one's were all Bound, two of them to siblings placed before).
func TestPlacerConsumerNotAPodOfTheReservationsSecond(t *testing.T) {
	old := pod("web-a", t0.Add(-time.Hour), "1", "rs-uid")
	old.UID = "web-a-uid"
	old.Spec.NodeName = "n1"
	old.DeletionTimestamp = new(metav1.NewTime(t0.Add(time.Second)))
	r := rsv("web-a-1", "n2", schedv1alpha1.ReservationAvailable, "1",
		schedv1alpha1.ReservationOwner{Pod: &schedv1alpha1.ReservationPodOwner{Name: old.Name, UID: old.UID}},
		schedv1alpha1.ReservationOwner{Controller: &schedv1alpha1.ReservationControllerOwner{Kind: "ReplicaSet", Name: "rs", UID: "rs-uid"}})
	r.CreationTimestamp = metav1.NewTime(t0.Add(300 * time.Millisecond))
	sibling := pod("web-b", t0.Add(100*time.Millisecond), "1", "rs-uid")
	sibling.UID = "web-b-uid"
	sibling.Spec.NodeName = "n2"
	pods := podIndexer(t, old, sibling)
	p := &Placer{pods: corelisters.NewPodLister(pods), indexer: indexer(t, r), ledger: NewLedger()}
	if c := p.consumer(r); c != nil {
		t.Fatalf("consumer: %s, created in the reservation's second and placed on its node; want none", c.Name)
	}
	replacement := pod("web-c", t0.Add(time.Second), "1", "rs-uid")
	replacement.UID = "web-c-uid"
	replacement.Spec.NodeName = "n2"
	if err := pods.Add(replacement); err != nil {
		t.Fatal(err)
	}
	if c := p.consumer(r); c == nil || c.Name != replacement.Name {
		t.Fatalf("consumer: %v, want the replacement %s (created a second after the reservation)", c, replacement.Name)
	}
}

// podIndexer is a pod store holding pods, for a Placer's pod lister.
func podIndexer(t *testing.T, pods ...*corev1.Pod) cache.Indexer {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range pods {
		if err := idx.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	return idx
}
