package nodecrdresourcefit

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/accord-sched/accord/apis/config"
	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/scheduler/crcache"
)

const benchNodes = 5000

// BenchmarkFilterScore measures Filter followed by Score for one (pod, node) pair, cycling through
// 5000 nodes that each have a ClusterScopedResource, as the scheduler calls them. PreFilter runs
// once per pod, outside the measurement. by-name: the plugin has not seen the Node objects and
// looks CRs up by node name; by-node: it has (as from the scheduler's Node informer).
func BenchmarkFilterScore(b *testing.B) {
	type benchCase struct {
		name   string
		enable map[corev1.ResourceName]bool
		fits   bool
		byNode bool
	}
	var cases []benchCase
	for _, byNode := range []bool{false, true} {
		suffix := "/by-name"
		if byNode {
			suffix = "/by-node"
		}
		cases = append(cases,
			benchCase{name: "fits" + suffix, enable: map[corev1.ResourceName]bool{"cpu": true, "memory": true, exMem: true, exSSD: true}, fits: true, byNode: byNode},
			benchCase{name: "missing-resource" + suffix, enable: map[corev1.ResourceName]bool{"cpu": true, "memory": true, exMem: true}, byNode: byNode})
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			// As a Cache fills it: each CR with its compiled Offer.
			index := crcache.NewNodeIndex()
			offers := index.ClusterScopedResourceHandler()
			nodes := make([]fwk.NodeInfo, benchNodes)
			for i := range nodes {
				name := fmt.Sprintf("node-%d", i)
				offers.OnAdd(cr(name, "1", tc.enable, map[corev1.ResourceName]schedv1alpha1.ResourceScore{exMem: schedv1alpha1.ResourceScore(i % 101), exSSD: 40, "cpu": 10}), true)
				ni := framework.NewNodeInfo()
				ni.SetNode(st.MakeNode().Name(name).Obj())
				nodes[i] = ni
			}
			p := New(&config.NodeCRDResourceFitArgs{MissingCRPolicy: config.MissingCRPolicyReject}, index)
			if tc.byNode {
				h := index.NodeHandler()
				for _, ni := range nodes {
					h.OnAdd(ni.Node(), true)
				}
			}
			pod := st.MakePod().Name("p").Namespace("ns").
				Req(map[corev1.ResourceName]string{"cpu": "500m", "memory": "1Gi", exMem: "100Mi"}).
				InitReq(map[corev1.ResourceName]string{exSSD: "1"}).Obj()
			ctx := context.Background()
			state := framework.NewCycleState()
			if _, s := p.PreFilter(ctx, state, pod, nodes); !s.IsSuccess() {
				b.Fatal(s)
			}
			var sink int64
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				ni := nodes[i%benchNodes]
				if s := p.Filter(ctx, state, pod, ni); s.IsSuccess() != tc.fits {
					b.Fatalf("Filter = %v", s)
				} else if tc.fits {
					score, _ := p.Score(ctx, state, pod, ni)
					sink += score
				}
			}
			_ = sink
		})
	}
}
