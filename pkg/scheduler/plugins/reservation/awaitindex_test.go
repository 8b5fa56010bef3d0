package reservation

import (
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/scheduler/crcache"
)

// The placer's ClusterScopedResource handler waits for the NodeIndex to have the CR it was given
// (awaitIndex): it wakes as the index's handler sets it, not at a poll, so no time passes (on
// synctest's clock) and the recheck it queues comes before whatever follows the event. Before, it
// slept a millisecond between looks, and when the index's handler ran second the recheck came
// after the next thing that moved the clock (a seeded simulation did not reproduce its trace).
// It gives up at its timeout when the index never gets the CR.
func TestAwaitIndexWakesWithTheIndex(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := crcache.NewNodeIndex()
		handler := x.ClusterScopedResourceHandler()
		cr := &schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
			Spec: schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: map[corev1.ResourceName]bool{"example.com/gpu": false}}}
		has := func(d *crcache.NodeData) bool { return d != nil && d.CR == cr }
		// The wait is under way (synctest.Wait) before the index's handler runs.
		start := time.Now()
		var ok bool
		var waited time.Duration
		done := make(chan struct{})
		go func() {
			defer close(done)
			ok = awaitIndex(x, crcache.CatchUpTimeout, has, "n1")
			waited = time.Since(start)
		}()
		synctest.Wait()
		handler.OnAdd(cr, false)
		<-done
		if !ok {
			t.Fatal("awaitIndex gave up though the index got the CR")
		}
		if waited != 0 {
			t.Fatalf("awaitIndex returned %s after the index got the CR, want at once", waited)
		}
		other := cr.DeepCopy()
		if awaitIndex(x, crcache.CatchUpTimeout, func(d *crcache.NodeData) bool { return d != nil && d.CR == other }, "n1") {
			t.Fatal("awaitIndex reported a CR the index never got")
		}
		if waited := time.Since(start); waited != crcache.CatchUpTimeout {
			t.Fatalf("awaitIndex gave up after %s, want its timeout %s", waited, crcache.CatchUpTimeout)
		}
	})
}

// The placer's ClusterScopedResource handler waits for the NodeIndex to hold what the informer's
// store holds now (indexHolds), not the object of the event it was given: an event that is stale by
// the time the handler runs (the CR changed again; the store and the index hold the newer one)
// does not wait at all, and a current one waits until the index's handler has it. Before, the
// handler waited for the index to have the event's spec: a stale event waited the whole
// CatchUpTimeout, every later event of the informer behind it, and a reservation on a node whose CR
// had just stopped fitting stayed Available that long (the simulation's scenario
// reservation-first-node-stops-fitting failed 3 runs in 20).
func TestIndexHoldsTheStoresCR(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := crcache.NewNodeIndex()
		handler := x.ClusterScopedResourceHandler()
		store := cache.NewStore(cache.MetaNamespaceKeyFunc)
		cr := func(gpu bool) *schedv1alpha1.ClusterScopedResource {
			return &schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
				Spec: schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: map[corev1.ResourceName]bool{"example.com/gpu": gpu}}}
		}
		stale, newer := cr(true), cr(false)
		// The store and the index hold the newer CR; the handler is given the stale event.
		if err := store.Add(newer); err != nil {
			t.Fatal(err)
		}
		handler.OnAdd(newer, false)
		start := time.Now()
		if !awaitIndex(x, crcache.CatchUpTimeout, indexHolds(store, stale.Name), stale.Name) || time.Since(start) != 0 {
			t.Fatalf("a stale event waited %s for the index, want no wait (it holds the store's CR)", time.Since(start))
		}
		// A newer CR in the store, not yet in the index: the wait ends as the index's handler runs.
		newest := cr(true)
		if err := store.Update(newest); err != nil {
			t.Fatal(err)
		}
		var ok bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			ok = awaitIndex(x, crcache.CatchUpTimeout, indexHolds(store, newest.Name), newest.Name)
		}()
		synctest.Wait()
		handler.OnUpdate(newer, newest)
		<-done
		if !ok || time.Since(start) != 0 {
			t.Fatalf("awaitIndex: %t after %s, want true at once when the index gets the store's CR", ok, time.Since(start))
		}
		// Deleted from the store: the index must hold no CR for the node.
		if err := store.Delete(newest); err != nil {
			t.Fatal(err)
		}
		if indexHolds(store, "n1")(x.Get("n1")) {
			t.Fatal("indexHolds: true though the index still has a CR the store no longer holds")
		}
	})
}
