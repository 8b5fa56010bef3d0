package reservation

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
	"github.com/accord-sched/accord/test/harness"
	"github.com/accord-sched/accord/test/harness/inprocess"
)

const exRes corev1.ResourceName = "example.com/memory"

// crNodes creates this test's nodes, each with 4 example.com/memory and a ClusterScopedResource
// enabling it (or not, per enabled).
func (c *cluster) crNodes(t *testing.T, enabled map[string]bool, names ...string) {
	t.Helper()
	ctx := context.Background()
	for _, n := range names {
		name := c.ns + "-" + n
		if _, err := env.Nodes.CreateNode(ctx, harness.NodeSpec{Name: name, Labels: map[string]string{nsLabel: c.ns},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"),
				corev1.ResourcePods: resource.MustParse("110"), exRes: resource.MustParse("4")}}); err != nil {
			t.Fatal(err)
		}
		csr := &schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: schedv1alpha1.ClusterScopedResourceSpec{
			ResourcesFilter: map[corev1.ResourceName]bool{corev1.ResourceCPU: true, exRes: enabled[n]}}}
		if _, err := env.Accord.SchedulingV1alpha1().ClusterScopedResources().Create(ctx, csr, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = env.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
			_ = env.Accord.SchedulingV1alpha1().ClusterScopedResources().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
		c.nodes = append(c.nodes, name)
		if err := env.Nodes.WaitForNodesReady(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
}

func (c *cluster) setEnabled(t *testing.T, node string, on bool) {
	t.Helper()
	ctx := context.Background()
	csr, err := env.Accord.SchedulingV1alpha1().ClusterScopedResources().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	csr.Spec.ResourcesFilter[exRes] = on
	if _, err := env.Accord.SchedulingV1alpha1().ClusterScopedResources().Update(ctx, csr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// memSpec asks accord-scheduler for n example.com/memory on this test's nodes.
func (c *cluster) memSpec(n string, grace int64) corev1.PodSpec {
	return corev1.PodSpec{
		SchedulerName: schedulerName, TerminationGracePeriodSeconds: ptr.To(grace),
		NodeSelector: map[string]string{nsLabel: c.ns},
		Containers: []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), exRes: resource.MustParse(n)},
			Limits:   corev1.ResourceList{exRes: resource.MustParse(n)}}}},
	}
}

// statefulSet creates a one-replica StatefulSet "db" (2 example.com/memory, grace period 10 s) and
// returns its running pod. With pin, its template names that node (no scheduler involved).
func (c *cluster) statefulSet(t *testing.T, pin ...string) *corev1.Pod {
	t.Helper()
	return c.statefulSetOf(t, 1, appsv1.OrderedReadyPodManagement, pin...)[0]
}

// statefulSetOf creates the StatefulSet "db" of statefulSet with replicas pods managed by policy,
// and returns them running, by ordinal.
func (c *cluster) statefulSetOf(t *testing.T, replicas int, policy appsv1.PodManagementPolicyType, pin ...string) []*corev1.Pod {
	t.Helper()
	labels := map[string]string{"app": "db"}
	spec := c.memSpec("2", 10)
	if len(pin) > 0 {
		spec.NodeName = pin[0]
	}
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: c.ns}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To(int32(replicas)), Selector: &metav1.LabelSelector{MatchLabels: labels}, PodManagementPolicy: policy,
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}}}
	if _, err := env.Client.AppsV1().StatefulSets(c.ns).Create(context.Background(), set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := make([]*corev1.Pod, replicas)
	for i := range pods {
		name := fmt.Sprintf("db-%d", i)
		if err := harness.WaitFor(context.Background(), 30*time.Second, func(ctx context.Context) (bool, error) {
			p, err := env.Client.CoreV1().Pods(c.ns).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			pods[i] = p
			return err == nil && p.Status.Phase == corev1.PodRunning, err
		}); err != nil {
			t.Fatalf("%s not running: %v", name, err)
		}
	}
	return pods
}

// rsvPolicy is the tests' policy: one profile on this test's nodes that runs deschedule (a plugin,
// or a Controller with --event-driven) and evicts with evict; rfArgs, when set, are
// ReservationFirst's args (flow YAML).
func rsvPolicy(c *cluster, deschedule, evict, rfArgs string) string {
	policy := fmt.Sprintf(`apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: %q
# db is a one-replica StatefulSet: moving it is the point.
evictSingleReplicaWorkloads: true
profiles:
- name: rsv
  pluginConfig:
  - name: DefaultEvictor
    args: {minPodAge: 0s}
  - name: NodeCRDResourceFit
    args: {schedulerNames: [accord-scheduler]}
`, nsLabel+"="+c.ns)
	if rfArgs != "" {
		policy += fmt.Sprintf("  - name: ReservationFirst\n    args: %s\n", rfArgs)
	}
	return policy + fmt.Sprintf(`  plugins:
    deschedule: {enabled: [%s]}
    evict: {enabled: [%s]}
`, deschedule, evict)
}

