package simulator

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// A tenant's selectors name the keys the index keeps pods by: past maxIndexedKeys, a selector whose
// equality requirements all name new keys is not narrowed, and one that also names an indexed key is
// narrowed by that key without indexing the new one.
func TestLabelIndexKeysBounded(t *testing.T) {
	x := newLabelIndex(nil)
	for i := range maxIndexedKeys {
		if _, ok := x.equalityPairs(labels.SelectorFromSet(labels.Set{fmt.Sprintf("k%02d", i): "v"}), nil); !ok {
			t.Fatalf("selector on key %d of %d not narrowed", i, maxIndexedKeys)
		}
	}
	version := x.keysVersion
	if _, ok := x.equalityPairs(labels.SelectorFromSet(labels.Set{"new": "v"}), nil); ok {
		t.Fatalf("a selector on a key past the %d indexed was narrowed", maxIndexedKeys)
	}
	got, ok := x.equalityPairs(labels.SelectorFromSet(labels.Set{"anew": "v", "k07": "w"}), nil)
	if !ok || len(got) != 1 || got[0] != x.pairHash("k07", "w") {
		t.Fatalf("a selector naming an indexed key (k07) and a new one: pairs %v, narrowed %v; want k07=w's", got, ok)
	}
	if len(x.keys) != maxIndexedKeys || x.keysVersion != version {
		t.Fatalf("%d keys indexed (version %d, was %d); want %d and no change", len(x.keys), x.keysVersion, version, maxIndexedKeys)
	}
}

// Warm (the descheduler calls it once its caches synced) indexes the keys the pods' selectors name
// (a spread constraint's, a required anti-affinity term's) and builds every node's entry, so the
// first prediction rebuilds only the entry of its pod's node (which it takes the pod off).
func TestWarmBuildsTheIndex(t *testing.T) {
	zone := func(z string) func(n *corev1.Node) {
		return func(n *corev1.Node) { n.Labels[corev1.LabelTopologyZone] = z }
	}
	spread := func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "a", "tier": "web"}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}}}
	}
	anti := func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "b"}
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}, TopologyKey: corev1.LabelHostname}}}}
	}
	a1 := pod("a1", "n1", "100m", spread)
	e := newTestEnv(t, envOptions{}, node("n1", "4", zone("z1")), node("n2", "4", zone("z2")), node("n3", "4", zone("z3")),
		a1, pod("a2", "n2", "100m", spread), pod("b1", "n3", "100m", anti))
	if err := e.sim.Warm(e.ctx); err != nil {
		t.Fatal(err)
	}
	x := e.sim.index
	if _, app := x.keys["app"]; !app || len(x.keys) != 2 || len(x.nodes) != 3 || x.built != 3 {
		t.Fatalf("after Warm: keys %v, %d node entries (%d built); want app and tier, 3 entries built once", x.keyList, len(x.nodes), x.built)
	}
	version := x.keysVersion
	e.beginCycle()
	e.predict(a1)
	if x.keysVersion != version || x.built != 4 {
		t.Fatalf("the first prediction after Warm: keys version %d (was %d), %d entries built in all; want no new key and one entry (n1's) rebuilt", x.keysVersion, version, x.built)
	}
}

// PodTopologySpread reads nodes at PreFilter for a pod's DoNotSchedule constraints and at PreScore
// for its ScheduleAnyway ones: a pod with constraints of one kind only gets views made at that
// extension point, and none at the other (the plugin skips it there before reading a node).
func TestSpreadViewsOnlyWhereRead(t *testing.T) {
	spread := func(when corev1.UnsatisfiableConstraintAction) func(p *corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Labels = map[string]string{"app": string(when)}
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname,
				WhenUnsatisfiable: when, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": string(when)}}}}
		}
	}
	hard, soft := pod("hard", "n1", "100m", spread(corev1.DoNotSchedule)), pod("soft", "n1", "100m", spread(corev1.ScheduleAnyway))
	e := newTestEnv(t, envOptions{noReuse: true}, node("n1", "4"), node("n2", "4"), node("n3", "4"), hard, soft)
	x := e.sim.index
	for _, c := range []struct {
		pod *corev1.Pod
		// scored: PreScore made views (and indexed them for Score).
		scored bool
	}{{hard, false}, {soft, true}} {
		skipped := x.skipped
		e.beginCycle()
		if pred := e.predict(c.pod); !pred.Feasible {
			t.Fatalf("%s: not feasible: %s", c.pod.Name, pred.Reason)
		}
		if x.skipped-skipped != 1 {
			t.Errorf("%s: %d extension points skipped; want 1", c.pod.Name, x.skipped-skipped)
		}
		if scored := len(x.byNI) > 0; scored != c.scored {
			t.Errorf("%s: PreScore made views: %v, want %v", c.pod.Name, scored, c.scored)
		}
	}
}
