package simulator

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

// randomWorkload is the pod template of a workload of the random clusters: a mix of what
// InterPodAffinity and PodTopologySpread read (required and preferred pod (anti-)affinity on hosts
// and zones, across namespaces too, hard and soft spread constraints, node selectors, tolerations).
func randomWorkload(r *rand.Rand, j, workloads int) func(name, node string) *corev1.Pod {
	ns := []string{"a", "b"}[r.IntN(2)]
	app := fmt.Sprintf("w%d", j)
	tier := []string{"web", "db"}[r.IntN(2)]
	cpu := []string{"100m", "250m", "500m", "1"}[r.IntN(4)]
	own := &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	var aff corev1.Affinity
	if r.IntN(10) < 3 {
		aff.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{LabelSelector: own, TopologyKey: corev1.LabelHostname}}}
	}
	if r.IntN(10) < 2 {
		if aff.PodAntiAffinity == nil {
			aff.PodAntiAffinity = &corev1.PodAntiAffinity{}
		}
		term := corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "db"}}, TopologyKey: corev1.LabelTopologyZone}
		if r.IntN(2) == 0 {
			term.NamespaceSelector = &metav1.LabelSelector{} // every namespace
		}
		aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, term)
	}
	if r.IntN(10) < 2 {
		aff.PodAntiAffinity = cmpOr(aff.PodAntiAffinity, &corev1.PodAntiAffinity{})
		aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.WeightedPodAffinityTerm{{Weight: 50,
			PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: own, TopologyKey: corev1.LabelTopologyZone}}}
	}
	if r.IntN(10) < 2 {
		// Terms the label index narrows by an In requirement (and not by Exists), and one it cannot
		// narrow (NotIn alone).
		aff.PodAntiAffinity = cmpOr(aff.PodAntiAffinity, &corev1.PodAntiAffinity{})
		sel := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpExists},
			{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"db", "cache"}}}}
		if r.IntN(2) == 0 {
			sel = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{app}}}}
		}
		aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
			corev1.PodAffinityTerm{LabelSelector: sel, TopologyKey: corev1.LabelHostname})
	}
	if r.IntN(10) < 2 {
		aff.PodAffinity = cmpOr(aff.PodAffinity, &corev1.PodAffinity{})
		aff.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.WeightedPodAffinityTerm{{Weight: 30,
			PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}, TopologyKey: corev1.LabelTopologyZone}}}
	}
	if r.IntN(10) < 2 {
		other := fmt.Sprintf("w%d", r.IntN(workloads))
		aff.PodAffinity = cmpOr(aff.PodAffinity, &corev1.PodAffinity{})
		aff.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": other}}, TopologyKey: corev1.LabelTopologyZone}}
	}
	var spread []corev1.TopologySpreadConstraint
	if r.IntN(10) < 3 {
		spread = append(spread, corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: own})
	}
	if r.IntN(10) < 2 {
		spread = append(spread, corev1.TopologySpreadConstraint{MaxSkew: int32(1 + r.IntN(2)), TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: own})
	}
	if r.IntN(10) < 2 {
		spread = append(spread, corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "rack", WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": tier}}})
	}
	if r.IntN(10) < 3 {
		// A soft spread by hostname (PreScore is then given the scored nodes only).
		spread = append(spread, corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: own})
	}
	if r.IntN(10) == 0 {
		// A spread the label index cannot narrow (DoesNotExist alone).
		spread = append(spread, corev1.TopologySpreadConstraint{MaxSkew: 2, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "batch", Operator: metav1.LabelSelectorOpDoesNotExist}}}})
	}
	var selector map[string]string
	if r.IntN(10) == 0 {
		selector = map[string]string{corev1.LabelTopologyZone: "zone-1"}
	}
	var tolerations []corev1.Toleration
	if r.IntN(10) < 2 {
		tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	}
	return func(name, node string) *corev1.Pod {
		return pod(name, node, cpu, func(p *corev1.Pod) {
			p.Namespace, p.UID = ns, types.UID("uid-"+ns+"-"+name)
			p.Labels = map[string]string{"app": app, "tier": tier}
			if aff.PodAffinity != nil || aff.PodAntiAffinity != nil {
				p.Spec.Affinity = aff.DeepCopy()
			}
			p.Spec.TopologySpreadConstraints = spread
			p.Spec.NodeSelector = selector
			p.Spec.Tolerations = tolerations
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("256Mi")
			if r.IntN(25) == 0 {
				now := metav1.Now()
				p.DeletionTimestamp = &now
			}
		})
	}
}

func cmpOr[T any](v, def *T) *T {
	if v != nil {
		return v
	}
	return def
}