// startDescheduler runs accord-descheduler in-process (a 500 ms interval) with NodeCRDResourceFit
// and the given evict plugin, simulating the scheduler with schedCfg; it stops with the test.
func startDescheduler(t *testing.T, c *cluster, evict, schedCfg string) *metrics.Metrics {
	t.Helper()
	return startDeschedulerWith(t, rsvPolicy(c, "NodeCRDResourceFit", evict, ""), schedCfg, false)
}

// startDeschedulerWith runs accord-descheduler in-process (a 500 ms interval, the event-triggered
// controllers when eventDriven) with policy, simulating the scheduler with schedCfg.
func startDeschedulerWith(t *testing.T, policy, schedCfg string, eventDriven bool) *metrics.Metrics {
	t.Helper()
	m := metrics.New()
	inprocess.Descheduler(t, runner.Config{RestConfig: env.Config, PolicyConfigFile: inprocess.WriteFile(t, "policy.yaml", policy),
		SchedulerConfigFile: schedCfg, DeschedulingInterval: 500 * time.Millisecond, EventDriven: eventDriven, Metrics: m})
	return m
}

// landing is where the replacement of an evicted StatefulSet pod went.
type landing struct {
	node    string
	pending time.Duration
}

// moveUnderBurst places db-0 on src, then stops src's CR from enabling example.com/memory: the
// descheduler evicts db-0 (10 s grace period) and, as soon as it is terminating, a burst of two
// pods needing 2 example.com/memory each arrives, enough to fill dst, the only other node.
func moveUnderBurst(t *testing.T, evict string) (landing, *metrics.Metrics, *cluster) {
	startScheduler(t)
	c := &cluster{ns: env.CreateNamespace(t, "rsv-first")}
	c.crNodes(t, map[string]bool{"src": true, "dst": true}, "src")
	old := c.statefulSet(t)
	c.crNodes(t, map[string]bool{"src": true, "dst": true}, "dst")
	src := c.nodes[0]
	if old.Spec.NodeName != src {
		t.Fatalf("db-0 on %s, want %s", old.Spec.NodeName, src)
	}
	m := startDescheduler(t, c, evict, inprocess.WriteFile(t, "scheduler-config.yaml", schedulerConfig))
	c.setEnabled(t, src, false)

	ctx := context.Background()
	if err := harness.WaitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		p, err := env.Client.CoreV1().Pods(c.ns).Get(ctx, "db-0", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && (p.UID != old.UID || p.DeletionTimestamp != nil), err
	}); err != nil {
		t.Fatalf("db-0 not evicted after its node's CR stopped enabling %s: %v (decisions: blocked %v, evicted %v; cycles %v)", exRes, err,
			counter(t, m, "accord_descheduler_simulation_decisions_total", map[string]string{"verdict": "blocked"}),
			counter(t, m, "accord_descheduler_pods_evicted_total", nil), counter(t, m, "accord_descheduler_cycles_total", nil))
	}
	labels := map[string]string{"app": "burst"}
	burst := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "burst", Namespace: c.ns}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: c.memSpec("2", 0)}}}
	if _, err := env.Client.AppsV1().Deployments(c.ns).Create(ctx, burst, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The replacement: a db-0 with another UID. How long it is Pending, and where it lands.
	var l landing
	var created time.Time
	_ = harness.WaitFor(ctx, 25*time.Second, func(ctx context.Context) (bool, error) {
		p, err := env.Client.CoreV1().Pods(c.ns).Get(ctx, "db-0", metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && p.UID == old.UID) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if created.IsZero() {
			created = time.Now()
		}
		l.node = p.Spec.NodeName
		return l.node != "", nil
	})
	if !created.IsZero() {
		l.pending = time.Since(created)
	}
	if created.IsZero() {
		t.Fatalf("db-0 was not recreated within 25 s of its eviction")
	}
	return l, m, c
}

