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

// TestEndToEndEstimateNoOverEviction: a node driven over LowNodeLoad's 80% threshold by 5 pods
// (1 CPU baseline + 5 x 500m of 4 CPUs, 87.5%), the real accord-metrics-reporter reporting every 5 s,
// and descheduling cycles every second with consecutiveAbnormalities 1. One eviction brings the node
// under (75%); the cycles that run before the next report count the evicted pod as gone (the usage
// estimate), so no second pod is evicted, neither before nor after the report.
func TestEndToEndEstimateNoOverEviction(t *testing.T) {
	ctx := context.Background()
	startScheduler(t)
	ms := startMetricsAPI(t)
	c := newCluster(t, "e2e-estimate", harness.NodeSpec{Name: "hot"}, harness.NodeSpec{Name: "cool"})
	hot, cool := c.node("hot"), c.node("cool")
	c.csr("hot", corev1.ResourceCPU)
	labels := map[string]string{"app": "est"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "est", Namespace: c.ns}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](5), Selector: &metav1.LabelSelector{MatchLabels: labels},
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
		return len(placed) == 5, nil
	}); err != nil {
		t.Fatalf("deployment not running: %v (%v)", err, placed)
	}
	c.csr("cool", corev1.ResourceCPU)
	// The source follows the cluster: each running pod uses 500m (5x its request).
	var mu sync.Mutex
	simulate := func() {
		list, err := env.Client.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=est"})
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		used := map[string]int64{hot: 1000, cool: 400}
		for _, p := range list.Items {
			if p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
				continue
			}
			used[p.Spec.NodeName] += 500
			ms.SetPod(c.ns, p.Name, "500m", "100Mi")
		}
		for n, u := range used {
			ms.SetNode(n, fmt.Sprintf("%dm", u), "2Gi")
		}
	}
	followCluster(t, simulate)
	const reportInterval = 5 * time.Second
	reportertest.Start(t, env.Config, "samplingPeriodSeconds: 1\ndefaultReportIntervalSeconds: 5\nstatistic: last\n")
	var got string
	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		nm, err := env.Accord.SloV1alpha1().NodeMetrics().Get(ctx, hot, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		q := nm.Status.NodeUsage[corev1.ResourceCPU]
		got = q.String()
		return got == "3500m", nil
	}); err != nil {
		t.Fatalf("NodeMetric %s: cpu %q, want 3500m: %v", hot, got, err)
	}

	policy := fmt.Sprintf(`apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: %q
maxNoOfPodsToEvictPerNode: 10
profiles:
- name: load
  pluginConfig:
  - name: LowNodeLoad
    args:
      lowThresholds: {cpu: 40, memory: 40}
      consecutiveAbnormalities: 1
  plugins:
    balance:
      enabled: [LowNodeLoad]
`, nsLabel+"="+c.ns)
	dels := watchDeletions(t, c.ns)
	m := startDescheduler(t, policy, time.Second)
	if err := harness.WaitFor(ctx, 20*time.Second, func(context.Context) (bool, error) {
		w, _ := dels.snapshot()
		return len(w) > 0, nil
	}); err != nil {
		t.Fatalf("hot node not drained: %v", err)
	}
	first := time.Now()
	start, err := testutil.GetCounterMetricValue(m.Cycles)
	if err != nil {
		t.Fatal(err)
	}
	// Cycles within the report interval that followed the eviction, then through two more reports.
	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		v, err := testutil.GetCounterMetricValue(m.Cycles)
		return v >= start+3 && time.Since(first) >= 3*reportInterval, err
	}); err != nil {
		t.Fatal(err)
	}
	end, _ := testutil.GetCounterMetricValue(m.Cycles)
	w, from := dels.snapshot()
	t.Logf("evicted %d pod(s) in %.0f cycles over %s (reports every %s): %v", len(w), end-start+1, time.Since(first).Round(time.Second), reportInterval, w)
	if len(w) != 1 {
		t.Fatalf("evicted %d pods (%v), want 1: 87.5%% - 12.5%% = 75%% is under the 80%% threshold", len(w), w)
	}
	for pod := range w {
		if from[pod] != hot {
			t.Fatalf("evicted %s from %s, want from %s", pod, from[pod], hot)
		}
	}
}
