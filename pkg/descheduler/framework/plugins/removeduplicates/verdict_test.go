package removeduplicates

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/plugintest"
)

// NodeVerdict flags a node where the pod would be one duplicate too many: the same bound,
// ceil(owner's pods / nodes it could run on), Balance evicts above.
func TestNodeVerdict(t *testing.T) {
	objs := []runtime.Object{fake.Node("n1", nil, 8, 16), fake.Node("n2", nil, 8, 16), fake.Node("n3", nil, 8, 16)}
	// Five pods of rs "web": four on n1, one on n2, so at most two per node.
	for i := range 4 {
		objs = append(objs, owned(fmt.Sprintf("web-%d", i), "n1", "ReplicaSet", "web", "nginx"))
	}
	objs = append(objs, owned("web-4", "n2", "ReplicaSet", "web", "nginx"))
	env := plugintest.New(t, plugintest.Options{}, objs...)
	a := RemoveDuplicatesArgs{}
	a.SetDefaults()
	pl, err := New(t.Context(), &a, env.Handle())
	if err != nil {
		t.Fatal(err)
	}
	env.Start(t)
	p := pl.(*Plugin)
	nodes := map[string]*corev1.Node{}
	for _, n := range env.Nodes(t) {
		nodes[n.Name] = n
	}
	pods, err := env.Handle().GetPodsAssignedToNode("n1", func(p *corev1.Pod) bool { return p.Name == "web-0" })
	if err != nil || len(pods) != 1 {
		t.Fatalf("web-0: %v %v", pods, err)
	}
	for _, tc := range []struct {
		node string
		want bool
	}{
		{"n1", true},  // four there already
		{"n2", false}, // two with it
		{"n3", false}, // alone
	} {
		if got, why := p.NodeVerdict(pods[0], nodes[tc.node]); got != tc.want {
			t.Errorf("%s: flagged=%v (%s), want %v", tc.node, got, why, tc.want)
		}
	}
	// A pod of an excluded owner kind is never a duplicate.
	a.ExcludeOwnerKinds = []string{"ReplicaSet"}
	if got, _ := p.NodeVerdict(pods[0], nodes["n1"]); got {
		t.Error("excluded owner kind flagged")
	}
}
