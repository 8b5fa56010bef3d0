package highnodeutilization

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/defaultevictor"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/plugintest"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

type rt = pluginutil.ResourceThresholds

func TestArgs(t *testing.T) {
	cases := []struct {
		name string
		args HighNodeUtilizationArgs
		errs []string
	}{
		{name: "thresholds required", errs: []string{"a.thresholds"}},
		{name: "out of range", args: HighNodeUtilizationArgs{Thresholds: rt{"cpu": 120}}, errs: []string{"a.thresholds[cpu]"}},
		{name: "bad resource name", args: HighNodeUtilizationArgs{Thresholds: rt{"not a name": 10}}, errs: []string{"a.thresholds[not a name]"}},
		{name: "negative numberOfNodes", args: HighNodeUtilizationArgs{Thresholds: rt{"cpu": 10}, NumberOfNodes: -2}, errs: []string{"a.numberOfNodes"}},
		{name: "eviction mode", args: HighNodeUtilizationArgs{Thresholds: rt{"cpu": 10}, EvictionModes: []EvictionMode{"OnlyThresholdingResources"}}},
		{name: "unknown eviction mode", args: HighNodeUtilizationArgs{Thresholds: rt{"cpu": 10}, EvictionModes: []EvictionMode{"Everything"}}, errs: []string{"a.evictionModes[0]"}},
		{name: "namespaces", args: HighNodeUtilizationArgs{Thresholds: rt{"cpu": 10}, EvictableNamespaces: &pluginutil.Namespaces{Include: []string{"a"}, Exclude: []string{"b"}}}, errs: []string{"a.evictableNamespaces"}},
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

func TestBalance(t *testing.T) {
	objs := func(busyMilli int64) []runtime.Object {
		bare := fake.Pod("ns", "bare", "n2", 500)
		bare.OwnerReferences = nil
		return []runtime.Object{
			fake.Node("n1", nil, 10, 16), fake.Node("n2", nil, 10, 16), fake.Node("n3", nil, 10, 16),
			fake.Pod("ns", "a", "n1", 1000), fake.Pod("ns", "b", "n2", 1000), bare,
			fake.Pod("ns", "busy", "n3", busyMilli),
		}
	}
	cases := []struct {
		name    string
		args    HighNodeUtilizationArgs
		busy    int64
		evictor *defaultevictor.DefaultEvictorArgs
		want    []string
	}{
		{name: "empties the underutilized nodes", args: HighNodeUtilizationArgs{Thresholds: rt{"cpu": 20}}, busy: 6000, want: []string{"ns/a", "ns/b"}},
		{name: "bare pods too when the evictor allows them", args: HighNodeUtilizationArgs{Thresholds: rt{"cpu": 20}}, busy: 6000,
			evictor: &defaultevictor.DefaultEvictorArgs{PodProtections: defaultevictor.PodProtections{DefaultDisabled: []defaultevictor.PodProtection{defaultevictor.BarePods}}},
			want:    []string{"ns/a", "ns/b", "ns/bare"}},
		{name: "only what the other nodes can hold", args: HighNodeUtilizationArgs{Thresholds: rt{"cpu": 20}}, busy: 8500, want: []string{"ns/a"}},
		{name: "numberOfNodes", args: HighNodeUtilizationArgs{Thresholds: rt{"cpu": 20}, NumberOfNodes: 2}, busy: 6000},
		{name: "every node underutilized: nowhere to go", args: HighNodeUtilizationArgs{Thresholds: rt{"cpu": 90}}, busy: 6000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := plugintest.New(t, plugintest.Options{DefaultEvictor: tc.evictor}, objs(tc.busy)...)
			a := tc.args
			a.SetDefaults()
			pl, err := New(t.Context(), &a, env.Handle())
			if err != nil {
				t.Fatal(err)
			}
			env.Start(t)
			if got := env.Balance(t, pl.(*Plugin)); !slices.Equal(got, tc.want) {
				t.Fatalf("evicted %v, want %v", got, tc.want)
			}
		})
	}
}

// evictionModes [OnlyThresholdingResources]: a pod that requests none of the thresholds' resources
// stays where it is (upstream's mode).
func TestOnlyThresholdingResources(t *testing.T) {
	memOnly := fake.Pod("ns", "mem-only", "n1", 0)
	memOnly.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
	initCPU := fake.Pod("ns", "init-cpu", "n1", 0)
	initCPU.Spec.Containers[0].Resources.Requests = nil
	initCPU.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}
	objs := []runtime.Object{fake.Node("n1", nil, 10, 16), fake.Node("n2", nil, 10, 16),
		fake.Pod("ns", "cpu", "n1", 500), memOnly, initCPU, fake.Pod("ns", "busy", "n2", 6000)}
	for _, tc := range []struct {
		modes []EvictionMode
		want  []string
	}{
		{nil, []string{"ns/cpu", "ns/init-cpu", "ns/mem-only"}},
		{[]EvictionMode{EvictionModeOnlyThresholdingResources}, []string{"ns/cpu", "ns/init-cpu"}},
	} {
		env := plugintest.New(t, plugintest.Options{}, objs...)
		a := HighNodeUtilizationArgs{Thresholds: rt{"cpu": 20}, EvictionModes: tc.modes}
		a.SetDefaults()
		pl, err := New(t.Context(), &a, env.Handle())
		if err != nil {
			t.Fatal(err)
		}
		env.Start(t)
		got := env.Balance(t, pl.(*Plugin))
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("modes %v: evicted %v, want %v", tc.modes, got, tc.want)
		}
	}
}
