package lownodeload

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/plugintest"
)

// NodeVerdict flags a node whose fresh metric plus the pod's measured usage is over the high
// thresholds (constraints.CheckLoad, as Balance and LoadAware's Filter).
func TestNodeVerdict(t *testing.T) {
	n1, n2, n3, n4 := fake.Node("n1", nil, 10, 16), fake.Node("n2", nil, 10, 16), fake.Node("n3", nil, 10, 16), fake.Node("n4", nil, 10, 16)
	objs := append(pods("n1", hotPods...), n1, n2, n3, n4)
	crs := []runtime.Object{
		metric("n1", 9000, 0, hotPods...), // the pods' node: low-big uses 2 CPUs there
		metric("n2", 5000, 0),             // 5 + 2 = 70% > 65%
		metric("n3", 4000, 0),             // 4 + 2 = 60%
		metric("n4", 9000, time.Hour),     // stale: never drained, never flagged
	}
	env := plugintest.New(t, plugintest.Options{CRs: crs}, objs...)
	args := LowNodeLoadArgs{
		HighThresholds: map[corev1.ResourceName]int64{corev1.ResourceCPU: 65, corev1.ResourceMemory: 95},
		LowThresholds:  map[corev1.ResourceName]int64{corev1.ResourceCPU: 45, corev1.ResourceMemory: 75},
	}
	args.SetDefaults()
	pl, err := New(t.Context(), &args, env.Handle())
	if err != nil {
		t.Fatal(err)
	}
	p := pl.(*Plugin)
	p.clock = testingclock.NewFakePassiveClock(now)
	env.Start(t)
	got, err := env.Handle().GetPodsAssignedToNode("n1", func(p *corev1.Pod) bool { return p.Name == "low-big" })
	if err != nil || len(got) != 1 {
		t.Fatalf("low-big: %v %v", got, err)
	}
	pod := got[0]
	for _, tc := range []struct {
		node *corev1.Node
		want bool
	}{{n1, true}, {n2, true}, {n3, false}, {n4, false}} {
		if flagged, why := p.NodeVerdict(pod, tc.node); flagged != tc.want {
			t.Errorf("%s: flagged=%v (%s), want %v", tc.node.Name, flagged, why, tc.want)
		}
	}
}