// TestReservationFirstHoldsThePredictedPlace: with ReservationFirst the replacement of a StatefulSet
// pod lands on the predicted node although a burst of pods competes for it during the old pod's
// 10 s termination; without it (EvictionAPI) the test reports where it went and how long it was
// Pending.
func TestReservationFirstHoldsThePredictedPlace(t *testing.T) {
	t.Run("ReservationFirst", func(t *testing.T) {
		l, m, c := moveUnderBurst(t, "ReservationFirst")
		dst := c.nodes[1]
		fmt.Printf("FIGURE reservation-first: replacement of db-0 landed on %q (predicted %s), Pending %s\n", l.node, dst, l.pending.Round(10*time.Millisecond))
		if l.node != dst {
			t.Fatalf("with ReservationFirst the replacement landed on %q, want the predicted node %s", l.node, dst)
		}
		// The reservation was consumed, and the landing counted against the prediction.
		if err := harness.WaitFor(context.Background(), 10*time.Second, func(ctx context.Context) (bool, error) {
			list, err := env.Accord.SchedulingV1alpha1().Reservations(c.ns).List(ctx, metav1.ListOptions{})
			if err != nil || len(list.Items) != 1 {
				return false, err
			}
			return list.Items[0].Status.Phase == schedv1alpha1.ReservationBound, nil
		}); err != nil {
			t.Errorf("the reservation is not Bound: %v", err)
		}
		if err := harness.WaitFor(context.Background(), 10*time.Second, func(context.Context) (bool, error) {
			return counter(t, m, "accord_descheduler_simulation_landings_total", map[string]string{"result": "predicted"}) >= 1, nil
		}); err != nil {
			t.Errorf("landing on the predicted node not counted: %v", err)
		}
	})
	t.Run("EvictionAPI", func(t *testing.T) {
		l, _, c := moveUnderBurst(t, "EvictionAPI")
		where := l.node
		if where == "" {
			where = "nowhere (still Pending)"
		}
		fmt.Printf("FIGURE direct eviction: replacement of db-0 landed on %s (predicted %s), Pending %s\n", where, c.nodes[1], l.pending.Round(10*time.Millisecond))
	})
}

// TestReservationFirstUnplaceableEvictsNothing: dst's room is already held by another reservation,
// which the descheduler's simulation (configured without the Reservation plugin) does not see: it
// predicts dst, accord-scheduler cannot place the reservation there, so db-0 is not evicted and
// the reservation is deleted.
func TestReservationFirstUnplaceableEvictsNothing(t *testing.T) {
	startScheduler(t)
	c := &cluster{ns: env.CreateNamespace(t, "rsv-unplaceable")}
	c.crNodes(t, map[string]bool{"src": true}, "src")
	old := c.statefulSet(t)
	c.crNodes(t, map[string]bool{"dst": true}, "dst")
	c.reserve(t, "held", "someone-else", c.memSpec("3", 0), time.Minute)
	if r := c.waitPhase(t, "held", schedv1alpha1.ReservationAvailable, 20*time.Second); r.Status.NodeName != c.nodes[1] {
		t.Fatalf("the other reservation is on %q, want %s", r.Status.NodeName, c.nodes[1])
	}
	simCfg := strings.Replace(schedulerConfig, "      - name: Reservation\n", "", 1)
	m := startDescheduler(t, c, "ReservationFirst", inprocess.WriteFile(t, "scheduler-config.yaml", simCfg))
	c.setEnabled(t, c.nodes[0], false)
	// A few failed attempts.
	if err := harness.WaitFor(context.Background(), 20*time.Second, func(context.Context) (bool, error) {
		return counter(t, m, "accord_descheduler_pods_evicted_total", map[string]string{"result": "error"}) >= 2, nil
	}); err != nil {
		t.Fatalf("no eviction attempt failed on the unplaceable reservation: %v", err)
	}
	p, err := env.Client.CoreV1().Pods(c.ns).Get(context.Background(), "db-0", metav1.GetOptions{})
	if err != nil || p.UID != old.UID || p.DeletionTimestamp != nil {
		t.Fatalf("db-0 was evicted without a placed reservation: %v %v", err, p)
	}
	if n := counter(t, m, "accord_descheduler_pods_evicted_total", map[string]string{"result": "success"}); n != 0 {
		t.Errorf("%v evictions succeeded", n)
	}
	// Every attempt's reservation is deleted (the last one may be in flight).
	if err := harness.WaitFor(context.Background(), 10*time.Second, func(ctx context.Context) (bool, error) {
		list, err := env.Accord.SchedulingV1alpha1().Reservations(c.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		mine := 0
		for _, r := range list.Items {
			if r.Name == "held" {
				continue
			}
			mine++
			if r.Status.Phase != schedv1alpha1.ReservationFailed && r.Status.Phase != "" && r.Status.Phase != schedv1alpha1.ReservationPending {
				t.Errorf("reservation %s is %s", r.Name, r.Status.Phase)
			}
		}
		return mine <= 1, nil
	}); err != nil {
		t.Errorf("failed reservations are not cleaned up: %v", err)
	}
}

// counter adds the values of a counter's series whose labels include want.
func counter(t *testing.T, m *metrics.Metrics, name string, want map[string]string) float64 {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, s := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range s.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if got[k] != v {
					continue series
				}
			}
			n += s.GetCounter().GetValue()
		}
	}
	return n
}