// TestPreFilterReuseEquivalence: on random clusters (zones, racks, a node without a zone, tainted
// nodes; workloads in two namespaces with anti-affinity, affinity and spread constraints, some of
// whose selectors the label index cannot narrow; some terminating pods), over several cycles with
// moves admitted and pods added and deleted between them, every prediction of a simulator that
// shares PreFilter state between a workload's candidates and narrows nodes with its label index
// (the default), and of one that only narrows, equals, field by field (feasibility, node, scores,
// counts, reason), a fresh simulation's by a simulator with neither, fed the same events.
func TestPreFilterReuseEquivalence(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 38))
			reuse := newTestEnv(t, envOptions{quiet: true})
			narrowed := newTestEnv(t, envOptions{quiet: true, noReuse: true})
			fresh := newTestEnv(t, envOptions{quiet: true, noReuse: true, noIndex: true})
			both := func(fn func(e *testEnv)) { fn(reuse); fn(narrowed); fn(fresh) }

			nodes := 20 + r.IntN(30)
			for i := range nodes {
				n := node(fmt.Sprintf("n%02d", i), []string{"4", "8", "16"}[r.IntN(3)])
				if i != 7 {
					n.Labels[corev1.LabelTopologyZone] = fmt.Sprintf("zone-%d", i%3)
				}
				n.Labels["rack"] = fmt.Sprintf("rack-%d", r.IntN(5))
				if i == 5 {
					// Two nodes with one hostname label value.
					n.Labels[corev1.LabelHostname] = "n04"
				}
				if r.IntN(8) == 0 {
					n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}}
				}
				both(func(e *testEnv) { e.h.addNode(n) })
			}
			workloads := 6 + r.IntN(6)
			templates := make([]func(name, node string) *corev1.Pod, workloads)
			var pods []*corev1.Pod
			serial := 0
			newPod := func(j int) *corev1.Pod {
				serial++
				return templates[j](fmt.Sprintf("p%d-%03d", j, serial), fmt.Sprintf("n%02d", r.IntN(nodes)))
			}
			for j := range workloads {
				templates[j] = randomWorkload(r, j, workloads)
				for range 2 + r.IntN(9) {
					p := newPod(j)
					pods = append(pods, p)
					both(func(e *testEnv) { e.h.addPod(p) })
				}
			}

			// One of the two narrowing simulators builds its index ahead (Warm, as the descheduler
			// does once its caches synced), the other as predictions read it: alternately by seed.
			warmed := narrowed
			if seed%2 == 1 {
				warmed = reuse
			}
			if err := warmed.sim.Warm(warmed.ctx); err != nil {
				t.Fatal(err)
			}

			predictions, admitted := 0, 0
			for cycle := range 3 {
				both(func(e *testEnv) { e.beginCycle() })
				moved := map[types.UID]bool{}
				order := r.Perm(len(pods))
				// The second cycle decides node after node, every pod of a node that moves admitted:
				// the batch of an event-triggered controller (a node's pods are mostly of distinct
				// workloads, so a workload's base is computed at a later node's candidate).
				batch := cycle == 1
				if batch {
					slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(pods[a].Spec.NodeName, pods[b].Spec.NodeName) })
				}
				for _, i := range order {
					p := pods[i]
					got, only, want := reuse.predict(p), narrowed.predict(p), fresh.predict(p)
					predictions++
					if got != want {
						t.Fatalf("cycle %d, pod %s/%s on %s (after %d admissions): with reuse and the label index %+v, fresh %+v", cycle, p.Namespace, p.Name, p.Spec.NodeName, admitted, got, want)
					}
					if only != want {
						t.Fatalf("cycle %d, pod %s/%s on %s (after %d admissions): with the label index %+v, fresh %+v", cycle, p.Namespace, p.Name, p.Spec.NodeName, admitted, only, want)
					}
					if want.Moves() && !moved[p.UID] && (batch || r.IntN(3) > 0) {
						moved[p.UID] = true
						admitted++
						both(func(e *testEnv) {
							if err := e.sim.Admit(e.ctx, p, want.Node); err != nil {
								t.Fatal(err)
							}
						})
					}
				}
				both(func(e *testEnv) { e.sim.EndCycle(e.ctx) })
				// Between cycles: a pod of a random workload deleted, another added.
				k := r.IntN(len(pods))
				gone := pods[k]
				pods = append(pods[:k], pods[k+1:]...)
				added := newPod(r.IntN(workloads))
				pods = append(pods, added)
				both(func(e *testEnv) { e.h.deletePod(gone); e.h.addPod(added) })
			}
			if reuse.sim.reuse == nil || reuse.sim.reuse.reused == 0 {
				t.Fatalf("the reuse simulator handed no shared state to the framework in %d predictions", predictions)
			}
			// Two plugins per prediction would be computed without sharing.
			t.Logf("%d predictions, %d admitted moves: %d plugin states computed, %d shared", predictions, admitted, reuse.sim.reuse.computed, reuse.sim.reuse.reused)
			if reuse.sim.reuse.computed >= int64(2*predictions) {
				t.Fatalf("%d plugin states computed for %d predictions: nothing was shared", reuse.sim.reuse.computed, predictions)
			}
			x := narrowed.sim.index
			t.Logf("label index: %d plugin calls narrowed, %d not", x.narrowed, x.passed)
			if x.narrowed == 0 {
				t.Fatalf("the label index narrowed no plugin call in %d predictions", predictions)
			}
		})
	}
}

