package removepodsviolatingnodetaints

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/defaultevictor"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/plugintest"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

func TestArgs(t *testing.T) {
	cases := []struct {
		name string
		args RemovePodsViolatingNodeTaintsArgs
		errs []string
	}{
		{name: "empty is valid"},
		{name: "both lists", args: RemovePodsViolatingNodeTaintsArgs{ExcludedTaints: []string{"a"}, IncludedTaints: []string{"b"}}, errs: []string{"a.includedTaints"}},
		{name: "bad taint key", args: RemovePodsViolatingNodeTaintsArgs{ExcludedTaints: []string{"bad key=v"}}, errs: []string{"a.excludedTaints[0]"}},
		{name: "bad taint value", args: RemovePodsViolatingNodeTaintsArgs{IncludedTaints: []string{"k=bad value"}}, errs: []string{"a.includedTaints[0]"}},
		{name: "namespaces", args: RemovePodsViolatingNodeTaintsArgs{Namespaces: &pluginutil.Namespaces{Include: []string{"a"}, Exclude: []string{"b"}}}, errs: []string{"a.namespaces"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.args.SetDefaults()
			var got []string
			for _, e := range tc.args.Validate(field.NewPath("a")) {
				got = append(got, e.Field)
			}
			if !slices.Equal(got, tc.errs) {
				t.Fatalf("errors on %v, want %v", got, tc.errs)
			}
		})
	}
}

func tainted(name string, taints ...corev1.Taint) *corev1.Node {
	n := fake.Node(name, nil, 8, 16)
	n.Spec.Taints = taints
	return n
}

func TestDeschedule(t *testing.T) {
	noSched := corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}
	prefer := corev1.Taint{Key: "soft", Value: "x", Effect: corev1.TaintEffectPreferNoSchedule}
	tolerating := fake.Pod("ns", "tolerates", "n1", 100)
	tolerating.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "db", Effect: corev1.TaintEffectNoSchedule}}
	critical := fake.Pod("ns", "critical", "n1", 100)
	critical.Spec.Priority = ptr.To[int32](2000000000)
	objs := []runtime.Object{
		tainted("n1", noSched), tainted("n2", prefer), tainted("n3"),
		fake.Pod("ns", "on-n1", "n1", 100), tolerating, critical,
		fake.Pod("ns", "on-n2", "n2", 100), fake.Pod("ns", "on-n3", "n3", 100),
	}
	cases := []struct {
		name    string
		args    RemovePodsViolatingNodeTaintsArgs
		evictor *defaultevictor.DefaultEvictorArgs
		crs     []runtime.Object
		want    []string
	}{
		{name: "NoSchedule only; tolerating and critical pods stay", want: []string{"ns/on-n1"}},
		{name: "includePreferNoSchedule", args: RemovePodsViolatingNodeTaintsArgs{IncludePreferNoSchedule: true}, want: []string{"ns/on-n1", "ns/on-n2"}},
		{name: "excluded by key", args: RemovePodsViolatingNodeTaintsArgs{ExcludedTaints: []string{"dedicated"}}},
		{name: "excluded by key=value", args: RemovePodsViolatingNodeTaintsArgs{ExcludedTaints: []string{"dedicated=db"}}},
		{name: "excluded value differs", args: RemovePodsViolatingNodeTaintsArgs{ExcludedTaints: []string{"dedicated=web"}}, want: []string{"ns/on-n1"}},
		{name: "included only soft", args: RemovePodsViolatingNodeTaintsArgs{IncludePreferNoSchedule: true, IncludedTaints: []string{"soft"}}, want: []string{"ns/on-n2"}},
		{name: "DefaultEvictor may evict critical pods", evictor: &defaultevictor.DefaultEvictorArgs{EvictSystemCriticalPods: true}, want: []string{"ns/critical", "ns/on-n1"}},
		{name: "DefaultEvictor nodeFit: n3 is free and enables cpu", evictor: &defaultevictor.DefaultEvictorArgs{NodeFit: true},
			crs: []runtime.Object{plugintest.CSR("n3", corev1.ResourceCPU)}, want: []string{"ns/on-n1"}},
		{name: "DefaultEvictor nodeFit: no node's ClusterScopedResource enables cpu", evictor: &defaultevictor.DefaultEvictorArgs{NodeFit: true}},
		{name: "namespace excluded", args: RemovePodsViolatingNodeTaintsArgs{Namespaces: &pluginutil.Namespaces{Exclude: []string{"ns"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := plugintest.New(t, plugintest.Options{DefaultEvictor: tc.evictor, CRs: tc.crs}, objs...)
			tc.args.SetDefaults()
			pl, err := New(t.Context(), &tc.args, env.Handle())
			if err != nil {
				t.Fatal(err)
			}
			env.Start(t)
			if got := env.Deschedule(t, pl.(*Plugin)); !slices.Equal(got, tc.want) {
				t.Fatalf("evicted %v, want %v", got, tc.want)
			}
		})
	}
}
