package reservation

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/scheduler/plugins/reservation"
	"github.com/accord-sched/accord/pkg/scheduler/server"
	"github.com/accord-sched/accord/test/harness"
	"github.com/accord-sched/accord/test/harness/inprocess"
)

// TestReservationLifecycle, with accord-scheduler's --reservation-retention=3s: a reservation
// placed on a node that is then deleted fails at once (NodeDeleted); one whose ReplicaSet is
// deleted fails (OwnerGone) at the collector's next owner check; each is deleted 3 s after it
// finished; the CRD refuses a TTL over the ceiling.
func TestReservationLifecycle(t *testing.T) {
	inprocess.SchedulerWith(t, env, inprocess.WriteFile(t, "scheduler-config.yaml", schedulerConfig), &server.AccordOptions{ReservationRetention: 3 * time.Second})
	c := newCluster(t, "rsv-life", 2)
	ctx := context.Background()

	// The node of a placed reservation is deleted: Failed at once, naming the node.
	c.reserve(t, "on-doomed", "nobody", c.spec("1", c.nodes[1]), time.Minute)
	placed := c.waitPhase(t, "on-doomed", schedv1alpha1.ReservationAvailable, 20*time.Second)
	if err := env.Client.CoreV1().Nodes().Delete(ctx, placed.Status.NodeName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	failed := c.waitPhase(t, "on-doomed", schedv1alpha1.ReservationFailed, 10*time.Second)
	t.Logf("FIGURE reservation on a deleted node: %s (%s) %s after the node's deletion", failed.Status.Reason, failed.Status.Message, time.Since(deleted).Round(time.Millisecond))
	if failed.Status.Reason != reservation.ReasonNodeDeleted || !strings.Contains(failed.Status.Message, placed.Status.NodeName) || failed.Status.CompletionTime == nil {
		t.Errorf("status %+v, want %s naming %s with a completion time", failed.Status, reservation.ReasonNodeDeleted, placed.Status.NodeName)
	}
	// Deleted once the retention has passed.
	waitGone(t, c, "on-doomed", 15*time.Second)
	t.Logf("FIGURE failed reservation deleted %s after its node's deletion (retention 3s)", time.Since(deleted).Round(time.Millisecond))

	// The workload a reservation was made for is deleted (no garbage collector runs here): freed.
	labels := map[string]string{"app": "gone"}
	rs, err := env.Client.AppsV1().ReplicaSets(c.ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: c.ns},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: c.spec("1")}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := &schedv1alpha1.Reservation{
		ObjectMeta: metav1.ObjectMeta{Name: "for-gone", Namespace: c.ns,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID}}},
		Spec: schedv1alpha1.ReservationSpec{Template: corev1.PodTemplateSpec{Spec: c.spec("1")}, TTL: &metav1.Duration{Duration: 5 * time.Minute},
			Owners: []schedv1alpha1.ReservationOwner{{Controller: &schedv1alpha1.ReservationControllerOwner{Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID}}}},
	}
	if _, err := env.Accord.SchedulingV1alpha1().Reservations(c.ns).Create(ctx, r, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitPhase(t, "for-gone", schedv1alpha1.ReservationAvailable, 20*time.Second)
	if err := env.Client.AppsV1().ReplicaSets(c.ns).Delete(ctx, rs.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone := time.Now()
	freed := c.waitPhase(t, "for-gone", schedv1alpha1.ReservationFailed, reservation.OwnerCheckPeriod+15*time.Second)
	t.Logf("FIGURE reservation of a deleted ReplicaSet: %s (%s) %s after the deletion", freed.Status.Reason, freed.Status.Message, time.Since(gone).Round(time.Millisecond))
	if freed.Status.Reason != reservation.ReasonOwnerGone || !strings.Contains(freed.Status.Message, "ReplicaSet gone was deleted") {
		t.Errorf("status %+v, want %s naming ReplicaSet gone", freed.Status, reservation.ReasonOwnerGone)
	}
	waitGone(t, c, "for-gone", 15*time.Second)

	// The TTL has a ceiling.
	r = &schedv1alpha1.Reservation{ObjectMeta: metav1.ObjectMeta{Name: "forever", Namespace: c.ns},
		Spec: schedv1alpha1.ReservationSpec{Template: corev1.PodTemplateSpec{Spec: c.spec("1")}, TTL: &metav1.Duration{Duration: 2 * time.Hour},
			Owners: []schedv1alpha1.ReservationOwner{{Pod: &schedv1alpha1.ReservationPodOwner{Name: "x"}}}}}
	_, err = env.Accord.SchedulingV1alpha1().Reservations(c.ns).Create(ctx, r, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.ttl") || !strings.Contains(err.Error(), "at most 1h") {
		t.Errorf("a 2h TTL: %v, want Invalid naming spec.ttl and the 1h ceiling", err)
	}
}

// waitGone waits until the reservation is deleted.
func waitGone(t *testing.T, c *cluster, name string, timeout time.Duration) {
	t.Helper()
	if err := harness.WaitFor(context.Background(), timeout, func(ctx context.Context) (bool, error) {
		_, err := env.Accord.SchedulingV1alpha1().Reservations(c.ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}); err != nil {
		t.Fatalf("reservation %s not deleted: %v", name, err)
	}
}
