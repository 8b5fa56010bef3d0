package lownodeload

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	compmetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/apis/config"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	"github.com/accord-sched/accord/pkg/constraints"
	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/plugintest"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
	deschedmetrics "github.com/accord-sched/accord/pkg/descheduler/metrics"
)

var now = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func TestArgs(t *testing.T) {
	cases := []struct {
		name  string
		args  LowNodeLoadArgs
		errs  []string
		check func(*testing.T, *LowNodeLoadArgs)
	}{
		{name: "defaults agree with LoadAware's", check: func(t *testing.T, a *LowNodeLoadArgs) {
			if !maps.Equal(a.HighThresholds, config.DefaultUsageThresholds()) || *a.NodeMetricExpirationSeconds != config.DefaultNodeMetricExpirationSeconds || a.ConsecutiveAbnormalities != DefaultConsecutiveAbnormalities {
				t.Fatalf("defaults %+v", a)
			}
		}},
		{name: "set thresholds are kept", args: LowNodeLoadArgs{HighThresholds: map[corev1.ResourceName]int64{"cpu": 80}, LowThresholds: map[corev1.ResourceName]int64{"cpu": 30}},
			check: func(t *testing.T, a *LowNodeLoadArgs) {
				if len(a.HighThresholds) != 1 || a.LowThresholds["cpu"] != 30 {
					t.Fatalf("thresholds %+v", a)
				}
			}},
		{name: "deviation mode needs thresholds", args: LowNodeLoadArgs{UseDeviationThresholds: true}, errs: []string{"a.highThresholds", "a.lowThresholds"}},
		{name: "deviation allows low above high", args: LowNodeLoadArgs{UseDeviationThresholds: true, HighThresholds: map[corev1.ResourceName]int64{"cpu": 10}, LowThresholds: map[corev1.ResourceName]int64{"cpu": 30}}},
		{name: "low above high", args: LowNodeLoadArgs{HighThresholds: map[corev1.ResourceName]int64{"cpu": 50}, LowThresholds: map[corev1.ResourceName]int64{"cpu": 60}}, errs: []string{"a.lowThresholds[cpu]"}},
		{name: "out of range", args: LowNodeLoadArgs{HighThresholds: map[corev1.ResourceName]int64{"cpu": 101}, LowThresholds: map[corev1.ResourceName]int64{"cpu": -1}}, errs: []string{"a.highThresholds[cpu]", "a.lowThresholds[cpu]"}},
		{name: "different resources", args: LowNodeLoadArgs{HighThresholds: map[corev1.ResourceName]int64{"cpu": 80}, LowThresholds: map[corev1.ResourceName]int64{"memory": 30}}, errs: []string{"a.lowThresholds[cpu]", "a.highThresholds[memory]"}},
		{name: "negative numbers", args: LowNodeLoadArgs{NumberOfNodes: -1, UsageEstimateArgs: constraints.UsageEstimateArgs{ResourceWeights: map[corev1.ResourceName]int64{"cpu": -2}, NodeMetricExpirationSeconds: ptr.To[int64](-5)}, ConsecutiveAbnormalities: -1},
			errs: []string{"a.numberOfNodes", "a.resourceWeights[cpu]", "a.nodeMetricExpirationSeconds", "a.consecutiveAbnormalities"}},
		{name: "namespaces both ways", args: LowNodeLoadArgs{EvictableNamespaces: &pluginutil.Namespaces{Include: []string{"a"}, Exclude: []string{"b"}}}, errs: []string{"a.evictableNamespaces"}},
		{name: "pod selectors", args: LowNodeLoadArgs{PodSelectors: []PodSelector{{Name: "x", Selector: &metav1.LabelSelector{}}, {Name: "x"}}}, errs: []string{"a.podSelectors[1].name", "a.podSelectors[1].selector"}},
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
			if tc.check != nil {
				tc.check(t, &a)
			}
		})
	}
}

type podSpec struct {
	name     string
	prio     int32
	cpuMilli int64
	mutate   func(*corev1.Pod)
}

// metric is a fresh NodeMetric with cpuMilli of CPU used and the given pods' usage.
func metric(node string, cpuMilli int64, age time.Duration, pods ...podSpec) *slov1alpha1.NodeMetric {
	m := plugintest.NodeMetric(node, corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(cpuMilli, resource.DecimalSI),
		corev1.ResourceMemory: resource.MustParse("1Gi"),
	}, &slov1alpha1.NodeMetricStatus{UpdateTime: &metav1.Time{Time: now.Add(-age)}})
	for _, p := range pods {
		m.Status.PodsUsage = append(m.Status.PodsUsage, slov1alpha1.PodUsage{Namespace: "ns", Name: p.name,
			Usage: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(p.cpuMilli, resource.DecimalSI)}})
	}
	return m
}

func pods(node string, specs ...podSpec) []runtime.Object {
	var out []runtime.Object
	for _, s := range specs {
		p := fake.Pod("ns", s.name, node, 100)
		p.Spec.Priority = ptr.To(s.prio)
		if s.mutate != nil {
			s.mutate(p)
		}
		out = append(out, p)
	}
	return out
}

