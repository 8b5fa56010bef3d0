package lownodeutilization

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/apis/descheduler"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/plugintest"
)

// fakeSources is a framework.MetricsProviders with fixed measurements.
type fakeSources struct {
	nodes     map[string]map[corev1.ResourceName]int64 // milli
	pods      map[string]map[corev1.ResourceName]int64 // by pod name
	fractions map[string]float64
	err       error
	queries   []string
	noKube    bool
}

func (f *fakeSources) KubernetesMetrics() (framework.KubernetesMetrics, error) {
	if f.noKube {
		return nil, errors.New("the policy configures no KubernetesMetrics source")
	}
	return f, nil
}
func (f *fakeSources) Prometheus() (framework.PrometheusMetrics, error) { return f, nil }
func (f *fakeSources) NodeUsage(node string) (map[corev1.ResourceName]int64, error) {
	if f.err != nil {
		return nil, f.err
	}
	u, ok := f.nodes[node]
	if !ok {
		return nil, errors.New("metrics.k8s.io has no usage for node " + node)
	}
	return map[corev1.ResourceName]int64{corev1.ResourceCPU: u[corev1.ResourceCPU], corev1.ResourceMemory: u[corev1.ResourceMemory]}, nil
}
func (f *fakeSources) PodUsage(_ context.Context, pod *corev1.Pod) (map[corev1.ResourceName]int64, error) {
	u, ok := f.pods[pod.Name]
	if !ok {
		return nil, errors.New("no pod metrics")
	}
	return map[corev1.ResourceName]int64{corev1.ResourceCPU: u[corev1.ResourceCPU], corev1.ResourceMemory: u[corev1.ResourceMemory]}, nil
}
func (f *fakeSources) NodeFractions(_ context.Context, q string) (map[string]float64, error) {
	f.queries = append(f.queries, q)
	return f.fractions, f.err
}

func cpu(milli int64) map[corev1.ResourceName]int64 {
	return map[corev1.ResourceName]int64{corev1.ResourceCPU: milli, corev1.ResourceMemory: 1 << 30 * 1000}
}

// measured: by requests n1 (8 CPU of 10) is the hot node; by metrics.k8s.io it is n3 (9 CPU used
// by its three pods), and n1 is nearly idle.
func measured() *fakeSources {
	return &fakeSources{
		nodes: map[string]map[corev1.ResourceName]int64{"n1": cpu(2000), "n2": cpu(500), "n3": cpu(9000)},
		pods:  map[string]map[corev1.ResourceName]int64{"r0": cpu(3000), "r1": cpu(3000), "r2": cpu(3000)},
	}
}

func newMeasured(t *testing.T, src *fakeSources, args LowNodeUtilizationArgs) (*plugintest.Env, *Plugin) {
	t.Helper()
	args.SetDefaults()
	if errs := args.Validate(field.NewPath("args")); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	env := plugintest.New(t, plugintest.Options{MetricsProviders: src}, cluster()...)
	pl, err := New(t.Context(), &args, env.Handle())
	if err != nil {
		t.Fatal(err)
	}
	env.Start(t)
	return env, pl.(*Plugin)
}

func kubeArgs() LowNodeUtilizationArgs {
	return LowNodeUtilizationArgs{Thresholds: rt{"cpu": 30, "memory": 30}, TargetThresholds: rt{"cpu": 60, "memory": 60},
		MetricsUtilization: &MetricsUtilization{Source: descheduler.KubernetesMetrics}}
}

