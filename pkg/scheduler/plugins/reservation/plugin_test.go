package reservation

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	clocktesting "k8s.io/utils/clock/testing"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/scheduler/crcache"
)

var t0 = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func cpuSpec(cpu string) corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}
}

func rsv(name, node string, phase schedv1alpha1.ReservationPhase, cpu string, owners ...schedv1alpha1.ReservationOwner) *schedv1alpha1.Reservation {
	return &schedv1alpha1.Reservation{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(t0)},
		Spec: schedv1alpha1.ReservationSpec{Template: corev1.PodTemplateSpec{Spec: cpuSpec(cpu)}, Owners: owners,
			TTL: &metav1.Duration{Duration: time.Minute}},
		Status: schedv1alpha1.ReservationStatus{Phase: phase, NodeName: node},
	}
}

// indexer is a Reservation indexer with the informer's indexes, holding rs.
func indexer(t *testing.T, rs ...*schedv1alpha1.Reservation) cache.Indexer {
	t.Helper()
	indexers := crcache.ReservationIndexers()
	indexers[cache.NamespaceIndex] = cache.MetaNamespaceIndexFunc
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, indexers)
	for _, r := range rs {
		if r.UID == "" {
			r.UID = types.UID("uid-" + r.Name)
		}
		if err := idx.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	return idx
}

func pod(name string, created time.Time, cpu string, controller types.UID) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(created)}, Spec: cpuSpec(cpu)}
	if controller != "" {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", UID: controller, Controller: new(true)}}
	}
	return p
}

func nodeInfo(name, cpu string, pods ...*corev1.Pod) fwk.NodeInfo {
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourcePods: resource.MustParse("110")}}})
	return ni
}

func TestMatches(t *testing.T) {
	byName := rsv("r", "n1", schedv1alpha1.ReservationAvailable, "1", schedv1alpha1.ReservationOwner{Pod: &schedv1alpha1.ReservationPodOwner{Name: "web-0"}})
	byController := rsv("r", "n1", schedv1alpha1.ReservationAvailable, "1", schedv1alpha1.ReservationOwner{Controller: &schedv1alpha1.ReservationControllerOwner{UID: "rs-uid"}})
	later := t0.Add(time.Second)
	for _, tc := range []struct {
		name string
		r    *schedv1alpha1.Reservation
		p    *corev1.Pod
		want bool
	}{
		{"same name, created after", byName, pod("web-0", later, "1", ""), true},
		{"same name, the evicted pod itself (older)", byName, pod("web-0", t0.Add(-time.Hour), "1", ""), false},
		{"other name", byName, pod("web-1", later, "1", ""), false},
		{"same controller", byController, pod("web-x", later, "1", "rs-uid"), true},
		{"other controller", byController, pod("web-x", later, "1", "other"), false},
		{"no controller", byController, pod("web-x", later, "1", ""), false},
	} {
		if got := Matches(tc.r, tc.p); got != tc.want {
			t.Errorf("%s: Matches = %v, want %v", tc.name, got, tc.want)
		}
	}
	other := pod("web-0", later, "1", "")
	other.Namespace = "elsewhere"
	if Matches(byName, other) {
		t.Error("a pod of another namespace matches")
	}
}

func run(t *testing.T, p *Plugin, pd *corev1.Pod, nodes ...fwk.NodeInfo) (*fwk.PreFilterResult, map[string]*fwk.Status) {
	t.Helper()
	state := framework.NewCycleState()
	res, st := p.PreFilter(context.Background(), state, pd, nodes)
	out := map[string]*fwk.Status{}
	if st.IsSkip() {
		return res, out
	}
	if !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st)
	}
	for _, ni := range nodes {
		if res != nil && !res.AllNodes() && !res.NodeNames.Has(ni.Node().Name) {
			continue
		}
		out[ni.Node().Name] = p.Filter(context.Background(), state, pd, ni)
	}
	return res, out
}

