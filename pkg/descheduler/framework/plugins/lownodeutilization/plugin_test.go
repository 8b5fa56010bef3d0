package lownodeutilization

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/plugintest"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

type rt = pluginutil.ResourceThresholds

func TestArgs(t *testing.T) {
	cases := []struct {
		name  string
		args  LowNodeUtilizationArgs
		errs  []string
		check func(*testing.T, *LowNodeUtilizationArgs)
	}{
		{name: "both required", errs: []string{"a.thresholds", "a.targetThresholds"}},
		{name: "unlisted basic resources default to 100", args: LowNodeUtilizationArgs{Thresholds: rt{"cpu": 20}, TargetThresholds: rt{"cpu": 50}},
			check: func(t *testing.T, a *LowNodeUtilizationArgs) {
				if a.Thresholds["memory"] != 100 || a.TargetThresholds["pods"] != 100 {
					t.Fatalf("defaults %v %v", a.Thresholds, a.TargetThresholds)
				}
			}},
		{name: "threshold above target", args: LowNodeUtilizationArgs{Thresholds: rt{"cpu": 60}, TargetThresholds: rt{"cpu": 50}}, errs: []string{"a.thresholds[cpu]"}},
		{name: "out of range", args: LowNodeUtilizationArgs{Thresholds: rt{"cpu": -1}, TargetThresholds: rt{"cpu": 150}}, errs: []string{"a.thresholds[cpu]", "a.targetThresholds[cpu]"}},
		{name: "different resources", args: LowNodeUtilizationArgs{UseDeviationThresholds: true, Thresholds: rt{"cpu": 10}, TargetThresholds: rt{"memory": 10}},
			errs: []string{"a.targetThresholds[cpu]", "a.thresholds[memory]"}},
		{name: "negative numberOfNodes", args: LowNodeUtilizationArgs{Thresholds: rt{"cpu": 10}, TargetThresholds: rt{"cpu": 20}, NumberOfNodes: -1}, errs: []string{"a.numberOfNodes"}},
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

// cluster: three 10-CPU nodes; n1 runs 8 one-CPU pods (priorities 0..7), n2 one, n3 three.
func cluster(extra ...runtime.Object) []runtime.Object {
	objs := []runtime.Object{fake.Node("n1", nil, 10, 16), fake.Node("n2", nil, 10, 16), fake.Node("n3", nil, 10, 16)}
	for i := range 8 {
		p := fake.Pod("ns", fmt.Sprintf("p%d", i), "n1", 1000)
		p.Spec.Priority = ptr.To(int32(i))
		objs = append(objs, p)
	}
	objs = append(objs, fake.Pod("ns", "q0", "n2", 1000))
	for i := range 3 {
		objs = append(objs, fake.Pod("ns", fmt.Sprintf("r%d", i), "n3", 1000))
	}
	return append(objs, extra...)
}

func TestBalance(t *testing.T) {
	bare := fake.Pod("ns", "bare", "n1", 1000)
	bare.OwnerReferences = nil
	bare.Spec.Priority = ptr.To[int32](-1)
	cases := []struct {
		name  string
		args  LowNodeUtilizationArgs
		extra []runtime.Object
		want  []string
	}{
		{name: "until the node is back at its target", args: LowNodeUtilizationArgs{Thresholds: rt{"cpu": 20}, TargetThresholds: rt{"cpu": 50}},
			want: []string{"ns/p0", "ns/p1", "ns/p2"}},
		{name: "only as much as the underutilized nodes can take", args: LowNodeUtilizationArgs{Thresholds: rt{"cpu": 20}, TargetThresholds: rt{"cpu": 30}},
			want: []string{"ns/p0", "ns/p1"}},
		{name: "no underutilized node", args: LowNodeUtilizationArgs{Thresholds: rt{"cpu": 10}, TargetThresholds: rt{"cpu": 50}}},
		{name: "numberOfNodes", args: LowNodeUtilizationArgs{Thresholds: rt{"cpu": 20}, TargetThresholds: rt{"cpu": 50}, NumberOfNodes: 1}},
		{name: "evictableNamespaces", args: LowNodeUtilizationArgs{Thresholds: rt{"cpu": 20}, TargetThresholds: rt{"cpu": 50}, EvictableNamespaces: &pluginutil.Namespaces{Include: []string{"other"}}}},
		{name: "evictionLimits.node", args: LowNodeUtilizationArgs{Thresholds: rt{"cpu": 20}, TargetThresholds: rt{"cpu": 50},
			EvictionLimits: &pluginutil.EvictionLimits{Node: ptr.To[uint](2)}}, want: []string{"ns/p0", "ns/p1"}},
		{name: "evictionLimits.node 0", args: LowNodeUtilizationArgs{Thresholds: rt{"cpu": 20}, TargetThresholds: rt{"cpu": 50},
			EvictionLimits: &pluginutil.EvictionLimits{Node: ptr.To[uint](0)}}},
		{name: "deviation", args: LowNodeUtilizationArgs{UseDeviationThresholds: true, Thresholds: rt{"cpu": 15}, TargetThresholds: rt{"cpu": 15}},
			want: []string{"ns/p0", "ns/p1", "ns/p2"}},
		{name: "DefaultEvictor skips a bare pod but counts its requests", args: LowNodeUtilizationArgs{Thresholds: rt{"cpu": 20}, TargetThresholds: rt{"cpu": 50}},
			extra: []runtime.Object{bare}, want: []string{"ns/p0", "ns/p1", "ns/p2", "ns/p3"}}, // 90% -> 50%
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := plugintest.New(t, plugintest.Options{}, cluster(tc.extra...)...)
			a := tc.args
			a.SetDefaults()
			if errs := a.Validate(nil); len(errs) > 0 {
				t.Fatal(errs)
			}
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