var hotPods = []podSpec{
	{name: "low-big", prio: 1, cpuMilli: 2000},
	{name: "low-small", prio: 1, cpuMilli: 1000},
	{name: "high-big", prio: 1000, cpuMilli: 3000},
	{name: "high-small", prio: 1000, cpuMilli: 500},
}

func TestBalance(t *testing.T) {
	base := func() LowNodeLoadArgs {
		return LowNodeLoadArgs{
			HighThresholds:           map[corev1.ResourceName]int64{corev1.ResourceCPU: 65, corev1.ResourceMemory: 95},
			LowThresholds:            map[corev1.ResourceName]int64{corev1.ResourceCPU: 45, corev1.ResourceMemory: 75},
			ConsecutiveAbnormalities: 1,
		}
	}
	cases := []struct {
		name    string
		args    func(*LowNodeLoadArgs)
		coolCPU int64 // milli-CPU used on the 10-CPU node n3
		hotAge  time.Duration
		extra   []podSpec
		cycles  int
		want    []string
	}{
		{name: "lowest priority then highest usage, until under the high threshold", coolCPU: 1000,
			want: []string{"ns/low-big", "ns/low-small"}},
		{name: "only while a cool node can take them", coolCPU: 4000,
			want: []string{"ns/high-small", "ns/low-big"}},
		{name: "no cool node", coolCPU: 5000},
		{name: "numberOfNodes", coolCPU: 1000, args: func(a *LowNodeLoadArgs) { a.NumberOfNodes = 1 }},
		{name: "expired metric is neither hot nor cool", coolCPU: 1000, hotAge: 10 * time.Minute},
		{name: "metrics that never expire", coolCPU: 1000, hotAge: 10 * time.Minute, args: func(a *LowNodeLoadArgs) { a.NodeMetricExpirationSeconds = ptr.To[int64](0) },
			want: []string{"ns/low-big", "ns/low-small"}},
		{name: "a spike is no reason", coolCPU: 1000, args: func(a *LowNodeLoadArgs) { a.ConsecutiveAbnormalities = 2 }},
		{name: "hot for two cycles in a row", coolCPU: 1000, cycles: 2, args: func(a *LowNodeLoadArgs) { a.ConsecutiveAbnormalities = 2 },
			want: []string{"ns/low-big", "ns/low-small"}},
		{name: "podSelectors", coolCPU: 1000, args: func(a *LowNodeLoadArgs) {
			a.PodSelectors = []PodSelector{{Name: "movable", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"movable": "yes"}}}}
		}, extra: []podSpec{{name: "movable", prio: 5000, cpuMilli: 100, mutate: func(p *corev1.Pod) { p.Labels = map[string]string{"movable": "yes"} }}},
			want: []string{"ns/movable"}},
		{name: "evictableNamespaces", coolCPU: 1000, args: func(a *LowNodeLoadArgs) { a.EvictableNamespaces = &pluginutil.Namespaces{Exclude: []string{"ns"}} }},
		{name: "DefaultEvictor keeps a bare pod", coolCPU: 1000,
			extra: []podSpec{{name: "bare", prio: 0, cpuMilli: 4000, mutate: func(p *corev1.Pod) { p.OwnerReferences = nil }}},
			want:  []string{"ns/low-big", "ns/low-small"}},
		// A pod placed since the report with limits of 100Pi CPU and memory: the limit, above the
		// node's allocatable, is ignored (it counts its request × factor), so n1 neither looks empty
		// (before, the estimate overflowed and n1 was not hot) nor fuller than it is.
		{name: "a 100Pi limit neither empties nor fills its node", coolCPU: 1000,
			extra: []podSpec{{name: "in-report-as-nothing", prio: 1000, mutate: func(p *corev1.Pod) {
				p.Name = "hostile"
				p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100Pi"), corev1.ResourceMemory: resource.MustParse("100Pi")}
			}}},
			want: []string{"ns/low-big", "ns/low-small"}},
		{name: "deviation thresholds", coolCPU: 1000, args: func(a *LowNodeLoadArgs) {
			// Mean CPU: (90+50+10)/3 = 50; hot above 50+20, cool at or below 50-20.
			a.UseDeviationThresholds = true
			a.HighThresholds = map[corev1.ResourceName]int64{corev1.ResourceCPU: 20}
			a.LowThresholds = map[corev1.ResourceName]int64{corev1.ResourceCPU: 20}
		}, want: []string{"ns/low-big"}}, // 90% -> 70%, which is not over 70%
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			specs := append(slices.Clone(hotPods), tc.extra...)
			// n1: 10 CPUs, 9 used by its pods; n2: 5 used (neither hot nor cool); n3: cool or not.
			objs := append(pods("n1", specs...), fake.Node("n1", nil, 10, 16), fake.Node("n2", nil, 10, 16), fake.Node("n3", nil, 10, 16))
			hot := metric("n1", 9000, tc.hotAge, specs...)
			crs := []runtime.Object{hot, metric("n2", 5000, 0), metric("n3", tc.coolCPU, 0)}
			env := plugintest.New(t, plugintest.Options{CRs: crs}, objs...)
			args := base()
			if tc.args != nil {
				tc.args(&args)
			}
			args.SetDefaults()
			if errs := args.Validate(nil); len(errs) > 0 {
				t.Fatal(errs)
			}
			pl, err := New(t.Context(), &args, env.Handle())
			if err != nil {
				t.Fatal(err)
			}
			p := pl.(*Plugin)
			p.clock = testingclock.NewFakePassiveClock(now)
			env.Start(t)
			var got []string
			for range max(tc.cycles, 1) {
				got = append(got, env.Balance(t, p)...)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("evicted %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNoSecondWaveWhileMetricLags(t *testing.T) {
	objs := append(pods("n1", hotPods...), fake.Node("n1", nil, 10, 16), fake.Node("n3", nil, 10, 16))
	env := plugintest.New(t, plugintest.Options{CRs: []runtime.Object{metric("n1", 9000, 0, hotPods...), metric("n3", 0, 0)}}, objs...)
	// The scenario's thresholds are its own, so that it does not move with the defaults.
	args := LowNodeLoadArgs{ConsecutiveAbnormalities: 2,
		HighThresholds: map[corev1.ResourceName]int64{corev1.ResourceCPU: 65, corev1.ResourceMemory: 95},
		LowThresholds:  map[corev1.ResourceName]int64{corev1.ResourceCPU: 45, corev1.ResourceMemory: 75}}
	args.SetDefaults()
	pl, err := New(t.Context(), &args, env.Handle())
	if err != nil {
		t.Fatal(err)
	}
	p := pl.(*Plugin)
	p.clock = testingclock.NewFakePassiveClock(now)
	env.Start(t)
	if got := env.Balance(t, p); len(got) != 0 {
		t.Fatalf("first cycle evicted %v", got)
	}
	if got := env.Balance(t, p); len(got) != 2 {
		t.Fatalf("second cycle evicted %v, want two pods", got)
	}
	// The NodeMetric has not been refreshed yet, so n1 still looks hot: the count starts again
	// rather than draining the node a second time on stale numbers.
	if got := env.Balance(t, p); len(got) != 0 {
		t.Fatalf("third cycle evicted %v", got)
	}
}

// Each cycle writes the reported and estimated usage of the nodes judged, per threshold resource,
// as a share of allocatable, and deletes the series of a node no longer judged.
func TestUsageMetrics(t *testing.T) {
	n1, n3 := fake.Node("n1", nil, 10, 16), fake.Node("n3", nil, 10, 16)
	env := plugintest.New(t, plugintest.Options{CRs: []runtime.Object{metric("n1", 9000, 0, hotPods...), metric("n3", 1000, 0)}},
		append(pods("n1", hotPods...), n1, n3)...)
	args := LowNodeLoadArgs{}
	args.SetDefaults()
	pl, err := New(t.Context(), &args, env.Handle())
	if err != nil {
		t.Fatal(err)
	}
	p := pl.(*Plugin)
	p.clock = testingclock.NewFakePassiveClock(now)
	reg := deschedmetrics.NewSharedRegistry(compmetrics.NewKubeRegistry()) // as the descheduler's: profiles share collectors on it
	if err := p.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	other, err := New(t.Context(), &args, env.Handle())
	if err != nil {
		t.Fatal(err)
	}
	if err := other.(*Plugin).RegisterMetrics(reg); err != nil || other.(*Plugin).usage != p.usage {
		t.Fatalf("a second profile's instance does not share the registry's gauges: %v", err)
	}
	env.Start(t)
	profile := env.Handle().ProfileName()
	series := func(node, resource string, v float64) string {
		return fmt.Sprintf("{node=%q,profile=%q,resource=%q} %g\n", node, profile, resource, v)
	}
	want := func(nodes ...string) string {
		values := map[string][]float64{"n1": {0.9, 0.0625}, "n3": {0.1, 0.0625}}
		var b strings.Builder
		for _, m := range []string{"estimated", "reported"} {
			name := "accord_descheduler_node_usage_" + m + "_ratio"
			help := p.usage.reported.Help
			if m == "estimated" {
				help = p.usage.estimated.Help
			}
			fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name)
			for _, n := range nodes {
				b.WriteString(name + series(n, "cpu", values[n][0]))
				b.WriteString(name + series(n, "memory", values[n][1]))
			}
		}
		return b.String()
	}
	if st := p.Balance(t.Context(), []*corev1.Node{n1, n3}); st != nil {
		t.Fatal(st)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want("n1", "n3"))); err != nil {
		t.Error(err)
	}
	if st := p.Balance(t.Context(), []*corev1.Node{n1}); st != nil {
		t.Fatal(st)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want("n1"))); err != nil {
		t.Errorf("n3 gone: %v", err)
	}
}