// A workload's first candidate of a cycle runs the plugins' own PreFilter: its base is computed at
// the second candidate and shared from then on, until the cycle ends. A node's violators, of
// distinct workloads, thus compute no base.
func TestReuseBaseFromTheSecondCandidate(t *testing.T) {
	spread := func(app string) func(p *corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Labels = map[string]string{"app": app}
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
				WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}
		}
	}
	zone := func(z string) func(n *corev1.Node) {
		return func(n *corev1.Node) { n.Labels[corev1.LabelTopologyZone] = z }
	}
	a1, b1, c1 := pod("a1", "n1", "100m", spread("a")), pod("b1", "n1", "100m", spread("b")), pod("c1", "n1", "100m", spread("c"))
	a2 := pod("a2", "n2", "100m", spread("a"))
	e := newTestEnv(t, envOptions{}, node("n1", "4", zone("z1")), node("n2", "4", zone("z2")), node("n3", "4", zone("z3")), a1, b1, c1, a2)
	counts := func() (int64, int64) {
		e.sim.mu.Lock()
		defer e.sim.mu.Unlock()
		return e.sim.reuse.computed, e.sim.reuse.reused
	}
	for cycle := range 2 {
		e.beginCycle()
		computed0, reused0 := counts()
		// n1's pods, as a ClusterScopedResource change nominates them: three workloads, no base.
		for _, p := range []*corev1.Pod{a1, b1, c1} {
			e.predict(p)
		}
		if computed, reused := counts(); computed != computed0 || reused != reused0 {
			t.Fatalf("cycle %d, n1's three pods of three workloads: %d bases computed, %d shared; want none", cycle, computed-computed0, reused-reused0)
		}
		// a's second candidate computes its two bases (InterPodAffinity, PodTopologySpread) and
		// uses them; a's third prediction shares them.
		e.predict(a2)
		e.predict(a1)
		if computed, reused := counts(); computed-computed0 != 2 || reused-reused0 != 4 {
			t.Fatalf("cycle %d, a's second and third predictions: %d bases computed, %d shared; want 2 and 4", cycle, computed-computed0, reused-reused0)
		}
		e.sim.EndCycle(e.ctx)
	}
}

// A pod admitted onto a node that had no pod with required anti-affinity keeps, for the rest of the
// cycle, the pods its terms match off that node (the snapshot's lists, which InterPodAffinity
// walks, now name the node).
func TestAdmittedAntiAffinityIsSeen(t *testing.T) {
	for _, noReuse := range []bool{false, true} {
		t.Run(fmt.Sprintf("noReuse=%v", noReuse), func(t *testing.T) {
			a := pod("a", "n1", "1", func(p *corev1.Pod) {
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}, TopologyKey: corev1.LabelHostname}}}}
			})
			x := pod("x", "n3", "1", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "x"} })
			e := newTestEnv(t, envOptions{noReuse: noReuse},
				node("n1", "4"), node("n2", "4"), node("n3", "4"),
				a, pod("f", "n1", "2"), x, pod("g", "n3", "2500m"))
			e.beginCycle()
			// Before the move, x prefers the empty n2.
			e.expectNode(x, "n2")
			pa := e.expectNode(a, "n2")
			if err := e.sim.Admit(e.ctx, a, pa.Node); err != nil {
				t.Fatal(err)
			}
			// n2 (1 CPU requested) would be x's best node, but a's anti-affinity now holds it.
			e.expectNode(x, "n1")
			e.sim.EndCycle(e.ctx)
		})
	}
}

// A Namespace label change during a cycle drops the shared PreFilter state: InterPodAffinity reads
// the labels of the incoming pod's namespace for existing pods' terms with a namespaceSelector.
func TestNamespaceEventDropsSharedState(t *testing.T) {
	x := pod("x", "n1", "100m", func(p *corev1.Pod) {
		p.Namespace, p.UID = "b", "uid-b-x"
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "y"}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
			TopologyKey:       corev1.LabelHostname}}}}
	})
	y := pod("y", "n3", "1", func(p *corev1.Pod) { p.Namespace, p.UID, p.Labels = "a", "uid-a-y", map[string]string{"app": "y"} })
	nsA := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	e := newTestEnv(t, envOptions{}, nsA, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "b"}},
		node("n1", "4"), node("n2", "4"), node("n3", "4"),
		x, pod("f", "n2", "1"), y, pod("g", "n3", "2500m"))
	e.beginCycle()
	e.expectNode(y, "n1")
	e.expectNode(y, "n1") // from the shared state
	prod := nsA.DeepCopy()
	prod.Labels = map[string]string{"env": "prod"}
	if _, err := e.client.CoreV1().Namespaces().Update(e.ctx, prod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Namespace a is now selected by x's anti-affinity: once the update reaches the informer, y no
	// longer fits on n1, although its workload's state was computed before.
	deadline := time.Now().Add(wait.ForeverTestTimeout)
	for {
		p := e.predict(y)
		if p.Node == "n2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("prediction %+v %s after the namespace update: want n2", p, wait.ForeverTestTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.sim.EndCycle(e.ctx)
}
