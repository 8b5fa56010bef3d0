package lownodeutilization

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/plugintest"
)

// NodeVerdict flags a node that the pod would push over its target utilization, with the node
// usage Balance classifies nodes by.
func TestNodeVerdict(t *testing.T) {
	env := plugintest.New(t, plugintest.Options{}, cluster()...)
	a := LowNodeUtilizationArgs{Thresholds: rt{"cpu": 20}, TargetThresholds: rt{"cpu": 50}}
	a.SetDefaults()
	pl, err := New(t.Context(), &a, env.Handle())
	if err != nil {
		t.Fatal(err)
	}
	env.Start(t)
	p := pl.(*Plugin)
	nodes := map[string]int{}
	for i, n := range env.Nodes(t) {
		nodes[n.Name] = i
	}
	all := env.Nodes(t)
	pods, err := env.Handle().GetPodsAssignedToNode("n1", func(p *corev1.Pod) bool { return p.Name == "p0" })
	if err != nil || len(pods) != 1 {
		t.Fatalf("p0: %v %v", pods, err)
	}
	pod := pods[0] // 1 CPU on n1
	for _, tc := range []struct {
		node string
		want bool
	}{
		{"n1", true},  // 8 of 10 CPUs already: over 50% with or without it
		{"n2", false}, // 1 + 1 of 10
		{"n3", false}, // 3 + 1 of 10
	} {
		got, why := p.NodeVerdict(pod, all[nodes[tc.node]])
		if got != tc.want {
			t.Errorf("%s: flagged=%v (%s), want %v", tc.node, got, why, tc.want)
		}
	}
	// Deviation thresholds are relative to the whole cluster: not judged.
	a.UseDeviationThresholds = true
	if got, _ := p.NodeVerdict(pod, all[nodes["n1"]]); got {
		t.Error("deviation mode judged a node")
	}
}
