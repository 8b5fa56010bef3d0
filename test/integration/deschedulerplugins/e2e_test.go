package deschedulerplugins

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/utils/ptr"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
	"github.com/accord-sched/accord/test/harness"
	"github.com/accord-sched/accord/test/harness/inprocess"
)

// schedulerConfig is the sample KubeSchedulerConfiguration (manifests/scheduler/config.yaml).
func schedulerConfig() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "manifests", "scheduler", "config.yaml")
}

// startScheduler runs accord-scheduler in-process, with the sample configuration, until the test
// ends.
func startScheduler(t *testing.T) {
	t.Helper()
	startSchedulerWith(t, schedulerConfig())
}

// startSchedulerWith runs accord-scheduler in-process with the configuration file config until the
// test ends.
func startSchedulerWith(t *testing.T, config string) {
	t.Helper()
	inprocess.Scheduler(t, env, config)
}

// startDescheduler runs accord-descheduler in-process in periodic and event-triggered mode.
func startDescheduler(t *testing.T, policy string, interval time.Duration) *metrics.Metrics {
	t.Helper()
	m := metrics.New()
	// The descheduler simulates the scheduler it works with (SchedulerSimulation).
	inprocess.Descheduler(t, runner.Config{RestConfig: env.Config, PolicyConfigFile: inprocess.WriteFile(t, "policy.yaml", policy),
		SchedulerConfigFile: schedulerConfig(), DeschedulingInterval: interval, EventDriven: true, Metrics: m})
	return m
}

// deletions records when each pod of a namespace was first marked for deletion or deleted, and the
// resourceVersion of that event; and, of each pod, the node it was first seen bound to and the
// resourceVersion of that event. One watch delivers both in etcd's order, so a test can tell whether
// a pod was bound before or after another was evicted (binding, see bound).
type deletions struct {
	mu        sync.Mutex
	when      map[string]time.Time
	node      map[string]string
	deletedRV map[string]uint64
	binding   map[string]binding
}

// binding is a pod's first bound state seen: its node and the resourceVersion of the event.
type binding struct {
	node string
	rv   uint64
}

// bound returns the node pod was first seen bound to and the resourceVersion of that event.
func (d *deletions) bound(pod string) (binding, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, ok := d.binding[pod]
	return b, ok
}

// deletedAt returns the resourceVersion of the event that first showed pod marked for deletion.
func (d *deletions) deletedAt(pod string) (uint64, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	rv, ok := d.deletedRV[pod]
	return rv, ok
}

func watchDeletions(t *testing.T, ns string) *deletions {
	t.Helper()
	d := &deletions{when: map[string]time.Time{}, node: map[string]string{}, deletedRV: map[string]uint64{}, binding: map[string]binding{}}
	w, err := env.Client.CoreV1().Pods(ns).Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	go func() {
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			// The test's etcd hands out resourceVersions in increasing order; tests compare them.
			rv, _ := strconv.ParseUint(pod.ResourceVersion, 10, 64)
			d.mu.Lock()
			if _, seen := d.binding[pod.Name]; !seen && pod.Spec.NodeName != "" {
				d.binding[pod.Name] = binding{node: pod.Spec.NodeName, rv: rv}
			}
			if _, seen := d.when[pod.Name]; !seen && (ev.Type == watch.Deleted || pod.DeletionTimestamp != nil) {
				d.when[pod.Name] = time.Now()
				d.node[pod.Name] = pod.Spec.NodeName
				d.deletedRV[pod.Name] = rv
			}
			d.mu.Unlock()
		}
	}()
	return d
}

func (d *deletions) snapshot() (map[string]time.Time, map[string]string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	w, n := map[string]time.Time{}, map[string]string{}
	for k, v := range d.when {
		w[k], n[k] = v, d.node[k]
	}
	return w, n
}

func runningPods(t *testing.T, ns string) map[string]string {
	t.Helper()
	list, err := env.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" {
			out[p.Name] = p.Spec.NodeName
		}
	}
	return out
}

