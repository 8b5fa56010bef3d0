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

// PreFilter returns Skip exactly when Filter would pass every node of the snapshot, PreScore exactly
// when Score gives every node of it the same score, and their memory of those answers follows CR
// changes and a new node list.
func TestPreFilterSkipsFilterWhenEveryNodeFits(t *testing.T) {
	ctx := context.Background()
	scored := func(node, rv string, on bool, score schedv1alpha1.ResourceScore) *schedv1alpha1.ClusterScopedResource {
		return cr(node, rv, map[corev1.ResourceName]bool{exMem: on}, map[corev1.ResourceName]schedv1alpha1.ResourceScore{exMem: score})
	}
	enables := func(node, rv string, on bool) *schedv1alpha1.ClusterScopedResource { return scored(node, rv, on, 50) }
	store := crcache.NewOfferStore(enables("n1", "1", true), enables("n2", "1", true))
	index := crcache.NewNodeIndex().WatchOffers(store)
	infos := func(names ...string) []fwk.NodeInfo {
		var out []fwk.NodeInfo
		for _, n := range names {
			ni := framework.NewNodeInfo()
			ni.SetNode(st.MakeNode().Name(n).Obj())
			out = append(out, ni)
		}
		return out
	}
	memPod := st.MakePod().Name("p").Namespace("ns").Req(map[corev1.ResourceName]string{exMem: "1"}).Obj()
	ssdPod := st.MakePod().Name("q").Namespace("ns").Req(map[corev1.ResourceName]string{exSSD: "1"}).Obj()

	for _, tc := range []struct {
		policy config.MissingCRPolicy
		// skipsWithCRLessNode: whether a node without a CR still lets the pod skip Filter.
		skipsWithCRLessNode bool
	}{{config.MissingCRPolicyReject, false}, {config.MissingCRPolicyIgnore, true}} {
		t.Run(string(tc.policy), func(t *testing.T) {
			store.Put(enables("n1", "1", true))
			p := New(&config.NodeCRDResourceFitArgs{MissingCRPolicy: tc.policy}, index)
			check := func(step string, pod *corev1.Pod, nodes []fwk.NodeInfo, skip bool) {
				t.Helper()
				state := framework.NewCycleState()
				_, s := p.PreFilter(ctx, state, pod, nodes)
				if s.IsSkip() != skip || (!skip && !s.IsSuccess()) {
					t.Fatalf("%s: PreFilter = %v, want skip=%v", step, s, skip)
				}
				// Skip must mean that Filter passes every node; no Skip, that it rejects one.
				rejected := false
				for _, ni := range nodes {
					rejected = rejected || !p.Filter(ctx, state, pod, ni).IsSuccess()
				}
				if len(nodes) > 0 && rejected == skip {
					t.Fatalf("%s: PreFilter skip=%v but Filter rejected a node: %v", step, skip, rejected)
				}
				// PreScore's Skip must mean that Score gives every node the same score.
				skipScore := p.PreScore(ctx, state, pod, nodes)
				if !skipScore.IsSkip() && !skipScore.IsSuccess() {
					t.Fatalf("%s: PreScore = %v", step, skipScore)
				}
				same := len(nodes) > 0
				for _, ni := range nodes {
					a, _ := p.Score(ctx, state, pod, ni)
					b, _ := p.Score(ctx, state, pod, nodes[0])
					same = same && a == b
				}
				if skipScore.IsSkip() != same {
					t.Fatalf("%s: PreScore skip=%v, every node scores alike: %v", step, skipScore.IsSkip(), same)
				}
			}
			nodes := infos("n1", "n2")
			check("every CR enables the resource", memPod, nodes, true)
			check("the same again (remembered)", memPod, nodes, true)
			check("a resource no CR enables", ssdPod, nodes, false)

			store.Put(enables("n1", "2", false))
			check("n1's CR no longer enables it", memPod, nodes, false)
			store.Put(enables("n1", "3", true))
			check("n1's CR enables it again", memPod, nodes, true)
			store.Put(scored("n1", "4", true, 90))
			check("n1 scores higher (Score runs)", memPod, nodes, true)
			store.Put(scored("n1", "5", true, 50))
			check("n1 scores as n2 again (Score skipped)", memPod, nodes, true)

			withNew := infos("n1", "n2", "n3") // the snapshot's new list: n3 has no CR
			check("a node without a CR joined", memPod, withNew, tc.skipsWithCRLessNode)
			check("the old list", memPod, nodes, true)
			check("no nodes (nothing to skip)", memPod, nil, false)
		})
	}
}
