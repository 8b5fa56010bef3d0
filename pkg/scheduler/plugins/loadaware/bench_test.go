package loadaware

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	clocktesting "k8s.io/utils/clock/testing"

	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	"github.com/accord-sched/accord/pkg/scheduler/crcache"
)

const benchNodes = 5000

// BenchmarkFilterScore measures Filter followed by Score for one (pod, node) pair, cycling through
// 5000 nodes, as the scheduler calls them. PreFilter runs once per pod, outside the measurement.
// The nodes are visited in a fixed random order rather than in the order their data was allocated,
// which the CPU's prefetchers would follow: the scheduler visits them from a rotating offset, with
// every other plugin's reads in between.
func BenchmarkFilterScore(b *testing.B) {
	now := time.Now()
	for _, tc := range []struct {
		name       string
		withMetric bool
	}{
		{name: "fresh-metrics", withMetric: true},
		{name: "no-metrics"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var metrics []*slov1alpha1.NodeMetric
			nodes := make([]fwk.NodeInfo, benchNodes)
			nodeObjs := make([]*corev1.Node, benchNodes)
			for i := range nodes {
				n := node(fmt.Sprintf("node-%d", i))
				nodeObjs[i] = n
				if tc.withMetric {
					metrics = append(metrics, nm(n.Name, "1", now, fmt.Sprintf("%dm", 500+i%2500), fmt.Sprintf("%dMi", 1024+i%8192)))
				}
				ni := framework.NewNodeInfo()
				ni.SetNode(n)
				nodes[i] = ni
			}
			// As a Cache fills it: each metric with its compiled Load.
			index := crcache.NewNodeIndex()
			for _, m := range metrics {
				index.NodeMetricHandler().OnAdd(m, true)
			}
			p := New(args80(), index, nodeLister(b), clocktesting.NewFakePassiveClock(now))
			// As the scheduler's Node informer delivers them, sharing the objects with its snapshot.
			h := index.NodeHandler()
			for _, n := range nodeObjs {
				h.OnAdd(n, true)
			}
			pod := st.MakePod().Name("p").Namespace("ns").Req(map[corev1.ResourceName]string{"cpu": "500m", "memory": "1Gi"}).Obj()
			ctx := context.Background()
			state := framework.NewCycleState()
			if _, s := p.PreFilter(ctx, state, pod, nodes); !s.IsSuccess() {
				b.Fatal(s)
			}
			order := rand.New(rand.NewPCG(1, 2)).Perm(benchNodes)
			var sink int64
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				ni := nodes[order[i%benchNodes]]
				if s := p.Filter(ctx, state, pod, ni); !s.IsSuccess() {
					b.Fatalf("Filter = %v", s)
				}
				score, _ := p.Score(ctx, state, pod, ni)
				sink += score
			}
			_ = sink
		})
	}
}
