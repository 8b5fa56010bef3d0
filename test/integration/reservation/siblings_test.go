package reservation

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/test/harness"
	"github.com/accord-sched/accord/test/harness/inprocess"
)

// TestSiblingsLandOnTheirOwnReservations: db-0 and db-1, two pods of one StatefulSet (Parallel, a
// 10 s grace period), are migrated together: db-1 to dst-b, then, as soon as db-1 is evicted, db-0
// to dst-a. db-1
// terminates first and its replacement is created first, while both reservations are Available;
// each replacement lands on its own reservation's node (by name order, db-1 would take db-0's,
// "db-0-..." < "db-1-..."), each reservation is Bound by the replacement of the pod it was made
// for, and each PodMigration names its own replacement.
func TestSiblingsLandOnTheirOwnReservations(t *testing.T) {
	startScheduler(t)
	c := &cluster{ns: env.CreateNamespace(t, "rsv-siblings")}
	c.crNodes(t, map[string]bool{"src": true}, "src")
	old := c.statefulSetOf(t, 2, appsv1.ParallelPodManagement)
	c.crNodes(t, map[string]bool{"dst-a": true, "dst-b": true}, "dst-a", "dst-b")
	src, dstA, dstB := c.nodes[0], c.nodes[1], c.nodes[2]
	for _, p := range old {
		if p.Spec.NodeName != src {
			t.Fatalf("%s on %s, want %s", p.Name, p.Spec.NodeName, src)
		}
	}
	// Both pods of the workload may be migrating, and unavailable, at once (the default budgets allow
	// one of two).
	policy := strings.Replace(migrationPolicy(c), "evictSingleReplicaWorkloads: true\n", "evictSingleReplicaWorkloads: true\nmaxMigratingPerWorkload: 2\nmaxUnavailablePerWorkload: 2\n", 1)
	startDeschedulerWith(t, policy, inprocess.WriteFile(t, "scheduler-config.yaml", schedulerConfig), true)

	ctx := context.Background()
	want := map[string]string{"db-1": dstB, "db-0": dstA}
	for _, pod := range []string{"db-1", "db-0"} {
		pm := &schedv1alpha1.PodMigration{ObjectMeta: metav1.ObjectMeta{Name: "move-" + pod, Namespace: c.ns},
			Spec: schedv1alpha1.PodMigrationSpec{PodName: pod, TargetNode: want[pod]}}
		if _, err := env.Accord.SchedulingV1alpha1().PodMigrations(c.ns).Create(ctx, pm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// db-0's migration starts once db-1 is terminating, so that db-1 is recreated first.
		seen := map[string]bool{}
		if err := harness.WaitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			if got, err := env.Accord.SchedulingV1alpha1().PodMigrations(c.ns).Get(ctx, pm.Name, metav1.GetOptions{}); err == nil {
				if k := string(got.Status.Phase) + " " + got.Status.Reason + ": " + got.Status.Message; !seen[k] {
					seen[k] = true
					t.Logf("%s: %s", pm.Name, k)
				}
			}
			p, err := env.Client.CoreV1().Pods(c.ns).Get(ctx, pod, metav1.GetOptions{})
			return err == nil && p.DeletionTimestamp != nil, err
		}); err != nil {
			got, gerr := env.Accord.SchedulingV1alpha1().PodMigrations(c.ns).Get(ctx, pm.Name, metav1.GetOptions{})
			t.Fatalf("%s not evicted by its PodMigration: %v (PodMigration %+v %v)", pod, err, got.Status, gerr)
		}
	}
	for i, p := range old {
		name := "move-" + p.Name
		var pm *schedv1alpha1.PodMigration
		if err := harness.WaitFor(ctx, 90*time.Second, func(ctx context.Context) (bool, error) {
			got, err := env.Accord.SchedulingV1alpha1().PodMigrations(c.ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			pm = got
			return got.Status.Phase.Finished(), nil
		}); err != nil {
			t.Fatalf("PodMigration %s not finished: %v (status %+v)", name, err, pm.Status)
		}
		st := pm.Status
		t.Logf("%s: %+v", name, st)
		now, err := env.Client.CoreV1().Pods(c.ns).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("FIGURE siblings: %s migrated to %s, its replacement on %s, the migration names %q on %q (%s)\n",
			p.Name, want[p.Name], now.Spec.NodeName, st.ReplacementPod, st.ReplacementNode, st.Phase)
		if now.UID == old[i].UID || now.Spec.NodeName != want[p.Name] {
			t.Errorf("%s's replacement is on %q (new pod: %v), want its reservation's node %s", p.Name, now.Spec.NodeName, now.UID != old[i].UID, want[p.Name])
		}
		if st.Phase != schedv1alpha1.PodMigrationSucceeded || st.ReplacementPod != p.Name || st.ReplacementNode != want[p.Name] {
			t.Errorf("%s: phase %s, replacement %q on %q; want Succeeded, %s on %s", name, st.Phase, st.ReplacementPod, st.ReplacementNode, p.Name, want[p.Name])
		}
		r, err := env.Accord.SchedulingV1alpha1().Reservations(c.ns).Get(ctx, st.ReservationName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s's reservation %q: %v", name, st.ReservationName, err)
		}
		if ownerOf(r) != p.Name || r.Status.BoundPod == nil || r.Status.BoundPod.UID != now.UID {
			t.Errorf("reservation %s made for %s is bound to %+v, want the replacement %s (UID %s)", r.Name, ownerOf(r), r.Status.BoundPod, p.Name, now.UID)
		}
		if r.Spec.Owners[0].Pod == nil || r.Spec.Owners[0].Pod.UID != old[i].UID {
			t.Errorf("reservation %s does not record the UID of the pod it was made for: %+v", r.Name, r.Spec.Owners)
		}
	}
}
