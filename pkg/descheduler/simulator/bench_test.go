package simulator

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

const (
	benchNodes       = 5000
	benchPodsPerNode = 20
)

// benchEnv is a simulator over benchNodes nodes holding benchPodsPerNode pods each (100k pods),
// fed to the cache through the simulator's event handlers, with kube-scheduler's default profile.
func benchEnv(b *testing.B) (*testEnv, []*corev1.Pod) {
	b.Helper()
	e := newTestEnv(b, envOptions{quiet: true})
	pods := make([]*corev1.Pod, 0, benchNodes*benchPodsPerNode)
	for i := range benchNodes {
		n := node(fmt.Sprintf("node-%05d", i), "32")
		n.Labels["topology.kubernetes.io/zone"] = fmt.Sprintf("zone-%d", i%3)
		e.h.addNode(n)
		for j := range benchPodsPerNode {
			p := pod(fmt.Sprintf("pod-%05d-%02d", i, j), n.Name, "500m", func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("256Mi")
			})
			e.h.addPod(p)
			pods = append(pods, p)
		}
	}
	e.beginCycle()
	return e, pods
}

// Every node fits every candidate, so the scheduler's search stops at its number of feasible nodes
// to find (10% of 5000 = 500 with the default adaptive percentageOfNodesToScore).
//
// BenchmarkPredict is one simulation of an eviction candidate (PreFilter, Filter until the
// scheduler's number of feasible nodes, PreScore, Score, with the pod taken off its node and put
// back) at 5000 nodes / 100k pods, with kube-scheduler's default profile.
func BenchmarkPredict(b *testing.B) {
	e, pods := benchEnv(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		p := pods[(i*7919)%len(pods)]
		i++
		if _, err := e.sim.predict(e.ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBeginCycle is the snapshot update at the start of a cycle after N pod events (pods
// updated on N distinct nodes) at 5000 nodes / 100k pods: cache.UpdateSnapshot copies only the
// NodeInfos of the changed nodes.
func BenchmarkBeginCycle(b *testing.B) {
	for _, events := range []int{0, 10, 100, 1000} {
		b.Run(fmt.Sprintf("events=%d", events), func(b *testing.B) {
			e, pods := benchEnv(b)
			b.ReportAllocs()
			round := 0
			for b.Loop() {
				b.StopTimer()
				for k := range events {
					old := pods[((round*events+k)*benchPodsPerNode+round)%len(pods)]
					upd := old.DeepCopy()
					upd.Labels = map[string]string{"round": fmt.Sprint(round)}
					e.h.updatePod(old, upd)
					pods[((round*events+k)*benchPodsPerNode+round)%len(pods)] = upd
				}
				round++
				b.StartTimer()
				if err := e.sim.BeginCycle(e.ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
