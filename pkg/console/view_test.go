package console

import (
	"maps"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	"github.com/accord-sched/accord/pkg/constraints"
	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	"github.com/accord-sched/accord/pkg/descheduler/framework/decision"
)

func metric(name string, cpu string, at time.Time) *slov1alpha1.NodeMetric {
	return &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: slov1alpha1.NodeMetricStatus{
		UpdateTime: &metav1.Time{Time: at},
		NodeUsage:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")},
	}}
}

// With the usage estimate on, a node shows its reported and its estimated usage, and is over its
// threshold by the estimate: pod "a", missing from the report, counts 85% of 250m (no requests).
func TestNodeGridEstimatedUsage(t *testing.T) {
	s := newTestState(t, node("n", "1"), metric("n", "500m", now.Add(-10*time.Second)), pod("a", "n", "", now), pod("b", "n", "", now))
	s.thresholds.Estimator = constraints.NewUsageEstimator([]constraints.ResourceFactor{{Name: corev1.ResourceCPU, Percent: 85}}, 0)
	v := s.buildView(now)
	lv := v.Nodes[0].Load
	if lv.EstimatedPods != 2 || lv.Resources[0].Percent != 50 || lv.Resources[0].EstimatedPercent != 92 || !lv.Resources[0].Over {
		t.Errorf("load %+v: want 2 estimated pods, cpu reported 50%%, estimated 92%% (0.5 + 2 × 0.2125 of 1), over 80%%", lv)
	}
}

func TestNodeGrid(t *testing.T) {
	hot := node("hot", "10")
	hot.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}
	s := newTestState(t,
		hot, node("stale", "10"), node("bare", "10"),
		&schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: "hot"}, Spec: schedv1alpha1.ClusterScopedResourceSpec{
			ResourcesFilter: map[corev1.ResourceName]bool{"cpu": true, "example.com/memory": false},
			ResourcesScore:  map[corev1.ResourceName]schedv1alpha1.ResourceScore{"example.com/memory": 55},
		}},
		metric("hot", "8500m", now.Add(-10*time.Second)),
		metric("stale", "1", now.Add(-10*time.Minute)),
		pod("a", "hot", "", now),
	)
	v := s.buildView(now)
	if len(v.Nodes) != 3 {
		t.Fatalf("%d nodes, want 3", len(v.Nodes))
	}
	byName := map[string]NodeView{}
	for _, n := range v.Nodes {
		byName[n.Name] = n
	}
	want := NodeView{Name: "hot", Ready: true, Taints: []string{"dedicated=db:NoSchedule"}, HasCR: true,
		Resources: []ResourceView{{Name: "cpu", Enabled: true}, {Name: "example.com/memory", Score: 55}},
		Load: LoadView{Reported: true, UpdatedAt: now.Add(-10 * time.Second), Resources: []LoadResource{
			{Name: "cpu", Percent: 85, EstimatedPercent: 85, Threshold: 80, Over: true}, {Name: "memory", Percent: 10, EstimatedPercent: 10, Threshold: 80},
		}},
		Pods: []PodView{{Namespace: "demo", Name: "a", Phase: "Running"}}, PodCount: 1,
	}
	if d := cmp.Diff(want, byName["hot"]); d != "" {
		t.Errorf("hot node (-want +got):\n%s", d)
	}
	if st := byName["stale"].Load; !st.Reported || !st.Stale || st.Resources[0].Over {
		t.Errorf("a 10-minute-old metric (expiry 3m): %+v, want reported, stale, nothing over", st)
	}
	if b := byName["bare"]; b.HasCR || b.Load.Reported || !b.Load.Stale {
		t.Errorf("a node without CR or metric: %+v", b)
	}
}

func TestPendingPodShowsTheSchedulersLatestMessage(t *testing.T) {
	p := pod("waiting", "", "", now)
	withCondition := pod("condition-only", "", "", now)
	withCondition.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Message: "from the condition"}}
	s := newTestState(t, p, withCondition,
		event("FailedScheduling", p, now.Add(-time.Minute), "old"),
		event("FailedScheduling", p, now, "0/6 nodes are available: 6 NodeCRDResourceFit: node does not enable example.com/memory."),
		event("Scheduled", p, now.Add(time.Second), "not a failure"),
	)
	v := s.buildView(now)
	got := map[string]string{}
	for _, pv := range v.Pending {
		got[pv.Name] = pv.Reason
	}
	want := map[string]string{"waiting": "0/6 nodes are available: 6 NodeCRDResourceFit: node does not enable example.com/memory.", "condition-only": "from the condition"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("pending reasons (-want +got):\n%s", d)
	}
}

