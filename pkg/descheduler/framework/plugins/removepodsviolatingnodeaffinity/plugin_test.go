package removepodsviolatingnodeaffinity

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/defaultevictor"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/plugintest"
)

func TestArgs(t *testing.T) {
	cases := []struct {
		name string
		args RemovePodsViolatingNodeAffinityArgs
		errs []string
	}{
		{name: "type required", errs: []string{"a.nodeAffinityType"}},
		{name: "unknown type", args: RemovePodsViolatingNodeAffinityArgs{NodeAffinityType: []string{Required, "requiredDuringExecution"}}, errs: []string{"a.nodeAffinityType[1]"}},
		{name: "both types", args: RemovePodsViolatingNodeAffinityArgs{NodeAffinityType: []string{Required, Preferred}}},
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

func requiring(name, node, zone string) *corev1.Pod {
	p := fake.Pod("ns", name, node, 100)
	p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}}}}}
	return p
}

func preferring(name, node, zone string) *corev1.Pod {
	p := fake.Pod("ns", name, node, 100)
	p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
		Weight: 10, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}}}}}
	return p
}

func TestDeschedule(t *testing.T) {
	selecting := fake.Pod("ns", "selector-b", "a1", 100)
	selecting.Spec.NodeSelector = map[string]string{"zone": "b"}
	objs := []runtime.Object{
		fake.Node("a1", map[string]string{"zone": "a"}, 8, 16), fake.Node("b1", map[string]string{"zone": "b"}, 8, 16),
		requiring("wants-b", "a1", "b"), requiring("wants-a", "a1", "a"), requiring("wants-c", "a1", "c"),
		preferring("prefers-b", "a1", "b"), preferring("prefers-a", "a1", "a"), selecting,
	}
	crs := []runtime.Object{plugintest.CSR("a1", corev1.ResourceCPU), plugintest.CSR("b1", corev1.ResourceCPU)}
	cases := []struct {
		name    string
		types   []string
		evictor *defaultevictor.DefaultEvictorArgs
		crs     []runtime.Object
		want    []string
	}{
		{name: "required: only pods that fit elsewhere", types: []string{Required}, crs: crs, want: []string{"ns/selector-b", "ns/wants-b"}},
		{name: "preferred", types: []string{Preferred}, crs: crs, want: []string{"ns/prefers-b"}},
		{name: "both", types: []string{Required, Preferred}, crs: crs, want: []string{"ns/prefers-b", "ns/selector-b", "ns/wants-b"}},
		{name: "the other node's ClusterScopedResource does not enable cpu: nothing fits", types: []string{Required, Preferred}, crs: crs[:1]},
		{name: "DefaultEvictor labelSelector keeps unlabelled pods", types: []string{Required, Preferred}, crs: crs,
			evictor: &defaultevictor.DefaultEvictorArgs{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
		{name: "DefaultEvictor nodeFit with a node selector excluding zone b", types: []string{Required}, crs: crs,
			evictor: &defaultevictor.DefaultEvictorArgs{NodeFit: true, NodeSelector: "zone=a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := plugintest.New(t, plugintest.Options{DefaultEvictor: tc.evictor, CRs: tc.crs}, objs...)
			args := &RemovePodsViolatingNodeAffinityArgs{NodeAffinityType: tc.types}
			pl, err := New(t.Context(), args, env.Handle())
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
