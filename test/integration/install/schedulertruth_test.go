package install_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	"github.com/accord-sched/accord/manifests/render"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
	"github.com/accord-sched/accord/test/harness"
)

// loadPolicy leaves every arg it shares with accord-scheduler out (and lowThresholds: the plugin's
// defaults, capped at the high thresholds).
const loadPolicy = `apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: load
  pluginConfig:
  - name: DefaultEvictor
    args: {minPodAge: 0s}
  - name: LowNodeLoad
    args:
      consecutiveAbnormalities: 1
  plugins:
    filter: {enabled: [DefaultEvictor]}
    balance: {enabled: [LowNodeLoad]}
    evict: {enabled: [EvictionAPI]}
`

// The descheduler takes LowNodeLoad's highThresholds from the scheduler configuration the chart
// renders (usageThresholds cpu 50): a node at 60% CPU is drained, which the plugin's own default
// (65%) would leave alone; a policy that contradicts the scheduler is refused with both field paths.
func TestDeschedulerFollowsSchedulerConfig(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	objs, err := render.Chart(chartDir, render.Release{Name: "truth", Namespace: "accord-truth", Values: map[string]any{
		"constraints": map[string]any{"loadAware": map[string]any{
			"usageThresholds": map[string]any{"cpu": 50, "memory": 80},
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	schedConfig, err := render.ConfigMapData(objs, "truth-accord-scheduler-config", "scheduler-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	schedFile := writeFile(t, dir, "scheduler-config.yaml", schedConfig)
	policyFile := writeFile(t, dir, "policy.yaml", loadPolicy)

	// Contradicting the scheduler fails before anything runs, naming both fields.
	contra := writeFile(t, dir, "contra.yaml", strings.Replace(loadPolicy, "consecutiveAbnormalities: 1",
		"highThresholds: {cpu: 65, memory: 80}\n      lowThresholds: {cpu: 20, memory: 20}\n      consecutiveAbnormalities: 1", 1))
	err = runner.Run(ctx, runner.Config{RestConfig: env.Config, PolicyConfigFile: contra, SchedulerConfigFile: schedFile})
	for _, want := range []string{"profiles[0].pluginConfig[1].args.highThresholds", schedFile + " profiles[0].pluginConfig[1].args.usageThresholds"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("contradicting policy: error %v does not name %s", err, want)
		}
	}

	// hot: 2.4 of 4 CPUs (60%); cool: 0.4 (10%). Two replicas of 1 CPU each run on hot.
	ns := env.CreateNamespace(t, "truth")
	hot, cool := ns+"-hot", ns+"-cool"
	for _, n := range []string{hot, cool} {
		if _, err := env.Nodes.CreateNode(ctx, harness.NodeSpec{Name: n}); err != nil {
			t.Fatal(err)
		}
		name := n
		t.Cleanup(func() {
			_ = env.Accord.SloV1alpha1().NodeMetrics().Delete(context.Background(), name, metav1.DeleteOptions{})
			_ = env.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	if err := env.Nodes.WaitForNodesReady(ctx, hot, cool); err != nil {
		t.Fatal(err)
	}
	setMetric(ctx, t, cool, "400m")
	replicas := int32(2)
	labels := map[string]string{"app": "truth"}
	if _, err := env.Client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "truth"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0), NodeName: hot, Containers: []corev1.Container{{Name: "c", Image: "example.com/work",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
			},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "both replicas running on the hot node", func() bool {
		running := 0
		for _, p := range podsOn(ctx, t, ns, hot) {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == int(replicas)
	})
	before := sets.New[types.UID]()
	var usage []slov1alpha1.PodUsage
	for _, p := range podsOn(ctx, t, ns, hot) {
		before.Insert(p.UID)
		// The report lists the pods it measured, as accord-metrics-reporter does: a pod missing from
		// podsUsage would count its estimate on top of the node's usage.
		usage = append(usage, slov1alpha1.PodUsage{Namespace: p.Namespace, Name: p.Name, Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}})
	}
	setMetric(ctx, t, hot, "2400m", usage...)
	evicted := func() int {
		left := 0
		for _, p := range podsOn(ctx, t, ns, hot) {
			if before.Has(p.UID) {
				left++
			}
		}
		return before.Len() - left
	}

	// Without the scheduler's configuration the plugin's default (65%) applies: nothing to do.
	if err := runner.Run(ctx, runner.Config{RestConfig: env.Config, PolicyConfigFile: policyFile}); err != nil {
		t.Fatal(err)
	}
	if n := evicted(); n != 0 {
		t.Fatalf("without --scheduler-config-file %d pods were evicted, want 0 (60%% is under the default 65%%)", n)
	}
	// With it, 60% is over the scheduler's 50%: one replica (1 CPU) takes the node to 35%.
	if err := runner.Run(ctx, runner.Config{RestConfig: env.Config, PolicyConfigFile: policyFile, SchedulerConfigFile: schedFile}); err != nil {
		t.Fatal(err)
	}
	if n := evicted(); n != 1 {
		t.Fatalf("with the scheduler's configuration %d pods were evicted, want 1", n)
	}
}

func setMetric(ctx context.Context, t *testing.T, node, cpu string, pods ...slov1alpha1.PodUsage) {
	t.Helper()
	m, err := env.Accord.SloV1alpha1().NodeMetrics().Create(ctx, &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m.Status = slov1alpha1.NodeMetricStatus{UpdateTime: &metav1.Time{Time: time.Now()},
		NodeUsage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}, PodsUsage: pods}
	if _, err := env.Accord.SloV1alpha1().NodeMetrics().UpdateStatus(ctx, m, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