func TestKubernetesMetricsDrainsTheMeasuredHotNode(t *testing.T) {
	env, pl := newMeasured(t, measured(), kubeArgs())
	before := map[string]*corev1.Pod{}
	for _, n := range []string{"r0", "r1", "r2"} {
		before["ns/"+n] = podNamed(t, env, n).DeepCopy()
	}
	// 9 CPU used on n3: each eviction takes 3 CPU off (measured pod usage) until n3 is at 60%.
	got := env.Balance(t, pl)
	if len(got) != 1 || before[got[0]] == nil {
		t.Fatalf("evicted %v, want one of n3's pods (9 -> 6 CPU, at the 60%% target)", got)
	}
	r0 := before[got[0]]
	// The verdict judges by the same measurements (n3 now 6 CPU): r0's replacement (3 CPU measured
	// in this cycle) would be fine on the idle n2, not back on n3.
	r0.Spec.NodeName = ""
	if flagged, _ := pl.NodeVerdict(r0, nodeNamed(t, env, "n2")); flagged {
		t.Error("n2 (0.5 + 3 CPU of 10) must not be flagged")
	}
	if flagged, why := pl.NodeVerdict(r0, nodeNamed(t, env, "n3")); !flagged || !strings.Contains(why, "measured") {
		t.Errorf("n3 (6 + 3 CPU of 10) must be flagged: %v %q", flagged, why)
	}
}

func TestMetricsServerIsKubernetesMetrics(t *testing.T) {
	args := kubeArgs()
	args.MetricsUtilization = &MetricsUtilization{MetricsServer: true}
	env, pl := newMeasured(t, measured(), args)
	if got := env.Balance(t, pl); len(got) != 1 || !strings.HasPrefix(got[0], "ns/r") {
		t.Fatalf("evicted %v", got)
	}
}

func TestMissingUsageSkipsTheCycle(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*fakeSources)
		want   string
	}{
		{"source down", func(f *fakeSources) { f.err = errors.New("metrics.k8s.io is down") }, "metrics.k8s.io is down"},
		{"node not reported", func(f *fakeSources) { delete(f.nodes, "n2") }, "no usage for node n2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := measured()
			tc.mutate(src)
			env, pl := newMeasured(t, src, kubeArgs())
			st := pl.Balance(context.Background(), env.Nodes(t))
			if st.IsSuccess() || !strings.Contains(st.AsError().Error(), "skipping this cycle, no KubernetesMetrics utilization") || !strings.Contains(st.AsError().Error(), tc.want) {
				t.Fatalf("status %v", st.AsError())
			}
			if ev := env.Evictions(); len(ev) != 0 {
				t.Fatalf("evicted %v with missing usage", ev)
			}
		})
	}
}

func TestPodWithoutMetricsIsSkipped(t *testing.T) {
	src := measured()
	delete(src.pods, "r0")
	delete(src.pods, "r1")
	env, pl := newMeasured(t, src, kubeArgs())
	if got := env.Balance(t, pl); !slices.Equal(got, []string{"ns/r2"}) {
		t.Fatalf("evicted %v, want ns/r2 (r0's and r1's usage is unknown)", got)
	}
}

func promArgs() LowNodeUtilizationArgs {
	return LowNodeUtilizationArgs{Thresholds: rt{MetricResource: 30}, TargetThresholds: rt{MetricResource: 70},
		MetricsUtilization: &MetricsUtilization{Source: descheduler.PrometheusMetrics, Prometheus: &MetricsPrometheus{Query: "node_load"}}}
}

func TestPrometheusEvictsOnePodPerHotNode(t *testing.T) {
	src := &fakeSources{fractions: map[string]float64{"n1": 0.2, "n2": 0.1, "n3": 0.95}}
	env, pl := newMeasured(t, src, promArgs())
	got := env.Balance(t, pl)
	if len(got) != 1 || !strings.HasPrefix(got[0], "ns/r") {
		t.Fatalf("evicted %v, want one of n3's pods", got)
	}
	if !slices.Equal(src.queries, []string{"node_load"}) {
		t.Fatalf("queries %v", src.queries)
	}
	// 0.709 is 70% (whole percent, truncated, as upstream): not over a 70 target.
	src.fractions["n3"] = 0.709
	if got := env.Balance(t, pl); len(got) != 0 {
		t.Fatalf("evicted %v at 70%%", got)
	}
	delete(src.fractions, "n2")
	st := pl.Balance(context.Background(), env.Nodes(t))
	if st.IsSuccess() || !strings.Contains(st.AsError().Error(), "no sample for node n2") {
		t.Fatalf("a node without a sample skips the cycle: %v", st.AsError())
	}
}

