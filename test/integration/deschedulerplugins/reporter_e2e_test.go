package deschedulerplugins

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/test/harness"
	"github.com/accord-sched/accord/test/reportertest"
)

// TestEndToEndMetricsReporter: the whole load-aware loop on real parts. metrics.k8s.io (served
// through the aggregator) reports a node's usage rising over LoadAware's 80% threshold;
// accord-metrics-reporter writes it into the node's NodeMetric; accord-scheduler then refuses the
// node to a pod that may only go there, and accord-descheduler's LowNodeLoad moves one pod off it
// (85% - 15% = 70%), once: when the source reports the lower usage, nothing more is evicted.
func TestEndToEndMetricsReporter(t *testing.T) {
	ctx := context.Background()
	startScheduler(t)
	ms := startMetricsAPI(t)
	c := newCluster(t, "e2e-reporter", harness.NodeSpec{Name: "hot"}, harness.NodeSpec{Name: "cool"})
	hot, cool := c.node("hot"), c.node("cool")
	// Only "hot" has a ClusterScopedResource at first, so the whole Deployment lands there.
	c.csr("hot", corev1.ResourceCPU)
	labels := map[string]string{"app": "reported", "tier": "stateless"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "reported", Namespace: c.ns}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](4), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0),
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
		return len(placed) == 4, nil
	}); err != nil {
		t.Fatalf("deployment not running: %v (%v)", err, placed)
	}
	c.csr("cool", corev1.ResourceCPU)
	// The source follows the cluster, as metrics-server does: a node uses its baseline plus perPod
	// for each of the Deployment's running pods on it. Low load first: hot 1 + 4 x 0.05 of 4 CPUs
	// (30%), cool 0.4 (10%).
	var mu sync.Mutex
	perPod := int64(50)
	baseline := map[string]int64{hot: 1000, cool: 400}
	simulate := func() {
		list, err := env.Client.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=reported"})
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		used := map[string]int64{hot: baseline[hot], cool: baseline[cool]}
		for _, p := range list.Items {
			if p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
				continue
			}
			used[p.Spec.NodeName] += perPod
			ms.SetPod(c.ns, p.Name, fmt.Sprintf("%dm", perPod), "100Mi")
		}
		for n, u := range used {
			ms.SetNode(n, fmt.Sprintf("%dm", u), "2Gi")
		}
	}
	followCluster(t, simulate)
	reportertest.Start(t, env.Config, "samplingPeriodSeconds: 1\ndefaultReportIntervalSeconds: 1\nstatistic: last\n")
	waitCPU := func(node, cpu string) {
		t.Helper()
		var got string
		if err := harness.WaitFor(ctx, 20*time.Second, func(context.Context) (bool, error) {
			nm, err := env.Accord.SloV1alpha1().NodeMetrics().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			q := nm.Status.NodeUsage[corev1.ResourceCPU]
			got = q.String()
			return got == cpu, nil
		}); err != nil {
			t.Fatalf("NodeMetric %s: cpu %q, want %s: %v", node, got, cpu, err)
		}
	}
	waitCPU(hot, "1200m")
	waitCPU(cool, "400m")

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
	m := startDescheduler(t, policy, time.Second)
	time.Sleep(2 * time.Second)
	if w, _ := dels.snapshot(); len(w) != 0 {
		t.Fatalf("evicted %v at low load", w)
	}

	// The load rises: hot 1 + 4 x 0.6 = 3.4 CPUs (85%).
	mu.Lock()
	perPod = 600
	mu.Unlock()
	waitCPU(hot, "3400m")
	// A pod that may only run on hot is not placed there.
	probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: c.ns}, Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0),
		SchedulerName: "accord-scheduler",
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
				Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{hot}}}}}}}},
		Containers: []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}
	if _, err := env.Client.CoreV1().Pods(c.ns).Create(ctx, probe, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// LowNodeLoad evicts one pod from hot.
	if err := harness.WaitFor(ctx, 20*time.Second, func(context.Context) (bool, error) {
		w, _ := dels.snapshot()
		return len(w) > 0, nil
	}); err != nil {
		t.Fatalf("hot node not drained: %v", err)
	}
	w, from := dels.snapshot()
	if len(w) != 1 {
		t.Fatalf("evicted %v, want one pod (85%% -> 70%%)", w)
	}
	var evicted string
	for pod := range w {
		if from[pod] != hot {
			t.Fatalf("evicted %s from %s, want from %s", pod, from[pod], hot)
		}
		evicted = pod
	}
	// accord-scheduler must not place the probe on hot while hot is at 85%. Once the eviction takes a
	// pod's usage off hot's estimate (70%), it may place it there: that is the usage estimate at work.
	// Which comes first, the scheduler's first try or the eviction, is a race: so either the scheduler
	// refused the probe (its FailedScheduling Event) or it bound it; a binding to hot must come after
	// the eviction in the watch's (etcd's) order.
	refused := false
	if err := harness.WaitFor(ctx, 20*time.Second, func(ctx context.Context) (bool, error) {
		if _, ok := dels.bound(probe.Name); ok {
			return true, nil
		}
		evs, err := env.Client.CoreV1().Events(c.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + probe.Name})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == "FailedScheduling" {
				refused = true
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("accord-scheduler neither refused nor placed the probe: %v", err)
	}
	evictedAt, _ := dels.deletedAt(evicted)
	if b, ok := dels.bound(probe.Name); ok {
		if b.node == hot && b.rv < evictedAt {
			t.Fatalf("accord-scheduler placed the probe on %s at 85%% usage (bound at resourceVersion %d, %s evicted at %d)", hot, b.rv, evicted, evictedAt)
		}
		t.Logf("the probe was bound to %s at resourceVersion %d, after %s was evicted (%d)", b.node, b.rv, evicted, evictedAt)
	} else if refused {
		t.Logf("accord-scheduler refused the probe (FailedScheduling)")
	}
	// The source catches up at once (hot 1 + 3 x 0.6 = 2.8, 70%) and the reporter writes it; the
	// replacement is placed on cool (0.4 + 0.6, 25%).
	waitCPU(hot, "2800m")
	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		n := 0
		for _, node := range runningPods(t, c.ns) {
			if node == cool {
				n++
			}
		}
		return n == 1, nil
	}); err != nil {
		t.Fatalf("replacement not running on %s: %v (%v)", cool, err, runningPods(t, c.ns))
	}
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
		t.Fatalf("a second wave: %d pods evicted in all (%v)", len(w), w)
	}
}

// followCluster runs simulate now and every 100 ms until the test ends, as metrics-server follows the
// cluster: the simulated metrics source of the end-to-end tests.
func followCluster(t *testing.T, simulate func()) {
	t.Helper()
	simulate()
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				simulate()
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-stopped })
}
