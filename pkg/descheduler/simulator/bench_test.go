package simulator

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// heterogeneousEnv is a simulator over benchNodes nodes in three zones holding benchPodsPerNode
// pods each, in groups of ten replicas on ten different nodes, with the specs of test/scale's
// heterogeneous population: a fifth of the groups StatefulSet-like (required pod anti-affinity on
// the hostname within the group), three twentieths Jobs (no constraint), the others
// ReplicaSet-like, a third of which spread over zones (DoNotSchedule, maxSkew 1) and the rest over
// hosts (ScheduleAnyway). It returns the pods by group.
func heterogeneousEnv(b *testing.B, noReuse, noIndex bool) (*testEnv, [][]*corev1.Pod) {
	b.Helper()
	e := newTestEnv(b, envOptions{quiet: true, noReuse: noReuse, noIndex: noIndex})
	for i := range benchNodes {
		n := node(fmt.Sprintf("node-%05d", i), "32")
		n.Labels[corev1.LabelTopologyZone] = fmt.Sprintf("zone-%d", i%3)
		e.h.addNode(n)
	}
	total := benchNodes * benchPodsPerNode
	groups := make([][]*corev1.Pod, total/10)
	for i := range total {
		g := i / 10
		app := fmt.Sprintf("g%05d", g)
		// The ten replicas of a group on ten nodes 500 apart.
		nodeIdx := (g + (i%10)*(benchNodes/10)) % benchNodes
		p := pod(fmt.Sprintf("pod-%06d", i), fmt.Sprintf("node-%05d", nodeIdx), "100m", func(p *corev1.Pod) {
			p.Labels = map[string]string{"app": app}
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("256Mi")
			own := &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
			switch k := g % 20; {
			case k >= 17: // Job
			case k >= 12:
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{LabelSelector: own, TopologyKey: corev1.LabelHostname}}}}
			case g%3 == 0:
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: own}}
			default:
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: own}}
			}
		})
		e.h.addPod(p)
		groups[g] = append(groups[g], p)
	}
	return e, groups
}

// BenchmarkPredictCycle is a cycle of the heterogeneous-like population at 5000 nodes / 100k pods:
// BeginCycle, then the candidates of 20 groups (one of each of the 20 group kinds; perWorkload
// replicas of each, interleaved as a descheduler nominating node by node would), every fourth
// candidate that moves admitted; ns/candidate is the mean time per prediction. plain runs every
// PreFilter plugin per candidate over every pod (no label index, no reuse); fresh runs every
// PreFilter plugin per candidate with the label index; reuse also shares InterPodAffinity's and
// PodTopologySpread's PreFilter state.
//
// With the label index (2 cores, load average 4-5, -benchtime=3x): one candidate per workload
// plain 56.1 ms, fresh 13.6 ms, reuse 8.3 ms per candidate; ten per workload 54.3, 5.3 and 4.1 ms.
//
// Before it (fresh without the index, as plain is now), two runs (-benchtime=2x, 2 cores shared with other jobs at load average 15-32, so wall times are
// several times the CPU ones; read the ratios): reuse/fresh per candidate 0.26x and 0.20x with 10
// candidates per workload, 0.48x with 3 (first run only), 0.75x and 1.28x with 1, where nothing can
// be shared (the load's noise).
func BenchmarkPredictCycle(b *testing.B) {
	for _, perWorkload := range []int{10, 3, 1} {
		for _, mode := range []string{"plain", "fresh", "reuse"} {
			b.Run(fmt.Sprintf("candidatesPerWorkload=%d/%s", perWorkload, mode), func(b *testing.B) {
				e, groups := heterogeneousEnv(b, mode != "reuse", mode == "plain")
				b.ReportAllocs()
				round, candidates := 0, 0
				for b.Loop() {
					if err := e.sim.BeginCycle(e.ctx); err != nil {
						b.Fatal(err)
					}
					// 20 consecutive groups (every kind), a different block each round.
					first := (round * 20) % len(groups)
					round++
					n := 0
					for r := range perWorkload {
						for g := first; g < first+20; g++ {
							p := groups[g][r]
							pred, err := e.sim.Predict(e.ctx, p)
							if err != nil {
								b.Fatal(err)
							}
							candidates++
							if n++; n%4 == 0 && pred.Moves() {
								if err := e.sim.Admit(e.ctx, p, pred.Node); err != nil {
									b.Fatal(err)
								}
							}
						}
					}
					e.sim.EndCycle(e.ctx)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(candidates), "ns/candidate")
			})
		}
	}
}
