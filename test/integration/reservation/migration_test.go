package reservation

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/podmigration"
	"github.com/accord-sched/accord/test/harness"
	"github.com/accord-sched/accord/test/harness/inprocess"
)

// migrate creates a PodMigration of db-0 (to target, when set) and waits, at most timeout, until it
// is in a final phase; it returns it.
func (c *cluster) migrate(t *testing.T, name, target string, timeout time.Duration) *schedv1alpha1.PodMigration {
	t.Helper()
	c.createMigration(t, name, "db-0", target, "")
	return c.waitMigration(t, name, timeout)
}

// migrationPolicy runs the PodMigration controller with ReservationFirst.
func migrationPolicy(c *cluster) string {
	return rsvPolicy(c, podmigration.Name, "ReservationFirst", "")
}

// TestPodMigrationMovesItsPod: a PodMigration of db-0 to dst reserves dst, evicts db-0 and reports
// Succeeded once its replacement is placed into the reservation on dst.
func TestPodMigrationMovesItsPod(t *testing.T) {
	startScheduler(t)
	c := &cluster{ns: env.CreateNamespace(t, "rsv-migrate")}
	c.crNodes(t, map[string]bool{"src": true}, "src")
	old := c.statefulSet(t)
	c.crNodes(t, map[string]bool{"dst": true}, "dst")
	src, dst := c.nodes[0], c.nodes[1]
	if old.Spec.NodeName != src {
		t.Fatalf("db-0 on %s, want %s", old.Spec.NodeName, src)
	}
	m := startDeschedulerWith(t, migrationPolicy(c), inprocess.WriteFile(t, "scheduler-config.yaml", schedulerConfig), true)

	pm := c.migrate(t, "move-db", dst, 60*time.Second)
	st := pm.Status
	t.Logf("PodMigration status: %+v", st)
	if st.Phase != schedv1alpha1.PodMigrationSucceeded {
		t.Fatalf("phase %s (%s: %s), want Succeeded", st.Phase, st.Reason, st.Message)
	}
	if st.SourceNode != src || st.TargetNode != dst || st.ReplacementNode != dst || st.ReplacementPod != "db-0" || st.ReservationName == "" ||
		st.PodUID != old.UID || st.EvictionTime == nil || st.CompletionTime == nil {
		t.Errorf("status %+v: want source %s, target and replacement node %s, replacement db-0, a reservation, the old pod's UID and both times", st, src, dst)
	}
	now, err := env.Client.CoreV1().Pods(c.ns).Get(context.Background(), "db-0", metav1.GetOptions{})
	if err != nil || now.UID == old.UID || now.Spec.NodeName != dst {
		t.Errorf("db-0 now %v on %q (UID changed: %v), want the replacement on %s", err, now.Spec.NodeName, now.UID != old.UID, dst)
	}
	if n := counter(t, m, "accord_descheduler_pods_evicted_total", map[string]string{"result": "success", "plugin": podmigration.Name}); n != 1 {
		t.Errorf("%v evictions by %s counted, want 1", n, podmigration.Name)
	}
	// The migration's Events (recorded asynchronously): evicted, then succeeded.
	seen := map[string]bool{}
	if err := harness.WaitFor(context.Background(), 10*time.Second, func(ctx context.Context) (bool, error) {
		events, err := env.Client.EventsV1().Events(c.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Regarding.Kind == "PodMigration" && e.Regarding.Name == "move-db" {
				seen[e.Reason] = true
			}
		}
		return seen[podmigration.ReasonEvicted] && seen[podmigration.ReasonSucceeded], nil
	}); err != nil {
		t.Errorf("Events on the PodMigration: %v, want %s and %s: %v", seen, podmigration.ReasonEvicted, podmigration.ReasonSucceeded, err)
	}
}

