package reservation

import (
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