// TestEndToEndNodeCRDResourceFit: a Deployment's pods are placed by accord-scheduler; one node's
// ClusterScopedResource stops enabling the resource; in event mode its pods are evicted within 1s,
// recreated by the ReplicaSet and placed on compliant nodes, and nothing is evicted again over the
// next 10 cycles.
func TestEndToEndNodeCRDResourceFit(t *testing.T) {
	startScheduler(t)
	c := newCluster(t, "e2e-crfit", crNode("n0"), crNode("n1"), crNode("n2"))
	score := map[string]schedv1alpha1.ResourceScore{"n0": 90, "n1": 50, "n2": 40}
	for _, n := range []string{"n0", "n1", "n2"} {
		csr := &schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: c.node(n)}, Spec: schedv1alpha1.ClusterScopedResourceSpec{
			ResourcesFilter: map[corev1.ResourceName]bool{corev1.ResourceCPU: true, exRes: true},
			ResourcesScore:  map[corev1.ResourceName]schedv1alpha1.ResourceScore{exRes: score[n]}}}
		if _, err := env.Accord.SchedulingV1alpha1().ClusterScopedResources().Create(context.Background(), csr, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		name := csr.Name
		t.Cleanup(func() {
			_ = env.Accord.SchedulingV1alpha1().ClusterScopedResources().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	labels := map[string]string{"app": "e2e"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: c.ns}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](6), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0),
			SchedulerName: "accord-scheduler",
			// Only this test's nodes.
			NodeSelector: map[string]string{nsLabel: c.ns},
			Containers: []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), exRes: resource.MustParse("1")},
				Limits:   corev1.ResourceList{exRes: resource.MustParse("1")}}}}}}}}
	if _, err := env.Client.AppsV1().Deployments(c.ns).Create(context.Background(), dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var placed map[string]string
	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		placed = runningPods(t, c.ns)
		return len(placed) == 6, nil
	}); err != nil {
		t.Fatalf("deployment not running: %v (%v)", err, placed)
	}
	onN0 := 0
	for _, n := range placed {
		if n == c.node("n0") {
			onN0++
		}
	}
	if onN0 == 0 {
		t.Fatalf("accord-scheduler placed nothing on the best-scored node: %v", placed)
	}

	policy := fmt.Sprintf(`apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: %q
maxNoOfPodsToEvictPerNode: 10
profiles:
- name: accord
  pluginConfig:
  - name: NodeCRDResourceFit
    args:
      missingCRPolicy: Reject
      schedulerNames: [accord-scheduler]
  plugins:
    deschedule:
      enabled: [NodeCRDResourceFit]
`, nsLabel+"="+c.ns)
	m := startDescheduler(t, policy, 300*time.Millisecond)
	dels := watchDeletions(t, c.ns)
	time.Sleep(time.Second) // a few compliant cycles first
	if w, _ := dels.snapshot(); len(w) != 0 {
		t.Fatalf("pods evicted before any change: %v", w)
	}

	// n0's CR stops enabling the resource.
	csr, err := env.Accord.SchedulingV1alpha1().ClusterScopedResources().Get(ctx, c.node("n0"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	csr.Spec.ResourcesFilter[exRes] = false
	changed := time.Now()
	if _, err := env.Accord.SchedulingV1alpha1().ClusterScopedResources().Update(ctx, csr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitFor(ctx, 5*time.Second, func(context.Context) (bool, error) {
		w, _ := dels.snapshot()
		return len(w) >= onN0, nil
	}); err != nil {
		t.Fatalf("pods on n0 not evicted: %v", err)
	}
	w, nodes := dels.snapshot()
	for pod, at := range w {
		if nodes[pod] != c.node("n0") {
			t.Errorf("evicted %s from %s, not n0", pod, nodes[pod])
		}
		if d := at.Sub(changed); d > time.Second {
			t.Errorf("%s evicted %v after the CR change, want within 1s", pod, d)
		}
	}
	// Recreated by the ReplicaSet and placed by accord-scheduler on compliant nodes.
	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		placed = runningPods(t, c.ns)
		return len(placed) == 6, nil
	}); err != nil {
		t.Fatalf("replacements not running: %v (%v)", err, placed)
	}
	for pod, n := range placed {
		if n == c.node("n0") {
			t.Errorf("%s placed on n0, which no longer enables %s", pod, exRes)
		}
	}
	// Nothing is evicted again over the next 10 cycles.
	evictedSoFar := len(w)
	start, err := testutil.GetCounterMetricValue(m.Cycles)
	if err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		v, err := testutil.GetCounterMetricValue(m.Cycles)
		return v >= start+10, err
	}); err != nil {
		t.Fatal(err)
	}
	if w, _ := dels.snapshot(); len(w) != evictedSoFar {
		t.Fatalf("%d more pods evicted after the replacements were placed", len(w)-evictedSoFar)
	}
}