// TestPodMigrationImpossibleTargetFails: dst's ClusterScopedResource does not enable
// example.com/memory, so the scheduler's Filter refuses db-0 there: the PodMigration fails with the
// scheduler's own reason, nothing is reserved and db-0 is not evicted.
func TestPodMigrationImpossibleTargetFails(t *testing.T) {
	startScheduler(t)
	c := &cluster{ns: env.CreateNamespace(t, "rsv-migrate-no")}
	c.crNodes(t, map[string]bool{"src": true}, "src")
	old := c.statefulSet(t)
	c.crNodes(t, map[string]bool{"dst": false}, "dst")
	dst := c.nodes[1]
	m := startDeschedulerWith(t, migrationPolicy(c), inprocess.WriteFile(t, "scheduler-config.yaml", schedulerConfig), true)

	pm := c.migrate(t, "impossible", dst, 30*time.Second)
	st := pm.Status
	t.Logf("PodMigration status: %+v", st)
	if st.Phase != schedv1alpha1.PodMigrationFailed || st.Reason != podmigration.ReasonUnschedulable {
		t.Fatalf("phase %s reason %s, want Failed, %s", st.Phase, st.Reason, podmigration.ReasonUnschedulable)
	}
	for _, want := range []string{"spec.targetNode " + dst, "nodes are available", string(exRes)} {
		if !strings.Contains(st.Message, want) {
			t.Errorf("message %q does not contain %q", st.Message, want)
		}
	}
	p, err := env.Client.CoreV1().Pods(c.ns).Get(context.Background(), "db-0", metav1.GetOptions{})
	if err != nil || p.UID != old.UID || p.DeletionTimestamp != nil {
		t.Fatalf("db-0 was evicted for an impossible target: %v %v", err, p)
	}
	list, err := env.Accord.SchedulingV1alpha1().Reservations(c.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("reservations %v (%v), want none", list, err)
	}
	if n := counter(t, m, "accord_descheduler_pods_evicted_total", nil); n != 0 {
		t.Errorf("%v evictions counted, want none", n)
	}
}

// TestDeschedulerKilledBeforeEvictionEvictsNothing: accord-descheduler (the real binary) creates the
// reservation for db-0 and waits for it to be placed; no scheduler runs, so it stays Pending, and
// the process is killed (SIGKILL) then. Nothing is evicted, and once accord-scheduler runs the
// orphaned reservation expires at its TTL (10 s grace + 5 s placement timeout + 1 s margin).
func TestDeschedulerKilledBeforeEvictionEvictsNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := harness.BuildBinary(t, "github.com/accord-sched/accord/cmd/descheduler")
	c := &cluster{ns: env.CreateNamespace(t, "rsv-killed")}
	c.crNodes(t, map[string]bool{"src": true}, "src")
	c.crNodes(t, map[string]bool{"dst": true}, "dst")
	src := c.nodes[0]
	// db-0 is placed on src by its template: no scheduler is running yet.
	old := c.statefulSet(t, src)

	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	policy := inprocess.WriteFile(t, "policy.yaml", rsvPolicy(c, "NodeCRDResourceFit", "ReservationFirst", "{placementTimeout: 5s, ttlMargin: 1s}"))
	schedCfg := inprocess.WriteFile(t, "scheduler-config.yaml", schedulerConfig)
	cmd, _ := harness.StartProcess(t, ctx, bin, "--kubeconfig="+kubeconfig, "--policy-config-file="+policy, "--scheduler-config-file="+schedCfg,
		"--descheduling-interval=500ms", "--secure-port=0", "-v=2")
	c.setEnabled(t, src, false)

	// The moment the reservation exists, the descheduler is waiting for it to be placed: kill it.
	var rsv schedv1alpha1.Reservation
	if err := harness.WaitFor(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		list, err := env.Accord.SchedulingV1alpha1().Reservations(c.ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) == 0 {
			return false, err
		}
		rsv = list.Items[0]
		return true, nil
	}); err != nil {
		t.Fatalf("no reservation created for db-0: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	t.Logf("killed accord-descheduler with reservation %s in phase %q", rsv.Name, rsv.Status.Phase)
	if rsv.Status.Phase != "" && rsv.Status.Phase != schedv1alpha1.ReservationPending {
		t.Fatalf("reservation %s is %s before any scheduler ran", rsv.Name, rsv.Status.Phase)
	}
	if want := 16 * time.Second; rsv.Spec.TTL == nil || rsv.Spec.TTL.Duration != want {
		t.Errorf("reservation TTL %v, want %s", rsv.Spec.TTL, want)
	}

	// The scheduler comes up after the crash; the orphan holds room at most until its TTL.
	startScheduler(t)
	expired := c.waitPhase(t, rsv.Name, schedv1alpha1.ReservationExpired, 40*time.Second)
	t.Logf("reservation %s: %s (%s)", rsv.Name, expired.Status.Phase, expired.Status.Message)
	p, err := env.Client.CoreV1().Pods(c.ns).Get(ctx, "db-0", metav1.GetOptions{})
	if apierrors.IsNotFound(err) || err != nil || p.UID != old.UID || p.DeletionTimestamp != nil {
		t.Fatalf("db-0 was evicted although the descheduler died before its reservation was placed: %v %v", err, p)
	}
}
