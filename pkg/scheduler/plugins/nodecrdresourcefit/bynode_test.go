package nodecrdresourcefit

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/accord-sched/accord/apis/config"
	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/scheduler/crcache"
)

// Filter and Score, reading the NodeIndex, follow every CR change, Node update and Node delete, for
// the Node objects the informer delivered and for one it has not delivered yet.
func TestByNodeFollowsChanges(t *testing.T) {
	ctx := context.Background()
	index := crcache.NewNodeIndex()
	offers := index.ClusterScopedResourceHandler()
	offers.OnAdd(cr("n1", "1", map[corev1.ResourceName]bool{exMem: true}, map[corev1.ResourceName]schedv1alpha1.ResourceScore{exMem: 30}), true)
	p := New(&config.NodeCRDResourceFitArgs{MissingCRPolicy: config.MissingCRPolicyReject}, index)
	h := index.NodeHandler()
	n1 := st.MakeNode().Name("n1").Obj()
	h.OnAdd(n1, true)
	pod := st.MakePod().Name("p").Namespace("ns").Req(map[corev1.ResourceName]string{exMem: "1"}).Obj()
	state := framework.NewCycleState()
	if _, s := p.PreFilter(ctx, state, pod, nil); !s.IsSuccess() {
		t.Fatal(s)
	}
	ni := func(n *corev1.Node) fwk.NodeInfo {
		info := framework.NewNodeInfo()
		info.SetNode(n)
		return info
	}
	check := func(step string, n *corev1.Node, fits bool, score int64) {
		t.Helper()
		s := p.Filter(ctx, state, pod, ni(n))
		if s.IsSuccess() != fits {
			t.Fatalf("%s: Filter = %v, want fits=%v", step, s, fits)
		}
		if fits {
			if got, _ := p.Score(ctx, state, pod, ni(n)); got != score {
				t.Fatalf("%s: Score = %d, want %d", step, got, score)
			}
		}
	}
	check("the informer's Node", n1, true, 30)

	offers.OnAdd(cr("n1", "2", map[corev1.ResourceName]bool{exMem: true}, map[corev1.ResourceName]schedv1alpha1.ResourceScore{exMem: 70}), false)
	check("CR score changed", n1, true, 70)
	offers.OnAdd(cr("n1", "3", map[corev1.ResourceName]bool{exMem: false}, nil), false)
	check("CR disables the resource", n1, false, 0)
	offers.OnAdd(cr("n1", "4", map[corev1.ResourceName]bool{exMem: true}, map[corev1.ResourceName]schedv1alpha1.ResourceScore{exMem: 10}), false)

	n1b := n1.DeepCopy()
	n1b.Labels = map[string]string{"updated": "true"}
	check("a Node object the map does not hold yet", n1b, true, 10)
	h.OnUpdate(n1, n1b)
	check("updated Node", n1b, true, 10)
	offers.OnDelete(cr("n1", "5", nil, nil))
	check("CR deleted", n1b, false, 0)
	h.OnDelete(n1b)
	check("Node deleted", n1b, false, 0)
}
