package evictions

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/component-base/metrics/testutil"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
)

func modePod(i int, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%d", i), UID: types.UID(fmt.Sprintf("uid-%d", i))},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

// evacuated is KubeVirt's webhook's answer to the eviction of a VM pod it migrates in background.
var evacuated = apierrors.NewTooManyRequests(`admission webhook "virt" denied the request: Eviction triggered evacuation of VMI "ns/vm"`, 0)

// backgroundEvictor is an evictor with EvictionsInBackground and a cap of perNode evictions per
// node, whose evict plugin answers as stub does.
func backgroundEvictor(perNode int, stub *stubEvict) (*ProfileEvictor, *InProgress) {
	tracker := NewInProgress(true, nil)
	lim := NewLimiter(Limits{PerNode: &perNode})
	lim.SetInProgress(tracker)
	return &ProfileEvictor{Profile: "p", EvictPlugin: stub, Limiter: lim, Metrics: metrics.New()}, tracker
}

// vmPod is a pod annotated request-evict-only on node.
func vmPod(i int, node string) *corev1.Pod {
	vm := modePod(i, node)
	vm.Annotations = map[string]string{RequestEvictOnlyAnnotation: ""}
	return vm
}

// wantNodeSlots checks that exactly n more evictions fit on node in the limiter's window.
func wantNodeSlots(t *testing.T, lim *Limiter, node string, n int, why string) {
	t.Helper()
	for i := range n {
		if _, err := lim.Reserve(node, "ns"); err != nil {
			t.Fatalf("%s: eviction %d of %d left on %s: %v", why, i+1, n, node, err)
		}
	}
	if _, err := lim.Reserve(node, "ns"); !framework.IsNodeLimit(err) {
		t.Fatalf("%s: eviction %d on %s: %v, want the node limit", why, n+1, node, err)
	}
}

// TestSoftEviction: a Soft profile annotates the pod (no Eviction API call), records a SoftEvicted
// Event, counts "soft"; the pod then counts against the per-node cap in the next cycles until it
// is gone, is not annotated twice, and the annotation is removed after a complete cycle that did not
// nominate it (and only then).
func TestSoftEviction(t *testing.T) {
	ctx := context.Background()
	p1, p2 := modePod(1, "n1"), modePod(2, "n1")
	client := fake.NewClientset(p1, p2)
	one := 1
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	tracker := NewInProgress(false, clock)
	lim := NewLimiter(Limits{PerNode: &one})
	lim.SetInProgress(tracker)
	rec := events.NewFakeRecorder(10)
	plugin := &countingEvict{}
	soft := &Soft{Profile: "p", Client: client, Now: clock}
	e := &ProfileEvictor{Profile: "p", EvictPlugin: plugin, Limiter: lim, Metrics: metrics.New(), Recorder: rec, Soft: soft}

	soft.BeginCycle()
	if err := e.Evict(ctx, p1, framework.EvictOptions{PluginName: "Pl", Reason: "too hot"}); err != nil {
		t.Fatal(err)
	}
	if plugin.calls.Load() != 0 {
		t.Fatal("the Eviction API was called in Soft mode")
	}
	got, _ := client.CoreV1().Pods("ns").Get(ctx, "p1", metav1.GetOptions{})
	se, ok := ParseSoftEviction(got)
	if !ok || se.Profile != "p" || se.Plugin != "Pl" || se.Reason != "too hot" || !se.Time.Equal(now) {
		t.Fatalf("annotation %q: %+v", got.Annotations[SoftEvictionAnnotation], se)
	}
	if ev := <-rec.Events; !strings.Contains(ev, ReasonSoftEvicted) {
		t.Errorf("Event %q", ev)
	}
	if v, _ := testutil.GetCounterMetricValue(e.Metrics.PodsEvicted.WithLabelValues(metrics.ResultSoft, "Pl", "p", "ns", "n1")); v != 1 {
		t.Errorf("soft count %v", v)
	}
	// The node's only slot is held by the soft-evicted pod, in this cycle and the next.
	for cycle := 0; cycle < 2; cycle++ {
		if err := e.Evict(ctx, p2, framework.EvictOptions{PluginName: "Pl"}); !framework.IsNodeLimit(err) {
			t.Fatalf("cycle %d: second pod on the node: %v, want the node limit", cycle, err)
		}
		lim.Reset()
	}
	// Nominated again: not annotated twice, not counted.
	if err := e.Evict(ctx, p1, framework.EvictOptions{PluginName: "Pl"}); !framework.IsPodGone(err) || !strings.Contains(err.Error(), "in progress") {
		t.Fatalf("second soft eviction: %v", err)
	}
	// The informer shows the annotation; a cycle that nominated it keeps it.
	tracker.observe(p1, got)
	if len(soft.EndCycle(ctx, []*corev1.Pod{got}, true, nil)) != 0 {
		t.Fatal("annotation removed from a pod nominated in the cycle")
	}
	now = now.Add(time.Minute)
	// A cycle that did not nominate it but did not run completely keeps it.
	soft.BeginCycle()
	if len(soft.EndCycle(ctx, []*corev1.Pod{got}, false, nil)) != 0 {
		t.Fatal("annotation removed after an incomplete cycle")
	}
	// A complete cycle that did not nominate it removes it; the tracker forgets the pod.
	soft.BeginCycle()
	if cleared := soft.EndCycle(ctx, []*corev1.Pod{got}, true, nil); len(cleared) != 1 {
		t.Fatalf("cleared %d pods, want 1", len(cleared))
	}
	after, _ := client.CoreV1().Pods("ns").Get(ctx, "p1", metav1.GetOptions{})
	if _, ok := after.Annotations[SoftEvictionAnnotation]; ok {
		t.Fatal("annotation still there")
	}
	tracker.observe(got, after)
	if _, ok := tracker.Has(p1.UID); ok {
		t.Fatal("tracker still counts the pod")
	}
	if err := e.Evict(ctx, p2, framework.EvictOptions{PluginName: "Pl"}); err != nil {
		t.Fatalf("node slot not freed: %v", err)
	}
}

// TestSoftEvictedPodsRebuiltFromAnnotations: a restarted descheduler counts the pods annotated
// before against the caps (the informer's initial list), and forgets a pod when it is deleted.
func TestSoftEvictedPodsRebuiltFromAnnotations(t *testing.T) {
	p := modePod(1, "n1")
	p.Annotations = map[string]string{SoftEvictionAnnotation: `{"time":"2026-11-26T12:00:00Z","profile":"p"}`}
	tracker := NewInProgress(false, nil)
	tracker.observe(nil, p)
	one := 1
	lim := NewLimiter(Limits{Total: &one})
	lim.SetInProgress(tracker)
	if _, err := lim.Reserve("n2", "other"); !framework.IsTotalLimit(err) {
		t.Fatalf("total cap with a soft-evicted pod: %v", err)
	}
	finishedPod := p.DeepCopy()
	finishedPod.Status.Phase = corev1.PodSucceeded
	tracker.observe(p, finishedPod)
	if _, err := lim.Reserve("n2", "other"); err != nil {
		t.Fatalf("after the pod finished: %v", err)
	}
}

// TestEvictionInBackground: with EvictionsInBackground, a request-evict-only pod whose eviction is
// answered 429 "Eviction triggered evacuation" is tracked (counted against the caps, result
// "background", an Event), never requested again while tracked; the controller's
// eviction-in-progress annotation confirms it, its removal ends the tracking, and so does the pod's
// deletion. Without the annotation (or the gate) the same answer is a failed eviction.
func TestEvictionInBackground(t *testing.T) {
	ctx := context.Background()
	answer, two := evacuated, 2
	rec := events.NewFakeRecorder(10)
	stub := &stubEvict{err: answer}
	e, tracker := backgroundEvictor(two, stub)
	e.Recorder = rec
	lim := e.Limiter

	vm := vmPod(1, "n1")
	if err := e.Evict(ctx, vm, framework.EvictOptions{PluginName: "Pl"}); err != nil {
		t.Fatalf("background eviction: %v", err)
	}
	if v, _ := testutil.GetCounterMetricValue(e.Metrics.PodsEvicted.WithLabelValues(metrics.ResultBackground, "Pl", "p", "ns", "n1")); v != 1 {
		t.Errorf("background count %v", v)
	}
	if ev := <-rec.Events; !strings.Contains(ev, ReasonEvictionInBackground) {
		t.Errorf("Event %q", ev)
	}
	if total, node, _ := tracker.Counts("n1", "ns"); total != 1 || node != 1 {
		t.Fatalf("tracked %d/%d", total, node)
	}
	// Never requested again while in progress.
	stub.err = nil
	if err := e.Evict(ctx, vm, framework.EvictOptions{PluginName: "Pl"}); !framework.IsPodGone(err) {
		t.Fatalf("second request: %v", err)
	}
	// Counted against the node's cap in the next cycle: one slot left of two.
	lim.Reset()
	wantNodeSlots(t, lim, "n1", 1, "next cycle, one background eviction")
	lim.Reset()
	// The controller sets eviction-in-progress, then removes it (eviction ended or restarted).
	inProg := vm.DeepCopy()
	inProg.Annotations[EvictionInProgressAnnotation] = ""
	tracker.observe(vm, inProg)
	tracker.observe(inProg, vm)
	if _, ok := tracker.Has(vm.UID); ok {
		t.Fatal("still tracked after eviction-in-progress was removed")
	}
	// A restart: the informer lists a pod with both annotations; deletion ends it.
	tracker.observe(nil, inProg)
	if _, ok := tracker.Has(vm.UID); !ok {
		t.Fatal("pod with both annotations not tracked")
	}
	tracker.forget(vm.UID, "", "pod deleted", vm)
	if total, _, _ := tracker.Counts("n1", "ns"); total != 0 {
		t.Fatal("deleted pod still counted")
	}

	// Without request-evict-only, or without the gate, the answer is a refusal.
	plain := modePod(2, "n1")
	stub.err = answer
	if err := e.Evict(ctx, plain, framework.EvictOptions{PluginName: "Pl"}); err == nil || !apierrors.IsTooManyRequests(err) {
		t.Fatalf("pod without request-evict-only: %v", err)
	}
	off := NewInProgress(false, nil)
	lim2 := NewLimiter(Limits{PerNode: &two})
	lim2.SetInProgress(off)
	e2 := &ProfileEvictor{Profile: "p", EvictPlugin: stub, Limiter: lim2, Metrics: metrics.New()}
	vm2 := modePod(3, "n1")
	vm2.Annotations = map[string]string{RequestEvictOnlyAnnotation: "", EvictionInProgressAnnotation: ""}
	off.observe(nil, vm2)
	if err := e2.Evict(ctx, vm2, framework.EvictOptions{PluginName: "Pl"}); err == nil || !apierrors.IsTooManyRequests(err) {
		t.Fatalf("gate off: %v", err)
	}
	if total, _, _ := off.Counts("n1", "ns"); total != 0 {
		t.Fatal("gate off tracks background evictions")
	}
}

// TestAssumedBackgroundEvictionExpires: an accepted request the controller never confirms with
// eviction-in-progress is forgotten after AssumedBackgroundTimeout (upstream's 10 minutes).
func TestAssumedBackgroundEvictionExpires(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	tracker := NewInProgress(true, func() time.Time { return now })
	tracker.Assume(modePod(1, "n1"), InProgressBackground)
	now = now.Add(AssumedBackgroundTimeout - time.Second)
	if total, _, _ := tracker.Counts("n1", "ns"); total != 1 {
		t.Fatal("expired early")
	}
	now = now.Add(2 * time.Second)
	if total, _, _ := tracker.Counts("n1", "ns"); total != 0 {
		t.Fatal("not expired")
	}
}

// TestBudgetCountsInProgress: a soft-evicted pod of a workload counts as migrating and unavailable.
func TestBudgetCountsInProgress(t *testing.T) {
	created := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	src := &fakeWorkloads{w: Workload{UID: "d", Kind: "Deployment", Namespace: "ns", Name: "d", Replicas: 3}}
	for i := 0; i < 3; i++ {
		src.pods = append(src.pods, budgetPod(i, true, created))
	}
	tracker := NewInProgress(false, nil)
	b := NewBudget(BudgetConfig{}, src, nil)
	lim := NewLimiter(Limits{})
	lim.SetBudget(b)
	lim.SetInProgress(tracker)
	if err := b.Check(src.pods[1]); err != nil {
		t.Fatal(err)
	}
	marked := src.pods[0].DeepCopy()
	marked.Annotations = map[string]string{SoftEvictionAnnotation: `{"profile":"p"}`}
	tracker.observe(nil, marked)
	if err := b.Check(src.pods[1]); !framework.IsWorkloadBudget(err) {
		t.Fatalf("budget with a soft-evicted pod: %v", err)
	}
}

// TestClearOrphanSoftEvictions: annotations of a profile that is not Soft in the running policy
// (renamed, removed, switched to Evict) or that cannot be read are removed; a Soft profile's stay.
func TestClearOrphanSoftEvictions(t *testing.T) {
	ctx := context.Background()
	kept, gone, bad, plain := modePod(1, "n1"), modePod(2, "n1"), modePod(3, "n1"), modePod(4, "n1")
	kept.Annotations = map[string]string{SoftEvictionAnnotation: `{"time":"2026-11-26T12:00:00Z","profile":"soft"}`}
	gone.Annotations = map[string]string{SoftEvictionAnnotation: `{"time":"2026-11-26T12:00:00Z","profile":"old"}`}
	bad.Annotations = map[string]string{SoftEvictionAnnotation: "yes"}
	client := fake.NewClientset(kept, gone, bad, plain)
	cleared := ClearOrphanSoftEvictions(ctx, client, []*corev1.Pod{kept, gone, bad, plain}, map[string]bool{"soft": true}, nil)
	if len(cleared) != 2 || cleared[0].Name != "p2" || cleared[1].Name != "p3" {
		t.Fatalf("cleared %v", cleared)
	}
	for name, want := range map[string]bool{"p1": true, "p2": false, "p3": false} {
		p, _ := client.CoreV1().Pods("ns").Get(ctx, name, metav1.GetOptions{})
		if _, has := p.Annotations[SoftEvictionAnnotation]; has != want {
			t.Errorf("%s annotated: %v, want %v", name, has, want)
		}
	}
}

// TestSoftEvictionKeptWherePluginCutShort: 6 violators on one node, a per-node cap of 2. The
// first cycle annotates 2; in the next ones the plugin (which visits a node's pods in no fixed
// order) reaches the node's cap at the first pod not yet annotated and moves on, so the annotated
// pods are not nominated. They were not reached, not found fitting: the annotations stay. Cycles
// cut short by the total cap or stale caches keep every annotation; a complete cycle that reaches
// the node and does not nominate a pod removes its annotation.
func TestSoftEvictionKeptWherePluginCutShort(t *testing.T) {
	ctx := context.Background()
	var all []*corev1.Pod
	for i := range 6 {
		all = append(all, modePod(i, "n1"))
	}
	other := modePod(9, "n2")
	objs := []runtime.Object{other}
	for _, p := range all {
		objs = append(objs, p)
	}
	client := fake.NewClientset(objs...)
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	tracker := NewInProgress(false, clock)
	two, total := 2, 3
	lim := NewLimiter(Limits{PerNode: &two, Total: &total})
	lim.SetInProgress(tracker)
	soft := &Soft{Profile: "p", Client: client, Now: clock}
	stale := []string(nil)
	e := &ProfileEvictor{Profile: "p", EvictPlugin: &countingEvict{}, Limiter: lim, Soft: soft, Fresh: func() []string { return stale }}
	// sync shows the informer's view of the pods to the tracker; it returns the pods annotated.
	sync := func() (annotated []string) {
		for i, old := range append(all, other) {
			cur, err := client.CoreV1().Pods("ns").Get(ctx, old.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tracker.observe(old, cur)
			if i < len(all) {
				all[i] = cur
			} else {
				other = cur
			}
			if _, ok := cur.Annotations[SoftEvictionAnnotation]; ok {
				annotated = append(annotated, cur.Name)
			}
		}
		return annotated
	}
	// cycle runs a plugin that visits the node's violators from start on (wrapping around) and
	// moves on at the node's cap, as framework.Evict's NodeFull tells it to.
	cycle := func(start int, violators []*corev1.Pod) {
		now = now.Add(time.Minute)
		lim.Reset()
		soft.BeginCycle()
		for k := range violators {
			pod := violators[(start+k)%len(violators)]
			if framework.Evict(ctx, e, pod, "Pl", "violates") != framework.Evicted {
				break
			}
		}
		soft.EndCycle(ctx, append(all, other), true, nil)
	}
	cycle(0, all)
	if got := sync(); !slices.Equal(got, []string{"p0", "p1"}) {
		t.Fatalf("first cycle annotated %v, want p0 p1", got)
	}
	for start := 2; start < 6; start++ {
		cycle(start, all)
		if got := sync(); !slices.Equal(got, []string{"p0", "p1"}) {
			t.Fatalf("cycle starting at p%d: annotated %v, want p0 p1 kept (the plugin stopped at the node's cap before reaching them)", start, got)
		}
	}
	// The total cap (3: 2 in progress, then p9 on another node) cuts the cycle short: a pod that
	// was annotated and not reached stays annotated.
	p9 := other.DeepCopy()
	now = now.Add(time.Minute)
	lim.Reset()
	soft.BeginCycle()
	if err := e.Evict(ctx, p9, framework.EvictOptions{PluginName: "Pl"}); err != nil {
		t.Fatal(err)
	}
	if out := framework.Evict(ctx, e, modePod(7, "n3"), "Pl", "violates"); out != framework.StopEvicting {
		t.Fatalf("total cap: %v", out)
	}
	soft.EndCycle(ctx, append(all, other), true, nil)
	if got := sync(); !slices.Equal(got, []string{"p0", "p1", "p9"}) {
		t.Fatalf("after a cycle cut by the total cap: annotated %v, want p0 p1 p9", got)
	}
	// Caches not re-synced: nothing decided, nothing cleared.
	stale = []string{"pods"}
	now = now.Add(time.Minute)
	lim.Reset()
	soft.BeginCycle()
	if err := e.Evict(ctx, modePod(8, "n3"), framework.EvictOptions{PluginName: "Pl"}); !framework.IsCachesNotSynced(err) {
		t.Fatalf("stale caches: %v", err)
	}
	soft.EndCycle(ctx, append(all, other), true, nil)
	if got := sync(); len(got) != 3 {
		t.Fatalf("after a cycle on stale caches: annotated %v, want 3", got)
	}
	stale = nil
	// The node fits again: a complete cycle that reaches it with no violator clears all.
	cycle(0, nil)
	if got := sync(); len(got) != 0 {
		t.Fatalf("after a complete cycle with no violator: annotated %v", got)
	}
}

// TestInProgressEvictionCountsInItsWindow: an eviction that goes on in progress (in background, or
// soft) counts once in the window it started in, even when its pod is gone before the window
// ends (a VM migrated in two minutes, inside a five-minute cycle); in later windows it counts only
// while its pod is there. Before Limiter.HandOver its slot was released to the tracker, and a pod
// gone mid-window gave the window one eviction more than maxNoOfPodsToEvictPerNode.
func TestInProgressEvictionCountsInItsWindow(t *testing.T) {
	ctx := context.Background()
	e, tracker := backgroundEvictor(2, &stubEvict{err: evacuated})
	var vms []*corev1.Pod
	for i := range 2 {
		vm := vmPod(i, "n1")
		if err := e.Evict(ctx, vm, framework.EvictOptions{PluginName: "Pl"}); err != nil {
			t.Fatalf("background eviction %d: %v", i, err)
		}
		vms = append(vms, vm)
	}
	// In flight or in progress, each counts once: the node's two slots are taken, not four.
	wantNodeSlots(t, e.Limiter, "n1", 0, "two in background")
	if _, err := e.Limiter.Reserve("n2", "ns"); err != nil {
		t.Fatalf("another node: %v", err)
	}
	// The first VM migrated and its pod is gone, in the same window: still two evictions in it.
	tracker.forget(vms[0].UID, "", "pod deleted", vms[0])
	wantNodeSlots(t, e.Limiter, "n1", 0, "a background eviction's pod gone in its window")
	// The next window counts the one still in progress only.
	e.Limiter.Reset()
	wantNodeSlots(t, e.Limiter, "n1", 1, "next window, one in progress")
}