func TestFilterCountsHeldRoom(t *testing.T) {
	owner := schedv1alpha1.ReservationOwner{Pod: &schedv1alpha1.ReservationPodOwner{Name: "web-0"}}
	clk := clocktesting.NewFakePassiveClock(t0.Add(10 * time.Second))
	p := New(indexer(t,
		rsv("held", "n1", schedv1alpha1.ReservationAvailable, "1500m", owner),
		rsv("pending", "", schedv1alpha1.ReservationPending, "4"),
		rsv("failed", "", schedv1alpha1.ReservationFailed, "4"),
		rsv("bound", "n0", schedv1alpha1.ReservationBound, "4"),
	), NewLedger(), nil, clk)
	n0 := nodeInfo("n0", "2")
	n1 := nodeInfo("n1", "2")

	// Another pod of 1 CPU: n1's free 2 CPUs minus 1.5 held leave 0.5.
	_, st := run(t, p, pod("other", t0.Add(time.Second), "1", ""), n0, n1)
	if !st["n0"].IsSuccess() {
		t.Errorf("n0 (nothing held) rejected: %v", st["n0"])
	}
	if st["n1"].Code() != fwk.Unschedulable || !strings.Contains(st["n1"].Message(), ReasonHeld) {
		t.Errorf("n1 want Unschedulable %q, got %v", ReasonHeld, st["n1"])
	}
	// A small pod fits beside the reservation.
	if _, st := run(t, p, pod("small", t0.Add(time.Second), "500m", ""), n0, n1); !st["n1"].IsSuccess() {
		t.Errorf("a 0.5 CPU pod does not fit beside 1.5 CPU held on 2: %v", st["n1"])
	}
	// The owner is sent to its reservation's node, where the held room is its own.
	res, st := run(t, p, pod("web-0", t0.Add(time.Second), "1500m", ""), n0, n1)
	if res == nil || res.AllNodes() || !res.NodeNames.Has("n1") || res.NodeNames.Len() != 1 {
		t.Fatalf("owner PreFilterResult = %+v, want only n1", res)
	}
	if !st["n1"].IsSuccess() {
		t.Errorf("owner rejected on its reservation's node: %v", st["n1"])
	}
	// Once the TTL has passed the room is free, whatever the status says.
	clk.SetTime(t0.Add(2 * time.Minute))
	if _, st := run(t, p, pod("other", t0.Add(time.Second), "1", ""), n0, n1); len(st) != 0 {
		t.Errorf("an expired reservation still filters: %v", st)
	}
}

func TestFilterSkipsWithoutReservations(t *testing.T) {
	p := New(indexer(t), NewLedger(), nil, clocktesting.NewFakePassiveClock(t0))
	state := framework.NewCycleState()
	if _, st := p.PreFilter(context.Background(), state, pod("p", t0, "1", ""), nil); !st.IsSkip() {
		t.Errorf("PreFilter without reservations = %v, want Skip", st)
	}
}

func TestHeldRoomCountsPodsAndScalars(t *testing.T) {
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{"example.com/memory": resource.MustParse("8")}}}}}
	r := rsv("r", "n1", schedv1alpha1.ReservationAvailable, "0")
	r.Spec.Template.Spec = spec
	p := New(indexer(t, r), NewLedger(), nil, clocktesting.NewFakePassiveClock(t0))
	ni := framework.NewNodeInfo()
	ni.SetNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		"example.com/memory": resource.MustParse("10"), corev1.ResourcePods: resource.MustParse("1")}}})
	pd := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: spec}
	_, st := run(t, p, pd, ni)
	if st["n1"].IsSuccess() || !strings.Contains(st["n1"].AsError().Error(), "example.com/memory") || !strings.Contains(st["n1"].AsError().Error(), "pods") {
		t.Errorf("want n1 short of example.com/memory and pods, got %v", st["n1"])
	}
}

// stsPod is pod name of the StatefulSet "db" (UID sts-uid), created at created.
func stsPod(name string, created time.Time) *corev1.Pod {
	p := pod(name, created, "1", "")
	p.UID = types.UID(name + "-" + created.Format("150405"))
	p.OwnerReferences = []metav1.OwnerReference{{Kind: "StatefulSet", Name: "db", UID: "sts-uid", Controller: new(true)}}
	return p
}

// madeFor is a reservation on node made for the StatefulSet pod old (owners: its name and UID,
// and the StatefulSet), as reservation-first makes them.
func madeFor(name, node string, old *corev1.Pod, created time.Time) *schedv1alpha1.Reservation {
	r := rsv(name, node, schedv1alpha1.ReservationAvailable, "1",
		schedv1alpha1.ReservationOwner{Pod: &schedv1alpha1.ReservationPodOwner{Name: old.Name, UID: old.UID}},
		schedv1alpha1.ReservationOwner{Controller: &schedv1alpha1.ReservationControllerOwner{Kind: "StatefulSet", Name: "db", UID: "sts-uid"}})
	r.CreationTimestamp = metav1.NewTime(created)
	return r
}

