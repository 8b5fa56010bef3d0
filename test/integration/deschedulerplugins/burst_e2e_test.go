package deschedulerplugins

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/test/harness"
	"github.com/accord-sched/accord/test/reportertest"
)

// burstResult is where a burst landed: pods and simulated CPU usage (millicores) per node.
type burstResult struct {
	pods  map[string]int
	usage map[string]int64
	cold  string
}

// maxPercent is the highest node usage in percent of the 16 CPUs.
func (r burstResult) maxPercent() int64 {
	var m int64
	for _, u := range r.usage {
		m = max(m, u*100/16000)
	}
	return m
}

func (r burstResult) String() string {
	var b strings.Builder
	for _, n := range slices.Sorted(maps.Keys(r.usage)) {
		fmt.Fprintf(&b, "%s: %d pods, %d%%; ", n[strings.LastIndex(n, "-")+1:], r.pods[n], r.usage[n]*100/16000)
	}
	return b.String()
}

// burst places 40 pods that request 100m (limit 1 CPU) and use 800m each, as one Deployment or as
// 40 one-replica Deployments, with accord-scheduler (the sample configuration, with the usage
// estimate on or off), on 6 nodes of 16 CPUs: one cold (800m baseline), five at 30% (4.8 CPUs). The
// simulated metrics.k8s.io reports each running pod's 800m, and the real accord-metrics-reporter
// writes the NodeMetrics every 5 s.
func burst(t *testing.T, estimate, oneDeployment bool) burstResult {
	ctx := context.Background()
	config := schedulerConfig()
	if !estimate {
		data, err := os.ReadFile(config)
		if err != nil {
			t.Fatal(err)
		}
		const line = "      nodeMetricExpirationSeconds: 180\n"
		if !strings.Contains(string(data), line) {
			t.Fatalf("%s has no %q line to add the args after", config, line)
		}
		config = filepath.Join(t.TempDir(), "scheduler.yaml")
		off := strings.Replace(string(data), line, line+"      estimatedScalingFactors: {}\n", 1)
		if err := os.WriteFile(config, []byte(off), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	startSchedulerWith(t, config)
	ms := startMetricsAPI(t)
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourcePods: resource.MustParse("110")}
	var specs []harness.NodeSpec
	for i := range 6 {
		specs = append(specs, harness.NodeSpec{Name: fmt.Sprintf("n%d", i), Allocatable: alloc})
	}
	c := newCluster(t, "e2e-burst", specs...)
	baseline := map[string]int64{}
	for i := range 6 {
		c.csr(fmt.Sprintf("n%d", i), corev1.ResourceCPU)
		baseline[c.node(fmt.Sprintf("n%d", i))] = 4800
	}
	cold := c.node("n0")
	baseline[cold] = 800
	var mu sync.Mutex
	result := burstResult{cold: cold}
	simulate := func() {
		list, err := env.Client.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: "burst=yes"})
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		result.usage, result.pods = maps.Clone(baseline), map[string]int{}
		for _, p := range list.Items {
			if p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
				continue
			}
			result.usage[p.Spec.NodeName] += 800
			result.pods[p.Spec.NodeName]++
			ms.SetPod(c.ns, p.Name, "800m", "100Mi")
		}
		for n, u := range result.usage {
			ms.SetNode(n, fmt.Sprintf("%dm", u), "8Gi")
		}
	}
	followCluster(t, simulate)
	reportertest.Start(t, env.Config, "samplingPeriodSeconds: 1\ndefaultReportIntervalSeconds: 5\nstatistic: last\n")
	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		nm, err := env.Accord.SloV1alpha1().NodeMetrics().Get(ctx, cold, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		q := nm.Status.NodeUsage[corev1.ResourceCPU]
		return q.MilliValue() == 800, nil
	}); err != nil {
		t.Fatalf("NodeMetric of the cold node not reported: %v", err)
	}

	deployment := func(name string, replicas int32) *appsv1.Deployment {
		labels := map[string]string{"app": name, "burst": "yes"}
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns}, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0),
				SchedulerName: "accord-scheduler",
				NodeSelector:  map[string]string{nsLabel: c.ns},
				Containers: []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}}}
	}
	var deps []*appsv1.Deployment
	if oneDeployment {
		deps = append(deps, deployment("burst", 40))
	} else {
		for i := range 40 {
			deps = append(deps, deployment(fmt.Sprintf("w%d", i), 1))
		}
	}
	for _, d := range deps {
		if _, err := env.Client.AppsV1().Deployments(c.ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := harness.WaitFor(ctx, 60*time.Second, func(context.Context) (bool, error) {
		return len(runningPods(t, c.ns)) == 40, nil
	}); err != nil {
		t.Fatalf("burst not running: %v (%d running)", err, len(runningPods(t, c.ns)))
	}
	if estimate {
		// accord-descheduler's LowNodeLoad (the sample scheduler configuration's thresholds and
		// estimate, cycles every second, no waiting for consecutive hot cycles) evicts none of the
		// pods just placed within three report intervals.
		policy := fmt.Sprintf(`apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: %q
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
		startDescheduler(t, policy, time.Second)
		time.Sleep(3 * 5 * time.Second)
		if w, _ := dels.snapshot(); len(w) != 0 {
			t.Errorf("LowNodeLoad evicted %d pods accord-scheduler had just placed: %v", len(w), w)
		}
	}
	simulate()
	mu.Lock()
	defer mu.Unlock()
	return burstResult{pods: maps.Clone(result.pods), usage: maps.Clone(result.usage), cold: cold}
}

// TestEndToEndBurstEstimate: a burst of 40 under-requested pods on one cold node and five warm ones
// (room for 15 pods on the cold node and 10 on each other under the 80% threshold). With the usage
// estimate (the sample configuration's defaults: 85% of the 1 CPU limit per pod until reported) no
// node ends over 80% and LowNodeLoad evicts none of the burst within three report intervals;
// without it (estimatedScalingFactors: {}) the figures are printed for
// comparison, and the cold node takes more of the burst.
func TestEndToEndBurstEstimate(t *testing.T) {
	for _, shape := range []struct {
		name string
		one  bool
	}{{"one Deployment of 40", true}, {"40 one-replica Deployments", false}} {
		t.Run(shape.name, func(t *testing.T) {
			var on, off burstResult
			t.Run("estimate", func(t *testing.T) { on = burst(t, true, shape.one) })
			t.Run("no estimate", func(t *testing.T) { off = burst(t, false, shape.one) })
			if on.usage == nil || off.usage == nil {
				t.Fatal("a burst did not complete")
			}
			t.Logf("FIGURE %s, with the estimate: max %d%%, cold node %d pods (%s)", shape.name, on.maxPercent(), on.pods[on.cold], on)
			t.Logf("FIGURE %s, without the estimate: max %d%%, cold node %d pods (%s)", shape.name, off.maxPercent(), off.pods[off.cold], off)
			if on.maxPercent() > 80 {
				t.Errorf("with the estimate a node ended at %d%%, over the 80%% threshold, while the others had room: %s", on.maxPercent(), on)
			}
			if on.pods[on.cold] > off.pods[off.cold] {
				t.Errorf("the cold node took more of the burst with the estimate (%d) than without (%d)", on.pods[on.cold], off.pods[off.cold])
			}
		})
	}
}