func TestMetricsArgs(t *testing.T) {
	ku, pr := descheduler.KubernetesMetrics, descheduler.PrometheusMetrics
	cases := []struct {
		name string
		args LowNodeUtilizationArgs
		errs []string
	}{
		{"kube ok", LowNodeUtilizationArgs{Thresholds: rt{"cpu": 10, "pods": 10}, TargetThresholds: rt{"cpu": 50, "pods": 50}, MetricsUtilization: &MetricsUtilization{Source: ku}}, nil},
		{"prometheus ok, no cpu/memory/pods defaults", promArgs(), nil},
		{"both forms", LowNodeUtilizationArgs{Thresholds: rt{"cpu": 10}, TargetThresholds: rt{"cpu": 50}, MetricsUtilization: &MetricsUtilization{MetricsServer: true, Source: ku}},
			[]string{"a.metricsUtilization.metricsServer"}},
		{"no source", LowNodeUtilizationArgs{Thresholds: rt{"cpu": 10}, TargetThresholds: rt{"cpu": 50}, MetricsUtilization: &MetricsUtilization{}},
			[]string{"a.metricsUtilization.source"}},
		{"unknown source", LowNodeUtilizationArgs{Thresholds: rt{"cpu": 10}, TargetThresholds: rt{"cpu": 50}, MetricsUtilization: &MetricsUtilization{Source: "Datadog"}},
			[]string{"a.metricsUtilization.source"}},
		{"query on kube", LowNodeUtilizationArgs{Thresholds: rt{"cpu": 10}, TargetThresholds: rt{"cpu": 50}, MetricsUtilization: &MetricsUtilization{Source: ku, Prometheus: &MetricsPrometheus{Query: "q"}}},
			[]string{"a.metricsUtilization.prometheus"}},
		{"extended resource on kube", LowNodeUtilizationArgs{Thresholds: rt{"example.com/gpu": 10}, TargetThresholds: rt{"example.com/gpu": 50}, MetricsUtilization: &MetricsUtilization{Source: ku}},
			[]string{"a.thresholds[example.com/gpu]", "a.targetThresholds[example.com/gpu]"}},
		{"prometheus without query", LowNodeUtilizationArgs{Thresholds: rt{MetricResource: 10}, TargetThresholds: rt{MetricResource: 50}, MetricsUtilization: &MetricsUtilization{Source: pr}},
			[]string{"a.metricsUtilization.prometheus.query"}},
		{"prometheus with cpu", LowNodeUtilizationArgs{Thresholds: rt{"cpu": 10}, TargetThresholds: rt{"cpu": 50}, MetricsUtilization: &MetricsUtilization{Source: pr, Prometheus: &MetricsPrometheus{Query: "q"}}},
			[]string{"a.thresholds", "a.targetThresholds"}},
		{"MetricResource on requests", LowNodeUtilizationArgs{Thresholds: rt{MetricResource: 10}, TargetThresholds: rt{MetricResource: 50}},
			[]string{"a.thresholds[MetricResource]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.args
			a.SetDefaults()
			var got []string
			for _, e := range a.Validate(field.NewPath("a")) {
				got = append(got, e.Field)
			}
			if !slices.Equal(got, tc.errs) {
				t.Fatalf("errors on %v, want %v", got, tc.errs)
			}
		})
	}
}

func TestUnconfiguredSourceFailsTheBuild(t *testing.T) {
	args := kubeArgs()
	args.SetDefaults()
	env := plugintest.New(t, plugintest.Options{MetricsProviders: &fakeSources{noKube: true}}, cluster()...)
	_, err := New(t.Context(), &args, env.Handle())
	if err == nil || !strings.Contains(err.Error(), "metricsUtilization.source KubernetesMetrics: the policy configures no KubernetesMetrics source") {
		t.Fatalf("err = %v", err)
	}
}

func podNamed(t *testing.T, env *plugintest.Env, name string) *corev1.Pod {
	t.Helper()
	p, err := env.Factory.Core().V1().Pods().Lister().Pods("ns").Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func nodeNamed(t *testing.T, env *plugintest.Env, name string) *corev1.Node {
	t.Helper()
	n, err := env.Factory.Core().V1().Nodes().Lister().Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