func TestEvictionTimeline(t *testing.T) {
	const rs = "rs-uid"
	evictedAt := now.Add(-30 * time.Second)
	first, second := pod("m-1", "node-5", rs, now.Add(-time.Hour)), pod("m-2", "node-5", rs, now.Add(-time.Hour))
	before := pod("m-0", "node-2", rs, now.Add(-time.Hour))
	repl1, repl2 := pod("m-3", "node-2", rs, evictedAt.Add(time.Second)), pod("m-4", "", rs, evictedAt.Add(2*time.Second))
	other := pod("x", "node-2", "other-rs", evictedAt.Add(time.Second))
	soft, vm := pod("s-1", "node-5", "soft-rs", now.Add(-time.Hour)), pod("vm-1", "node-5", "vm-rs", now.Add(-time.Hour))
	s := newTestState(t, first, second, before, repl1, repl2, other, soft, vm,
		decisionEvent(evictions.ReasonDescheduled, first, evictedAt, "NodeCRDResourceFit", "accord", "node node-5 does not enable example.com/memory",
			decision.VerdictEvicted, predicted("node-2", 155)),
		decisionEvent(evictions.ReasonDescheduled, second, evictedAt.Add(500*time.Millisecond), "LowNodeLoad", "accord", "hot", decision.VerdictEvicted),
		event(evictions.ReasonDescheduled, pod("unknown", "", "", now), evictedAt, "Evicted by someone else"),
		decisionEvent(evictions.ReasonEvictionHeld, before, evictedAt.Add(time.Second), "NodeCRDResourceFit", "accord", "", decision.VerdictHeld,
			heldBy(evictions.HeldWorkloadBudget, "workload budget: Deployment demo/m (20 replicas) has 2 of 2 allowed by maxMigratingPerWorkload (default)")),
		decisionEvent(evictions.ReasonSoftEvicted, soft, evictedAt.Add(2*time.Second), "NodeCRDResourceFit", "moves", "cpu not enabled", decision.VerdictSoftEvicted),
		decisionEvent(evictions.ReasonEvictionInBackground, vm, evictedAt.Add(3*time.Second), "NodeCRDResourceFit", "accord", "cpu not enabled", decision.VerdictInBackground),
	)
	s.podGone(first)
	s.podGone(second)
	v := s.buildView(now)
	score := int64(155)
	want := []Eviction{
		{Time: evictedAt.Add(3 * time.Second), Namespace: "demo", Pod: "vm-1", Node: "node-5", Plugin: "NodeCRDResourceFit", Profile: "accord",
			Reason: "cpu not enabled", Mode: modeInBackground},
		{Time: evictedAt.Add(2 * time.Second), Namespace: "demo", Pod: "s-1", Node: "node-5", Plugin: "NodeCRDResourceFit", Profile: "moves",
			Reason: "cpu not enabled", Mode: modeSoftEvicted},
		{Time: evictedAt.Add(time.Second), Namespace: "demo", Pod: "m-0", Node: "node-2", Plugin: "NodeCRDResourceFit", Profile: "accord", Held: "workload budget",
			Reason: "workload budget: Deployment demo/m (20 replicas) has 2 of 2 allowed by maxMigratingPerWorkload (default)"},
		{Time: evictedAt.Add(500 * time.Millisecond), Namespace: "demo", Pod: "m-2", Node: "node-5", Plugin: "LowNodeLoad", Profile: "accord", Reason: "hot",
			Replacement: "m-4"},
		{Time: evictedAt, Namespace: "demo", Pod: "m-1", Node: "node-5", Plugin: "NodeCRDResourceFit", Profile: "accord",
			Reason: "node node-5 does not enable example.com/memory", PredictedNode: "node-2", Score: &score, Replacement: "m-3", ReplacementNode: "node-2"},
	}
	if d := cmp.Diff(want, v.Evictions); d != "" {
		t.Errorf("timeline (-want +got):\n%s", d)
	}
}

func TestGoneMemoryIsBounded(t *testing.T) {
	s := newTestState(t)
	for i := range maxGone + 10 {
		s.podGone(pod("p"+resource.NewQuantity(int64(i), resource.DecimalSI).String(), "n", "", now))
	}
	if len(s.known) != maxGone || len(s.gone) != maxGone {
		t.Errorf("remembers %d pods (%d gone), want at most %d", len(s.known), len(s.gone), maxGone)
	}
}

