package simulator

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
)

func tainted(n *corev1.Node) {
	n.Spec.Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}}
}

// The snapshot follows node and pod add, update and delete events; each step is checked through a
// prediction made by kube-scheduler's default profile (NodeResourcesFit prefers the least
// allocated node) and through the resources the snapshot counts.
func TestSnapshotFollowsEvents(t *testing.T) {
	n1, n2 := node("n1", "4"), node("n2", "4")
	a, f1 := pod("a", "n1", "1"), pod("f1", "n1", "2")
	e := newTestEnv(t, envOptions{}, n1, n2, a, f1)

	p := e.expectNode(a, "n2")
	if !p.Moves() || p.Profile != DefaultSchedulerName || !p.CurrentNodeFeasible || p.CurrentNodeScore >= p.Score {
		t.Fatalf("prediction %+v: want a move to n2, which scores above the feasible current node", p)
	}
	if got := e.requestedMilliCPU("n1"); got != 3000 {
		t.Fatalf("n1 requests %dm CPU in the snapshot after a prediction, want 3000m (the pod is put back)", got)
	}

	// Pod add: n2 fills up, so n1 is now the better node and the pod would land back where it is.
	g := pod("g", "n2", "2500m")
	e.h.addPod(g)
	if p := e.expectNode(a, "n1"); p.Moves() {
		t.Fatalf("prediction %+v moves, want it to stay on n1", p)
	}

	// Pod update to a terminal phase: it no longer takes room.
	gDone := g.DeepCopy()
	gDone.Status.Phase = corev1.PodSucceeded
	e.h.updatePod(g, gDone)
	e.expectNode(a, "n2")
	e.h.deletePod(gDone)

	// An unbound pod is not counted; its binding (an update setting nodeName) is.
	pending := pod("pending", "", "2500m")
	e.h.addPod(pending)
	e.expectNode(a, "n2")
	bound := pending.DeepCopy()
	bound.Spec.NodeName = "n2"
	e.h.updatePod(pending, bound)
	e.expectNode(a, "n1")
	// Pod delete.
	e.h.deletePod(bound)
	e.expectNode(a, "n2")

	// Node update: a NoSchedule taint keeps the pod off n2.
	n2Tainted := n2.DeepCopy()
	tainted(n2Tainted)
	e.h.updateNode(n2, n2Tainted)
	e.expectNode(a, "n1")

	// Node add, then node delete.
	n3 := node("n3", "8")
	e.h.addNode(n3)
	e.expectNode(a, "n3")
	e.h.deleteNode(n3)
	p = e.expectNode(a, "n1")
	if p.FeasibleNodes != 1 || p.EvaluatedNodes != 2 {
		t.Fatalf("prediction %+v: want 1 feasible node of 2 evaluated", p)
	}
	if got := e.requestedMilliCPU("n1"); got != 3000 {
		t.Fatalf("n1 requests %dm CPU, want 3000m", got)
	}
	e.h.deletePod(f1)
	e.predict(a)
	if got := e.requestedMilliCPU("n1"); got != 1000 {
		t.Fatalf("n1 requests %dm CPU after f1 was deleted, want 1000m", got)
	}
}

func TestInfeasibleCarriesTheSchedulersReason(t *testing.T) {
	x := pod("x", "n1", "1", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "nowhere"} })
	e := newTestEnv(t, envOptions{}, node("n1", "4"), node("n2", "4"), x)
	p := e.predict(x)
	if p.Feasible || p.Node != "" || p.Moves() {
		t.Fatalf("prediction %+v: want infeasible", p)
	}
	for _, want := range []string{"0/2 nodes are available", "didn't match Pod's node affinity/selector"} {
		if !strings.Contains(p.Reason, want) {
			t.Fatalf("reason %q does not contain %q", p.Reason, want)
		}
	}

	other := pod("o", "n1", "1", func(p *corev1.Pod) { p.Spec.SchedulerName = "someone-else" })
	p = e.predict(other)
	if p.Feasible || !strings.Contains(p.Reason, `no scheduler profile "someone-else"`) {
		t.Fatalf("prediction %+v: want infeasible for lack of a profile", p)
	}
}