// TestRank: a pod's own reservation (its name) ranks first; a ReplicaSet's pods take any of their
// controller's; a StatefulSet's pod never takes one made for a sibling; the pod a reservation was
// made for never consumes it.
func TestRank(t *testing.T) {
	old0 := stsPod("db-0", t0.Add(-time.Hour))
	r0 := madeFor("a-db-0", "n1", old0, t0)
	rsPod := pod("web-abc", t0.Add(-time.Hour), "1", "rs-uid")
	rsPod.UID = "web-abc-uid"
	rRS := rsv("web", "n1", schedv1alpha1.ReservationAvailable, "1",
		schedv1alpha1.ReservationOwner{Pod: &schedv1alpha1.ReservationPodOwner{Name: rsPod.Name, UID: rsPod.UID}},
		schedv1alpha1.ReservationOwner{Controller: &schedv1alpha1.ReservationControllerOwner{Kind: "ReplicaSet", UID: "rs-uid"}})
	sameSecond := stsPod("db-0", t0)
	sameSecond.UID = old0.UID
	for _, tc := range []struct {
		name string
		r    *schedv1alpha1.Reservation
		p    *corev1.Pod
		want int
	}{
		{"the StatefulSet pod's replacement", r0, stsPod("db-0", t0.Add(time.Second)), RankOwn},
		{"a sibling of the StatefulSet", r0, stsPod("db-1", t0.Add(time.Second)), NoMatch},
		{"the pod it was made for, even created in the same second", r0, sameSecond, NoMatch},
		{"a ReplicaSet's new pod", rRS, pod("web-xyz", t0.Add(time.Second), "1", "rs-uid"), RankSibling},
		{"a ReplicaSet's pod being scheduled, created in the reservation's second", rRS, pod("web-xyz", t0, "1", "rs-uid"), RankSibling},
		{"a ReplicaSet's pod placed, created in the reservation's second", rRS, placedOn(pod("web-xyz", t0, "1", "rs-uid"), "n1"), NoMatch},
		{"a ReplicaSet's pod placed, created a second later", rRS, placedOn(pod("web-xyz", t0.Add(time.Second), "1", "rs-uid"), "n1"), RankSibling},
		{"the StatefulSet pod's replacement placed, created in the reservation's second", r0, placedOn(stsPod("db-0", t0), "n1"), NoMatch},
	} {
		if got := Rank(tc.r, tc.p); got != tc.want {
			t.Errorf("%s: Rank = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// placedOn is p with spec.nodeName set.
func placedOn(p *corev1.Pod, node string) *corev1.Pod {
	p.Spec.NodeName = node
	return p
}

// TestSiblingsTakeTheirOwn: db-0 and db-1 were moved together, their reservations on n1 and n2;
// db-1's replacement, created first, goes to n2 (not to db-0's reservation, first by name), and
// consumes it in Reserve so that no other pod does.
func TestSiblingsTakeTheirOwn(t *testing.T) {
	r0 := madeFor("a-db-0", "n1", stsPod("db-0", t0.Add(-time.Hour)), t0)
	r1 := madeFor("b-db-1", "n2", stsPod("db-1", t0.Add(-time.Hour)), t0)
	l := NewLedger()
	p := New(indexer(t, r0, r1), l, nil, clocktesting.NewFakePassiveClock(t0.Add(10*time.Second)))
	db1 := stsPod("db-1", t0.Add(5*time.Second))
	state := framework.NewCycleState()
	res, st := p.PreFilter(context.Background(), state, db1, nil)
	if !st.IsSuccess() || res == nil || !res.NodeNames.Has("n2") || res.NodeNames.Len() != 1 {
		t.Fatalf("db-1's replacement: PreFilter %v %+v, want only n2 (its own reservation)", st, res)
	}
	if st := p.Reserve(context.Background(), state, db1, "n2"); !st.IsSuccess() {
		t.Fatalf("Reserve: %v", st)
	}
	if c, ok := l.consumedBy(r1.UID); !ok || c.uid != db1.UID {
		t.Fatalf("the ledger records %+v as b-db-1's consumer, want db-1", c)
	}
	// Another pod of the StatefulSet (a scale-up db-2) does not take either reservation.
	if res, st := p.PreFilter(context.Background(), framework.NewCycleState(), stsPod("db-2", t0.Add(6*time.Second)), nil); res != nil && !res.AllNodes() {
		t.Errorf("db-2 sent to %v (%v), want no reservation of its own", res.NodeNames, st)
	}
	// Unreserve gives it back.
	p.Unreserve(context.Background(), state, db1, "n2")
	if _, ok := l.consumedBy(r1.UID); ok {
		t.Error("Unreserve left the reservation consumed")
	}
}

// fakeHandle is the part of a framework Handle that Reserve reads: the cycle's snapshot.
type fakeHandle struct {
	fwk.Handle
	snap *internalcache.Snapshot
}

func (h fakeHandle) SnapshotSharedLister() fwk.SharedLister { return h.snap }

// TestReserveRejectsAfterAConcurrentPlacement: a pod passes PreFilter and Filter on n1 (2 CPUs,
// nothing held); before its Reserve, the Placer places a 1.5 CPU reservation on n1 (recorded in the
// ledger, not yet in the informer). Reserve checks n1 again and rejects the 1 CPU pod; a 0.5 CPU
// pod still fits.
func TestReserveRejectsAfterAConcurrentPlacement(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("110")}}}
	h := fakeHandle{snap: internalcache.NewSnapshot(nil, []*corev1.Node{node})}
	pending := rsv("late", "", schedv1alpha1.ReservationPending, "1500m",
		schedv1alpha1.ReservationOwner{Pod: &schedv1alpha1.ReservationPodOwner{Name: "someone"}})
	l := NewLedger()
	p := New(indexer(t, pending), l, h, clocktesting.NewFakePassiveClock(t0.Add(time.Second)))
	for _, tc := range []struct {
		cpu    string
		reject bool
	}{{"1", true}, {"500m", false}} {
		l.forget(pending)
		pd := pod("p-"+tc.cpu, t0, tc.cpu, "")
		state := framework.NewCycleState()
		if _, st := p.PreFilter(context.Background(), state, pd, nil); !st.IsSkip() {
			t.Fatalf("PreFilter with nothing held = %v, want Skip", st)
		}
		l.assume(withStatus(pending, schedv1alpha1.ReservationAvailable, ReasonPlaced, "", "n1", nil))
		st := p.Reserve(context.Background(), state, pd, "n1")
		if tc.reject && (st.Code() != fwk.Unschedulable || !strings.Contains(st.Message(), ReasonHeld)) {
			t.Errorf("a %s CPU pod: Reserve = %v, want Unschedulable %q", tc.cpu, st, ReasonHeld)
		}
		if !tc.reject && !st.IsSuccess() {
			t.Errorf("a %s CPU pod: Reserve = %v, want success", tc.cpu, st)
		}
	}
	// The informer catches up (Available): the ledger forgets the placement, the room stays held.
	shown := withStatus(pending, schedv1alpha1.ReservationAvailable, ReasonPlaced, "", "n1", nil)
	l.observe(shown, false)
	if len(l.placements()) != 0 {
		t.Error("the ledger kept a placement the informer shows")
	}
}

// TestHeldFollowsTheInformer: the room held per node is computed once and kept until the informer
// (through the ledger's handler) or the ledger reports a change.
func TestHeldFollowsTheInformer(t *testing.T) {
	idx := indexer(t)
	l := NewLedger()
	p := New(idx, l, nil, clocktesting.NewFakePassiveClock(t0.Add(time.Second)))
	other := pod("other", t0, "1", "")
	if _, st := p.PreFilter(context.Background(), framework.NewCycleState(), other, nil); !st.IsSkip() {
		t.Fatalf("PreFilter with nothing held = %v, want Skip", st)
	}
	r := rsv("r", "n1", schedv1alpha1.ReservationAvailable, "1500m", schedv1alpha1.ReservationOwner{Pod: &schedv1alpha1.ReservationPodOwner{Name: "web-0"}})
	r.UID = "uid-r"
	if err := idx.Add(r); err != nil {
		t.Fatal(err)
	}
	l.observe(r, false)
	if _, st := run(t, p, other, nodeInfo("n1", "2")); st["n1"].IsSuccess() {
		t.Errorf("a reservation the informer added is not counted: n1 %v", st["n1"])
	}
	if err := idx.Delete(r); err != nil {
		t.Fatal(err)
	}
	l.observe(r, true)
	if _, st := p.PreFilter(context.Background(), framework.NewCycleState(), other, nil); !st.IsSkip() {
		t.Errorf("PreFilter after the reservation was deleted = %v, want Skip", st)
	}
}

// A pod that fits beside the reservations on every node where they hold room skips Filter; one that
// does not fit beside one of them is filtered on every node, and rejected there.
func TestPreFilterSkipsWhenThePodFitsBesideEveryReservation(t *testing.T) {
	owner := schedv1alpha1.ReservationOwner{Pod: &schedv1alpha1.ReservationPodOwner{Name: "web-0"}}
	p := New(indexer(t,
		rsv("a", "n1", schedv1alpha1.ReservationAvailable, "1", owner),
		rsv("b", "n2", schedv1alpha1.ReservationAvailable, "3", owner),
		rsv("gone", "n9", schedv1alpha1.ReservationAvailable, "4", owner),
	), NewLedger(), nil, clocktesting.NewFakePassiveClock(t0.Add(10*time.Second)))
	nodes := []fwk.NodeInfo{nodeInfo("n0", "4"), nodeInfo("n1", "4"), nodeInfo("n2", "4")}

	// 1 CPU fits beside 1 held on n1 and 3 held on n2 (n9 is not in the snapshot).
	state := framework.NewCycleState()
	if _, st := p.PreFilter(context.Background(), state, pod("small", t0.Add(time.Second), "1", ""), nodes); !st.IsSkip() {
		t.Fatalf("PreFilter of a pod that fits beside every reservation = %v, want Skip", st)
	}
	if _, err := readState(state); err != nil {
		t.Errorf("a skipped PreFilter must still write the state Reserve reads: %v", err)
	}
	// 2 CPUs do not fit beside 3 held on n2's 4.
	_, st := run(t, p, pod("big", t0.Add(time.Second), "2", ""), nodes...)
	if len(st) != len(nodes) {
		t.Fatalf("a pod that does not fit beside a reservation was filtered on %d nodes, want %d: %v", len(st), len(nodes), st)
	}
	if st["n2"].Code() != fwk.Unschedulable || !st["n0"].IsSuccess() || !st["n1"].IsSuccess() {
		t.Errorf("want n2 rejected, n0 and n1 accepted: %v", st)
	}
}

// handleWith is the part of a framework handle PreFilter reads: the cycle's snapshot and the
// nominated pods.
type handleWith struct {
	fwk.Handle
	snap      *internalcache.Snapshot
	nominated nominator
}

func (h handleWith) SnapshotSharedLister() fwk.SharedLister         { return h.snap }
func (h handleWith) NominatedPodsForNode(node string) []fwk.PodInfo { return h.nominated[node] }

// With a pod nominated to a node where a reservation holds room, Filter runs (the framework adds the
// nominated pods to the node when it filters), even for a pod that fits beside the reservation.
func TestPreFilterFiltersWithAPodNominatedBesideAReservation(t *testing.T) {
	owner := schedv1alpha1.ReservationOwner{Pod: &schedv1alpha1.ReservationPodOwner{Name: "web-0"}}
	n1 := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")}}}
	h := handleWith{snap: internalcache.NewSnapshot(nil, []*corev1.Node{n1}), nominated: nominator{}}
	p := New(indexer(t, rsv("a", "n1", schedv1alpha1.ReservationAvailable, "1", owner)), NewLedger(), h,
		clocktesting.NewFakePassiveClock(t0.Add(10*time.Second)))
	small := pod("small", t0.Add(time.Second), "1", "")
	if _, st := p.PreFilter(context.Background(), framework.NewCycleState(), small, nil); !st.IsSkip() {
		t.Fatalf("PreFilter without nominated pods = %v, want Skip", st)
	}
	pi, err := framework.NewPodInfo(pod("nominated", t0, "2", ""))
	if err != nil {
		t.Fatal(err)
	}
	h.nominated["n1"] = []fwk.PodInfo{pi}
	if _, st := p.PreFilter(context.Background(), framework.NewCycleState(), small, nil); !st.IsSuccess() {
		t.Errorf("PreFilter with a pod nominated to n1 = %v, want Success (Filter runs)", st)
	}
}