// Two pods of one ReplicaSet moved at once by PodMigrations: the replacement created first consumed
// the reservation of the pod evicted second. Each eviction row shows the replacement its migration
// names (on its own reservation's node), not the first one created after it.
func TestEvictionTimelineFollowsMigrations(t *testing.T) {
	const rs = "rs-uid"
	evictedAt := now.Add(-30 * time.Second)
	a, b := pod("web-a", "node-2", rs, now.Add(-time.Hour)), pod("web-b", "node-4", rs, now.Add(-time.Hour))
	// web-c, created first, landed in b's reservation on node-6; web-d in a's on node-4.
	c, d := pod("web-c", "node-6", rs, evictedAt.Add(time.Second)), pod("web-d", "node-4", rs, evictedAt.Add(2*time.Second))
	migration := func(name string, p *corev1.Pod, replacement, node string) *schedv1alpha1.PodMigration {
		return &schedv1alpha1.PodMigration{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name, CreationTimestamp: metav1.NewTime(evictedAt)},
			Spec: schedv1alpha1.PodMigrationSpec{PodName: p.Name, TargetNode: node},
			Status: schedv1alpha1.PodMigrationStatus{Phase: schedv1alpha1.PodMigrationSucceeded, PodUID: p.UID, SourceNode: p.Spec.NodeName, TargetNode: node,
				ReservationName: p.Name + "-rsv", ReplacementPod: replacement, ReplacementNode: node}}
	}
	s := newTestState(t, a, b, c, d, migration("move-a", a, "web-d", "node-4"), migration("move-b", b, "web-c", "node-6"),
		decisionEvent(evictions.ReasonDescheduled, a, evictedAt, "PodMigration", "accord", "PodMigration move-a", decision.VerdictEvicted),
		decisionEvent(evictions.ReasonDescheduled, b, evictedAt.Add(100*time.Millisecond), "PodMigration", "accord", "PodMigration move-b", decision.VerdictEvicted))
	s.podGone(a)
	s.podGone(b)
	got := map[string]string{}
	for _, e := range s.buildView(now).Evictions {
		got[e.Pod] = e.Replacement + " on " + e.ReplacementNode
	}
	if want := map[string]string{"web-a": "web-d on node-4", "web-b": "web-c on node-6"}; !maps.Equal(got, want) {
		t.Errorf("replacements %v, want %v", got, want)
	}
}

// The PodMigrations table: newest first, a migration the descheduler has not picked up yet is
// Pending with the node it asks for, a finished one shows where its replacement runs (the node its
// pod is bound to, which the console sees, over the node the migration recorded); a cluster without
// the CRD (no lister) shows none.
func TestMigrationViews(t *testing.T) {
	waiting := &schedv1alpha1.PodMigration{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "move-web-1", CreationTimestamp: metav1.NewTime(now.Add(-10 * time.Second))},
		Spec: schedv1alpha1.PodMigrationSpec{PodName: "web-1", TargetNode: "node-3"}}
	done := &schedv1alpha1.PodMigration{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "move-db-0", CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))},
		Spec: schedv1alpha1.PodMigrationSpec{PodName: "db-0"},
		Status: schedv1alpha1.PodMigrationStatus{Phase: schedv1alpha1.PodMigrationSucceeded, Reason: "Moved", SourceNode: "node-5", TargetNode: "node-2",
			ReservationName: "move-db-0-abcde", ReplacementPod: "db-0", ReplacementNode: "node-2"}}
	v := newTestState(t, done, waiting).buildView(now)
	want := []MigrationView{
		{Namespace: "demo", Name: "move-web-1", Pod: "web-1", Phase: "Pending", TargetNode: "node-3", Created: now.Add(-10 * time.Second)},
		{Namespace: "demo", Name: "move-db-0", Pod: "db-0", Phase: "Succeeded", Reason: "Moved", SourceNode: "node-5", TargetNode: "node-2",
			Reservation: "move-db-0-abcde", Replacement: "db-0", ReplacementNode: "node-2", Created: now.Add(-time.Minute)},
	}
	if diff := cmp.Diff(want, v.Migrations); diff != "" {
		t.Errorf("migrations (-want +got):\n%s", diff)
	}
	// The replacement db-0 (same name, another UID) bound elsewhere than the migration recorded: the
	// row shows the node it is bound to. The moved pod itself (its UID) is never taken for it.
	replacement := pod("db-0", "node-4", "", now)
	if got := newTestState(t, done, replacement).buildView(now).Migrations[0].ReplacementNode; got != "node-4" {
		t.Errorf("replacement bound to node-4: the row shows %q", got)
	}
	moved := done.DeepCopy()
	moved.Status.PodUID = replacement.UID
	if got := newTestState(t, moved, replacement).buildView(now).Migrations[0].ReplacementNode; got != "node-2" {
		t.Errorf("only the moved pod (its UID) in the cache: the row shows %q, want the recorded node-2", got)
	}

	s := newTestState(t)
	s.migrations = nil
	if got := s.buildView(now).Migrations; got == nil || len(got) != 0 {
		t.Errorf("without the CRD: %#v, want an empty list", got)
	}
}
