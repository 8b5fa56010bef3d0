package removepodsviolatingtopologyspreadconstraint

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/defaultevictor"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/plugintest"
)

func TestArgs(t *testing.T) {
	a := RemovePodsViolatingTopologySpreadConstraintArgs{}
	a.SetDefaults()
	if !slices.Equal(a.Constraints, []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule}) || !*a.TopologyBalanceNodeFit {
		t.Fatalf("defaults %+v", a)
	}
	soft := RemovePodsViolatingTopologySpreadConstraintArgs{IncludeSoftConstraints: true}
	soft.SetDefaults()
	if !slices.Equal(soft.Constraints, []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}) {
		t.Fatalf("includeSoftConstraints gave %v", soft.Constraints)
	}
	bad := RemovePodsViolatingTopologySpreadConstraintArgs{Constraints: []corev1.UnsatisfiableConstraintAction{"Never"}}
	var got []string
	for _, e := range bad.Validate(field.NewPath("a")) {
		got = append(got, e.Field)
	}
	if !slices.Equal(got, []string{"a.constraints[0]"}) {
		t.Fatalf("errors on %v", got)
	}
}

func spread(when corev1.UnsatisfiableConstraintAction, mutate func(*corev1.TopologySpreadConstraint)) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		c := corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: when,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
		if mutate != nil {
			mutate(&c)
		}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{c}
	}
}

// cluster: zones a, b, c with one node each; four web pods in a, one in b.
func cluster(mutate ...func(*corev1.Pod)) []runtime.Object {
	objs := []runtime.Object{
		fake.Node("a1", map[string]string{"zone": "a"}, 8, 16), fake.Node("b1", map[string]string{"zone": "b"}, 8, 16),
		fake.Node("c1", map[string]string{"zone": "c"}, 8, 16),
	}
	add := func(name, node string, prio int32) {
		p := fake.Pod("ns", name, node, 100)
		p.Labels = map[string]string{"app": "web"}
		p.Spec.Priority = ptr.To(prio)
		for _, m := range mutate {
			m(p)
		}
		objs = append(objs, p)
	}
	for i := range 4 {
		add(fmt.Sprintf("a-%d", i), "a1", int32(i))
	}
	add("b-0", "b1", 0)
	return objs
}

func TestBalance(t *testing.T) {
	crs := []runtime.Object{plugintest.CSR("a1", corev1.ResourceCPU), plugintest.CSR("b1", corev1.ResourceCPU), plugintest.CSR("c1", corev1.ResourceCPU)}
	onlyAB := func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}}}}}}}
	}
	bare := func(p *corev1.Pod) { p.OwnerReferences = nil }
	cases := []struct {
		name    string
		args    RemovePodsViolatingTopologySpreadConstraintArgs
		objs    []runtime.Object
		crs     []runtime.Object
		evictor *defaultevictor.DefaultEvictorArgs
		want    []string
	}{
		{name: "moves the lowest-priority pods out of the crowded zone", objs: cluster(spread(corev1.DoNotSchedule, nil)), crs: crs, want: []string{"ns/a-0", "ns/a-1"}},
		{name: "maxSkew 3: one move brings 4-0 to 3-1", objs: cluster(spread(corev1.DoNotSchedule, func(c *corev1.TopologySpreadConstraint) { c.MaxSkew = 3 })), crs: crs, want: []string{"ns/a-0"}},
		{name: "soft constraints are skipped by default", objs: cluster(spread(corev1.ScheduleAnyway, nil)), crs: crs},
		{name: "soft constraints when asked", args: RemovePodsViolatingTopologySpreadConstraintArgs{Constraints: []corev1.UnsatisfiableConstraintAction{corev1.ScheduleAnyway}},
			objs: cluster(spread(corev1.ScheduleAnyway, nil)), crs: crs, want: []string{"ns/a-0", "ns/a-1"}},
		{name: "nodeFit: no other node's ClusterScopedResource enables cpu", objs: cluster(spread(corev1.DoNotSchedule, nil))},
		{name: "topologyBalanceNodeFit false", args: RemovePodsViolatingTopologySpreadConstraintArgs{TopologyBalanceNodeFit: ptr.To(false)},
			objs: cluster(spread(corev1.DoNotSchedule, nil)), want: []string{"ns/a-0", "ns/a-1"}},
		{name: "nodeAffinityPolicy Honor leaves zone c out", objs: cluster(spread(corev1.DoNotSchedule, nil), onlyAB), crs: crs, want: []string{"ns/a-0"}},
		{name: "nodeAffinityPolicy Ignore counts zone c", objs: cluster(spread(corev1.DoNotSchedule, func(c *corev1.TopologySpreadConstraint) {
			c.NodeAffinityPolicy = ptr.To(corev1.NodeInclusionPolicyIgnore)
		}), onlyAB), args: RemovePodsViolatingTopologySpreadConstraintArgs{TopologyBalanceNodeFit: ptr.To(false)}, want: []string{"ns/a-0", "ns/a-1"}},
		{name: "DefaultEvictor keeps bare pods", objs: cluster(spread(corev1.DoNotSchedule, nil), bare), crs: crs},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := plugintest.New(t, plugintest.Options{DefaultEvictor: tc.evictor, CRs: tc.crs}, tc.objs...)
			tc.args.SetDefaults()
			pl, err := New(t.Context(), &tc.args, env.Handle())
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