// TestEndToEndLowNodeLoad: a hot node (by its NodeMetric) is drained to under its threshold while
// accord-scheduler and the descheduler run; the replacement avoids the other hot node, and once the
// metrics catch up no second wave follows.
func TestEndToEndLowNodeLoad(t *testing.T) {
	startScheduler(t)
	ctx := context.Background()
	c := newCluster(t, "e2e-load", harness.NodeSpec{Name: "hot"}, harness.NodeSpec{Name: "hot2"}, harness.NodeSpec{Name: "cool"})
	// Only "hot" has a ClusterScopedResource at first, so accord-scheduler (missingCRPolicy Reject)
	// puts the whole Deployment there.
	c.csr("hot", corev1.ResourceCPU)
	labels := map[string]string{"app": "load"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "load", Namespace: c.ns}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](6), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "load", "tier": "stateless"}}, Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0),
			SchedulerName: "accord-scheduler",
			NodeSelector:  map[string]string{nsLabel: c.ns},
			Containers: []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}}}
	if _, err := env.Client.AppsV1().Deployments(c.ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var placed map[string]string
	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		placed = runningPods(t, c.ns)
		return len(placed) == 6, nil
	}); err != nil {
		t.Fatalf("deployment not running: %v (%v)", err, placed)
	}
	c.csr("hot2", corev1.ResourceCPU)
	c.csr("cool", corev1.ResourceCPU)
	// hot: 3.6 of 4 CPUs, 0.6 per pod; hot2: 3.4 (85%); cool: 0.4 (10%). LoadAware's threshold is 80%.
	var usage []slov1alpha1.PodUsage
	for name := range placed {
		usage = append(usage, slov1alpha1.PodUsage{Namespace: c.ns, Name: name, Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("600m")}})
	}
	c.metric("hot", "3600m", usage)
	c.metric("hot2", "3400m", nil)
	c.metric("cool", "400m", nil)

	policy := fmt.Sprintf(`apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: %q
maxNoOfPodsToEvictPerNode: 10
profiles:
- name: load
  pluginConfig:
  - name: LowNodeLoad
    args:
      highThresholds: {cpu: 80, memory: 80}
      lowThresholds: {cpu: 40, memory: 40}
      nodeMetricExpirationSeconds: 180
      consecutiveAbnormalities: 3
  plugins:
    balance:
      enabled: [LowNodeLoad]
`, nsLabel+"="+c.ns)
	dels := watchDeletions(t, c.ns)
	m := startDescheduler(t, policy, 300*time.Millisecond)
	if err := harness.WaitFor(ctx, 10*time.Second, func(context.Context) (bool, error) {
		w, _ := dels.snapshot()
		return len(w) > 0, nil
	}); err != nil {
		t.Fatalf("hot node not drained: %v", err)
	}
	// 90% - 15% per pod: one eviction brings it to 75%, under 80%.
	time.Sleep(100 * time.Millisecond)
	w, nodes := dels.snapshot()
	if len(w) != 1 {
		t.Fatalf("evicted %d pods, want 1 (90%% -> 75%%)", len(w))
	}
	var evicted string
	for pod := range w {
		evicted = pod
		if nodes[pod] != c.node("hot") {
			t.Fatalf("evicted %s from %s", pod, nodes[pod])
		}
	}
	// The metrics agent catches up: hot is at 75%, and the replacement will load cool.
	var rest []slov1alpha1.PodUsage
	for _, u := range usage {
		if u.Name != evicted {
			rest = append(rest, u)
		}
	}
	c.updateMetric("hot", "3000m", rest)
	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		placed = runningPods(t, c.ns)
		return len(placed) == 6, nil
	}); err != nil {
		t.Fatalf("replacement not running: %v (%v)", err, placed)
	}
	moved := 0
	for pod, n := range placed {
		switch n {
		case c.node("hot2"):
			t.Errorf("%s landed on the other hot node", pod)
		case c.node("cool"):
			moved++
		}
	}
	if moved != 1 {
		t.Errorf("%d pods on the cool node, want the replacement: %v", moved, placed)
	}
	c.updateMetric("cool", "1000m", nil)
	start, err := testutil.GetCounterMetricValue(m.Cycles)
	if err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		v, err := testutil.GetCounterMetricValue(m.Cycles)
		return v >= start+10, err
	}); err != nil {
		t.Fatal(err)
	}
	if w, _ := dels.snapshot(); len(w) != 1 {
		t.Fatalf("a second wave: %d pods evicted in all", len(w))
	}
}

func (c *cluster) updateMetric(node, cpu string, pods []slov1alpha1.PodUsage) {
	c.t.Helper()
	ctx := context.Background()
	m, err := env.Accord.SloV1alpha1().NodeMetrics().Get(ctx, c.node(node), metav1.GetOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	m.Status.UpdateTime = &metav1.Time{Time: time.Now()}
	m.Status.NodeUsage[corev1.ResourceCPU] = resource.MustParse(cpu)
	m.Status.PodsUsage = pods
	if _, err := env.Accord.SloV1alpha1().NodeMetrics().UpdateStatus(ctx, m, metav1.UpdateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}