// Two evictions in one cycle never count on the same free room: once a is admitted to n2, n2 has
// no room for b, whose only other home is the node it is on.
func TestWithinCycleComposition(t *testing.T) {
	a, b := pod("a", "n1", "1"), pod("b", "n1", "1")
	e := newTestEnv(t, envOptions{},
		node("n1", "4"), node("n2", "4"), node("n3", "4"),
		a, b, pod("f", "n1", "2"), pod("g", "n2", "2500m"), pod("h", "n3", "4"))

	if err := e.sim.Admit(e.ctx, a, "n2"); err == nil {
		t.Fatal("Admit outside a cycle succeeded")
	}
	e.beginCycle()
	pa := e.expectNode(a, "n2")
	if err := e.sim.Admit(e.ctx, a, pa.Node); err != nil {
		t.Fatal(err)
	}
	if err := e.sim.Admit(e.ctx, a, pa.Node); err == nil {
		t.Fatal("admitting the same pod twice in a cycle succeeded")
	}
	if got, want := e.requestedMilliCPU("n2"), int64(3500); got != want {
		t.Fatalf("n2 requests %dm in the snapshot after the admission, want %dm", got, want)
	}
	if got, want := e.requestedMilliCPU("n1"), int64(3000); got != want {
		t.Fatalf("n1 requests %dm in the snapshot after the admission, want %dm", got, want)
	}
	pb := e.expectNode(b, "n1")
	if pb.Moves() {
		t.Fatalf("b would move (%+v) into the room already promised to a", pb)
	}
	e.sim.EndCycle(e.ctx)

	// The undo log restored the snapshot exactly.
	for _, n := range []string{"n1", "n2", "n3"} {
		if got, want := e.requestedMilliCPU(n), e.cachedMilliCPU(n); got != want {
			t.Fatalf("after EndCycle %s requests %dm in the snapshot, %dm in the cache", n, got, want)
		}
	}
	// Without a's admission, b alone would take n2's room.
	e.beginCycle()
	e.expectNode(b, "n2")
	e.sim.EndCycle(e.ctx)

	// BeginCycle without EndCycle reverts too.
	e.beginCycle()
	if err := e.sim.Admit(e.ctx, a, "n2"); err != nil {
		t.Fatal(err)
	}
	e.beginCycle()
	e.expectNode(b, "n2")
	if got := e.requestedMilliCPU("n2"); got != 2500 {
		t.Fatalf("n2 requests %dm after a new cycle began, want 2500m", got)
	}
}

// Only the nodes that changed are copied into the snapshot at the start of a cycle.
func TestSnapshotUpdateIsIncremental(t *testing.T) {
	e := newTestEnv(t, envOptions{}, node("n1", "4"), node("n2", "4"), pod("a", "n1", "1"), pod("b", "n2", "1"))
	e.beginCycle()
	podsOf := func(n string) *corev1.Pod {
		e.sim.mu.Lock()
		defer e.sim.mu.Unlock()
		return e.sim.nodeInfo(n).Pods[0].GetPod()
	}
	slot := func(n string) any {
		e.sim.mu.Lock()
		defer e.sim.mu.Unlock()
		return &e.sim.nodeInfo(n).Pods[0]
	}
	n1Slot, n2Slot := slot("n1"), slot("n2")
	e.sim.EndCycle(e.ctx)

	c := pod("c", "n1", "1")
	e.h.addPod(c)
	e.beginCycle()
	if slot("n2") != n2Slot {
		t.Fatal("n2 did not change, yet its NodeInfo was copied again")
	}
	if slot("n1") == n1Slot {
		t.Fatal("n1 changed, yet its NodeInfo was not copied")
	}
	if got := e.requestedMilliCPU("n1"); got != 2000 {
		t.Fatalf("n1 requests %dm, want 2000m", got)
	}
	if podsOf("n2").Name != "b" {
		t.Fatal("n2 lost its pod")
	}
}

// Accord's profile (manifests/scheduler/config.yaml) runs kube-scheduler's default plugins with
// NodeCRDResourceFit and LoadAware: a pod needing example.com/memory goes to the node whose
// ClusterScopedResource scores it highest, and never to a node whose CR does not enable it.
func TestAccordProfile(t *testing.T) {
	cfg, err := LoadConfig("../../../manifests/scheduler/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	withMem := func(n *corev1.Node) {
		n.Status.Allocatable["example.com/memory"] = resource.MustParse("10")
		n.Status.Capacity["example.com/memory"] = resource.MustParse("10")
	}
	cr := func(name string, enabled bool, score int64) runtime.Object {
		return &schedv1alpha1.ClusterScopedResource{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: schedv1alpha1.ClusterScopedResourceSpec{
				ResourcesFilter: map[corev1.ResourceName]bool{"example.com/memory": enabled, corev1.ResourceCPU: true, corev1.ResourceMemory: true},
				ResourcesScore:  map[corev1.ResourceName]schedv1alpha1.ResourceScore{"example.com/memory": schedv1alpha1.ResourceScore(score)},
			},
		}
	}
	p := pod("p", "n1", "100m", func(p *corev1.Pod) {
		p.Spec.SchedulerName = "accord-scheduler"
		p.Spec.Containers[0].Resources.Requests["example.com/memory"] = resource.MustParse("1")
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"example.com/memory": resource.MustParse("1")}
	})
	e := newTestEnv(t, envOptions{config: cfg, accord: []runtime.Object{cr("n1", true, 55), cr("n2", true, 80), cr("n3", false, 100)}},
		node("n1", "4", withMem), node("n2", "4", withMem), node("n3", "16", withMem), node("n4", "16", withMem), p)
	if got := e.sim.Profiles(); len(got) != 2 || got[0] != "accord-scheduler" || got[1] != DefaultSchedulerName {
		t.Fatalf("profiles %v, want accord-scheduler and the stock default-scheduler", got)
	}
	pred := e.expectNode(p, "n2")
	if pred.Profile != "accord-scheduler" || pred.FeasibleNodes != 2 {
		t.Fatalf("prediction %+v: want profile accord-scheduler and 2 feasible nodes", pred)
	}
}
