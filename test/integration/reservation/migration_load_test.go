package reservation

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/podmigration"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/reservationfirst"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
	"github.com/accord-sched/accord/test/harness"
	"github.com/accord-sched/accord/test/harness/inprocess"
)

// createMigration creates a PodMigration of pod (to target, in mode; empty: the defaults).
func (c *cluster) createMigration(t *testing.T, name, pod, target string, mode schedv1alpha1.PodMigrationMode) {
	t.Helper()
	pm := &schedv1alpha1.PodMigration{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns},
		Spec: schedv1alpha1.PodMigrationSpec{PodName: pod, TargetNode: target, Mode: mode}}
	if _, err := env.Accord.SchedulingV1alpha1().PodMigrations(c.ns).Create(context.Background(), pm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitMigration waits, at most timeout, until the PodMigration is in a final phase; it returns it.
func (c *cluster) waitMigration(t *testing.T, name string, timeout time.Duration) *schedv1alpha1.PodMigration {
	t.Helper()
	var last *schedv1alpha1.PodMigration
	if err := harness.WaitFor(context.Background(), timeout, func(ctx context.Context) (bool, error) {
		got, err := env.Accord.SchedulingV1alpha1().PodMigrations(c.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = got
		return got.Status.Phase.Finished(), nil
	}); err != nil {
		t.Fatalf("PodMigration %s not finished within %s: %v (status %+v)", name, timeout, err, last.Status)
	}
	return last
}

// reservationsOf lists the reservations made for the pod of UID uid.
func (c *cluster) reservationsOf(t *testing.T, uid string) []schedv1alpha1.Reservation {
	t.Helper()
	sel := labels.SelectorFromSet(labels.Set{reservationfirst.LabelPodUID: uid}).String()
	list, err := env.Accord.SchedulingV1alpha1().Reservations(c.ns).List(context.Background(), metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// TestPodMigrationSecondIsRefused: two PodMigrations of db-0 exist when the descheduler starts: the
// second is refused (Failed, AlreadyMigrating, naming the first, with a Warning Event on it) and
// the first moves the pod.
func TestPodMigrationSecondIsRefused(t *testing.T) {
	startScheduler(t)
	c := &cluster{ns: env.CreateNamespace(t, "rsv-migrate-twice")}
	c.crNodes(t, map[string]bool{"src": true}, "src")
	c.statefulSet(t)
	c.crNodes(t, map[string]bool{"dst": true}, "dst")
	dst := c.nodes[1]
	// Created in this order (and, within one second, ordered by name): "a-first" is the first.
	c.createMigration(t, "a-first", "db-0", dst, "")
	c.createMigration(t, "b-second", "db-0", dst, "")
	startDeschedulerWith(t, migrationPolicy(c), inprocess.WriteFile(t, "scheduler-config.yaml", schedulerConfig), true)

	second := c.waitMigration(t, "b-second", 30*time.Second)
	t.Logf("second: %s %s: %s", second.Status.Phase, second.Status.Reason, second.Status.Message)
	if second.Status.Phase != schedv1alpha1.PodMigrationFailed || second.Status.Reason != podmigration.ReasonAlreadyMigrating ||
		!strings.Contains(second.Status.Message, "already being migrated by PodMigration a-first") || second.Status.PodUID != "" {
		t.Errorf("second migration %+v, want Failed/%s naming a-first, no pod UID", second.Status, podmigration.ReasonAlreadyMigrating)
	}
	first := c.waitMigration(t, "a-first", 60*time.Second)
	if first.Status.Phase != schedv1alpha1.PodMigrationSucceeded || first.Status.ReplacementNode != dst {
		t.Errorf("first migration %+v, want Succeeded onto %s", first.Status, dst)
	}
	if err := harness.WaitFor(context.Background(), 10*time.Second, func(ctx context.Context) (bool, error) {
		events, err := env.Client.EventsV1().Events(c.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Regarding.Kind == "PodMigration" && e.Regarding.Name == "b-second" && e.Reason == podmigration.ReasonAlreadyMigrating &&
				e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, "a-first") {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Errorf("no Warning Event %s naming a-first on the second migration: %v", podmigration.ReasonAlreadyMigrating, err)
	}
}

// TestPodMigrationRestartNeverMigratesTheReplacement: accord-descheduler (the real binary) records
// db-0's UID in the migration's status, creates the reservation and waits for it to be placed (no
// scheduler runs), and is killed (SIGKILL) at that step, before any eviction. db-0 is then
// replaced by its StatefulSet (same name, new UID). A descheduler started afterwards, with the
// scheduler, fails the migration (PodReplaced), removes the orphaned reservation and never evicts
// the replacement.
func TestPodMigrationRestartNeverMigratesTheReplacement(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bin := harness.BuildBinary(t, "github.com/accord-sched/accord/cmd/descheduler")
	c := &cluster{ns: env.CreateNamespace(t, "rsv-restart")}
	c.crNodes(t, map[string]bool{"src": true}, "src")
	c.crNodes(t, map[string]bool{"dst": true}, "dst")
	src, dst := c.nodes[0], c.nodes[1]
	// db-0 is placed on src by its template: no scheduler is running yet.
	old := c.statefulSet(t, src)

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	policy := inprocess.WriteFile(t, "policy.yaml", rsvPolicy(c, podmigration.Name, "ReservationFirst", "{placementTimeout: 2m}"))
	schedCfg := inprocess.WriteFile(t, "scheduler-config.yaml", schedulerConfig)
	cmd, _ := harness.StartProcess(t, ctx, bin, "--kubeconfig="+kubeconfig, "--policy-config-file="+policy, "--scheduler-config-file="+schedCfg,
		"--descheduling-interval=0", "--event-driven", "--secure-port=0", "-v=2")
	c.createMigration(t, "move", "db-0", dst, "")

	// The UID is written, the reservation exists and waits to be placed: kill the descheduler there.
	var at *schedv1alpha1.PodMigration
	if err := harness.WaitFor(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		pm, err := env.Accord.SchedulingV1alpha1().PodMigrations(c.ns).Get(ctx, "move", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		at = pm
		return pm.Status.PodUID != "" && len(c.reservationsOf(t, string(old.UID))) > 0, nil
	}); err != nil {
		t.Fatalf("the migration did not record the pod's UID and reserve: %v (status %+v)", err, at.Status)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	t.Logf("killed accord-descheduler with the migration at %s/%s (pod UID %s)", at.Status.Phase, at.Status.Reason, at.Status.PodUID)
	if at.Status.PodUID != old.UID || at.Status.Reason != podmigration.ReasonReserving || at.Status.Phase != schedv1alpha1.PodMigrationPending {
		t.Fatalf("status at the kill %+v, want Pending/%s with db-0's UID %s", at.Status, podmigration.ReasonReserving, old.UID)
	}
	if p, err := env.Client.CoreV1().Pods(c.ns).Get(ctx, "db-0", metav1.GetOptions{}); err != nil || p.UID != old.UID || p.DeletionTimestamp != nil {
		t.Fatalf("db-0 was evicted before its reservation was placed: %v %v", err, p)
	}

	// The pod is replaced meanwhile: same name, new UID.
	if err := env.Client.CoreV1().Pods(c.ns).Delete(ctx, "db-0", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	var replacement *corev1.Pod
	if err := harness.WaitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		p, err := env.Client.CoreV1().Pods(c.ns).Get(ctx, "db-0", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		replacement = p
		return err == nil && p.UID != old.UID && p.Status.Phase == corev1.PodRunning, err
	}); err != nil {
		t.Fatalf("db-0 not replaced: %v", err)
	}

	startScheduler(t)
	m := startDeschedulerWith(t, rsvPolicy(c, podmigration.Name, "ReservationFirst", "{placementTimeout: 2m}"), schedCfg, true)
	pm := c.waitMigration(t, "move", 60*time.Second)
	t.Logf("after the restart: %s %s: %s", pm.Status.Phase, pm.Status.Reason, pm.Status.Message)
	if pm.Status.Phase != schedv1alpha1.PodMigrationFailed || pm.Status.Reason != podmigration.ReasonPodReplaced || pm.Status.PodUID != old.UID {
		t.Errorf("status %+v, want Failed/%s with the old UID", pm.Status, podmigration.ReasonPodReplaced)
	}
	time.Sleep(2 * time.Second)
	if p, err := env.Client.CoreV1().Pods(c.ns).Get(ctx, "db-0", metav1.GetOptions{}); err != nil || p.UID != replacement.UID || p.DeletionTimestamp != nil {
		t.Errorf("the replacement db-0 (UID %s) was evicted: now %v %v", replacement.UID, err, p)
	}
	for _, r := range c.reservationsOf(t, string(old.UID)) {
		if !r.Status.Phase.Finished() {
			t.Errorf("the killed attempt's reservation %s is left %q, want deleted", r.Name, r.Status.Phase)
		}
	}
	if n := counter(t, m, "accord_descheduler_pods_evicted_total", nil); n != 0 {
		t.Errorf("%v evictions counted after the restart, want none", n)
	}
}

// TestPodMigrationsInFlightConcurrently: the pods of three one-replica Deployments on src (three
// workloads: the workload budget would serialise pods of one), three PodMigrations to dst,
// --max-concurrent-migrations=2 and no scheduler at first: exactly two migrations hold a
// reservation waiting to be placed at once (the third waits for a worker), where one worker
// would hold one. Once accord-scheduler runs, all three succeed onto dst.
func TestPodMigrationsInFlightConcurrently(t *testing.T) {
	ctx := context.Background()
	c := &cluster{ns: env.CreateNamespace(t, "rsv-concurrent")}
	c.crNodes(t, map[string]bool{"src": true}, "src")
	c.crNodes(t, map[string]bool{"dst": true}, "dst")
	src, dst := c.nodes[0], c.nodes[1]
	// CPU only: while the replacements are pending, the descheduler's simulation counts each both
	// as an admitted move and through its reservation, so three example.com/memory pods would not
	// all fit dst's 4 in its eyes (a limit of the simulation, not of the migrations).
	spec := c.memSpec("1", 0)
	delete(spec.Containers[0].Resources.Requests, exRes)
	delete(spec.Containers[0].Resources.Limits, exRes)
	for i := range 3 {
		labels := map[string]string{"app": fmt.Sprintf("web-%d", i)}
		dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: labels["app"], Namespace: c.ns}, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}}}
		if _, err := env.Client.AppsV1().Deployments(c.ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// No scheduler runs: the test binds the three pods to src itself.
	var pods []string
	if err := harness.WaitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		pods = pods[:0]
		for _, p := range list.Items {
			pods = append(pods, p.Name)
		}
		return len(pods) == 3, nil
	}); err != nil {
		t.Fatalf("the Deployment's pods: %v", err)
	}
	for _, name := range pods {
		if err := env.Client.CoreV1().Pods(c.ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns},
			Target: corev1.ObjectReference{Kind: "Node", Name: src}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := harness.WaitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		for _, name := range pods {
			p, err := env.Client.CoreV1().Pods(c.ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil || p.Status.Phase != corev1.PodRunning {
				return false, err
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("pods not running on %s: %v", src, err)
	}
	// The per-node cap (2 by default) would hold the third eviction: raised, so that only the flag
	// bounds the migrations in flight. (rsvPolicy lets one-replica workloads be evicted.)
	policy := strings.Replace(rsvPolicy(c, podmigration.Name, "ReservationFirst", "{placementTimeout: 2m}"), "profiles:", "maxNoOfPodsToEvictPerNode: 10\nprofiles:", 1)
	schedCfg := inprocess.WriteFile(t, "scheduler-config.yaml", schedulerConfig)
	inprocess.Descheduler(t, runner.Config{RestConfig: env.Config, PolicyConfigFile: inprocess.WriteFile(t, "policy.yaml", policy),
		SchedulerConfigFile: schedCfg, DeschedulingInterval: 500 * time.Millisecond, EventDriven: true, Metrics: metrics.New(), MaxConcurrentMigrations: 2})
	for i, name := range pods {
		c.createMigration(t, fmt.Sprintf("move-%d", i), name, dst, "")
	}

	// In flight: a migration that recorded its pod's UID and holds a reservation.
	inFlight := func(ctx context.Context) (int, int, error) {
		list, err := env.Accord.SchedulingV1alpha1().Reservations(c.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, 0, err
		}
		pms, err := env.Accord.SchedulingV1alpha1().PodMigrations(c.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, 0, err
		}
		started := 0
		for _, pm := range pms.Items {
			if pm.Status.PodUID != "" {
				started++
			}
		}
		return len(list.Items), started, nil
	}
	if err := harness.WaitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		n, _, err := inFlight(ctx)
		return n >= 2, err
	}); err != nil {
		t.Fatalf("two migrations not in flight at once: %v", err)
	}
	maxSeen := 0
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		n, started, err := inFlight(ctx)
		if err != nil {
			t.Fatal(err)
		}
		maxSeen = max(maxSeen, n, started)
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("FIGURE migrations in flight at once with --max-concurrent-migrations=2 and no scheduler: %d (of 3)", maxSeen)
	if maxSeen != 2 {
		t.Fatalf("%d migrations in flight at once, want 2 (the flag's bound)", maxSeen)
	}

	startScheduler(t)
	start := time.Now()
	for i := range pods {
		pm := c.waitMigration(t, fmt.Sprintf("move-%d", i), 90*time.Second)
		if pm.Status.Phase != schedv1alpha1.PodMigrationSucceeded || pm.Status.ReplacementNode != dst {
			t.Errorf("move-%d: %+v, want Succeeded onto %s", i, pm.Status, dst)
		}
	}
	t.Logf("FIGURE three migrations done %s after the scheduler started", time.Since(start).Round(time.Millisecond))
}

// TestPodMigrationEvictDirectly: mode EvictDirectly evicts db-0 with no reservation and succeeds at
// the eviction; the CRD refuses EvictDirectly with a targetNode, naming the rule.
func TestPodMigrationEvictDirectly(t *testing.T) {
	startScheduler(t)
	c := &cluster{ns: env.CreateNamespace(t, "rsv-direct")}
	c.crNodes(t, map[string]bool{"src": true}, "src")
	old := c.statefulSet(t)
	c.crNodes(t, map[string]bool{"dst": true}, "dst")
	ctx := context.Background()
	// src no longer offers the resource: the simulation sends the replacement to dst (EvictDirectly
	// still takes the profile's filters; it only reserves nothing).
	c.setEnabled(t, c.nodes[0], false)

	bad := &schedv1alpha1.PodMigration{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: c.ns},
		Spec: schedv1alpha1.PodMigrationSpec{PodName: "db-0", TargetNode: c.nodes[1], Mode: schedv1alpha1.PodMigrationEvictDirectly}}
	if _, err := env.Accord.SchedulingV1alpha1().PodMigrations(c.ns).Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "targetNode needs mode ReservationFirst") {
		t.Errorf("EvictDirectly with a targetNode: %v, want Invalid", err)
	}
	bad.Spec.TargetNode, bad.Spec.Mode = "", "Sideways"
	if _, err := env.Accord.SchedulingV1alpha1().PodMigrations(c.ns).Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.mode") {
		t.Errorf("mode Sideways: %v, want Invalid naming spec.mode", err)
	}

	m := startDeschedulerWith(t, migrationPolicy(c), inprocess.WriteFile(t, "scheduler-config.yaml", schedulerConfig), true)
	c.createMigration(t, "direct", "db-0", "", schedv1alpha1.PodMigrationEvictDirectly)
	pm := c.waitMigration(t, "direct", 30*time.Second)
	t.Logf("PodMigration status: %+v", pm.Status)
	if pm.Status.Phase != schedv1alpha1.PodMigrationSucceeded || pm.Status.Reason != podmigration.ReasonEvicted || pm.Status.PodUID != old.UID ||
		pm.Status.ReservationName != "" || pm.Status.EvictionTime == nil {
		t.Errorf("status %+v, want Succeeded/%s with the old UID, no reservation", pm.Status, podmigration.ReasonEvicted)
	}
	list, err := env.Accord.SchedulingV1alpha1().Reservations(c.ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("reservations %v (%v), want none in EvictDirectly", list, err)
	}
	if err := harness.WaitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		p, err := env.Client.CoreV1().Pods(c.ns).Get(ctx, "db-0", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && p.UID != old.UID && p.Spec.NodeName != "", err
	}); err != nil {
		t.Errorf("db-0 not replaced and placed: %v", err)
	}
	if n := counter(t, m, "accord_descheduler_pods_evicted_total", map[string]string{"result": "success", "plugin": podmigration.Name}); n != 1 {
		t.Errorf("%v evictions by %s counted, want 1", n, podmigration.Name)
	}
}
