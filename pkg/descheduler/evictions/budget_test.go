package evictions

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

// fakeWorkloads is one Deployment whose pods the test changes.
type fakeWorkloads struct {
	w    Workload
	pods []*corev1.Pod
}

func (f *fakeWorkloads) Workload(pod *corev1.Pod) (Workload, []*corev1.Pod, bool) {
	if len(pod.OwnerReferences) == 0 {
		return Workload{}, nil, false
	}
	return f.w, f.pods, true
}
func (f *fakeWorkloads) HasSynced() bool { return true }

func budgetPod(i int, ready bool, created time.Time) *corev1.Pod {
	yes := true
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: fmt.Sprintf("p%d", i), Namespace: "ns", UID: types.UID(fmt.Sprintf("uid-%d", i)),
		CreationTimestamp: metav1.NewTime(created),
		OwnerReferences:   []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", UID: "rs", Controller: &yes}},
	}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
	return p
}

func TestDefaultWorkloadLimit(t *testing.T) {
	for _, tc := range []struct{ replicas, want int }{{1, 1}, {2, 1}, {3, 1}, {4, 2}, {10, 2}, {11, 1}, {20, 2}, {35, 3}, {100, 10}} {
		if got, def := workloadLimit(nil, tc.replicas); got != tc.want || !def {
			t.Errorf("replicas %d: limit %d (default %v), want %d", tc.replicas, got, def, tc.want)
		}
	}
	pct := intstr.FromString("25%")
	if got, def := workloadLimit(&pct, 20); got != 5 || def {
		t.Errorf("25%% of 20: %d (default %v), want 5 from the policy", got, def)
	}
	tiny := intstr.FromString("1%")
	if got, _ := workloadLimit(&tiny, 20); got != 1 {
		t.Errorf("1%% of 20: %d, want at least 1", got)
	}
}

// TestBudgetAcrossCycles: a 20-replica workload lets 2 pods go (Koordinator's default 10%), counts
// them across Resets until each is replaced by a Ready pod created since, then lets the next go.
func TestBudgetAcrossCycles(t *testing.T) {
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	src := &fakeWorkloads{w: Workload{Kind: "Deployment", Namespace: "ns", Name: "web", UID: "dep", Replicas: 20}}
	for i := range 20 {
		src.pods = append(src.pods, budgetPod(i, true, now.Add(-time.Hour)))
	}
	b := NewBudget(BudgetConfig{}, src, func() time.Time { return now })
	var slots []BudgetSlot
	for i := range 2 {
		s, err := b.Reserve(src.pods[i], false)
		if err != nil {
			t.Fatalf("eviction %d: %v", i, err)
		}
		slots = append(slots, s)
	}
	err := b.Check(src.pods[2])
	var we *framework.WorkloadBudgetError
	if !framework.IsWorkloadBudget(err) || !errors.As(err, &we) || we.Rule != RuleMaxMigrating || we.Limit != 2 || !we.Default {
		t.Fatalf("third eviction: %v, want the default maxMigratingPerWorkload of 2", err)
	}
	b.Reset()
	if err := b.Check(src.pods[2]); !framework.IsWorkloadBudget(err) {
		t.Fatalf("a new cycle forgot the evictions in progress: %v", err)
	}
	// Pod 0 is gone, its replacement not Ready yet: still counted.
	now = now.Add(10 * time.Second)
	src.pods = append(src.pods[1:], budgetPod(100, false, now))
	if err := b.Check(src.pods[2]); !framework.IsWorkloadBudget(err) {
		t.Fatalf("replacement not Ready, yet the budget let a pod go: %v", err)
	}
	// The replacement is Ready: one slot free again; pod 1 still runs (evicting) and counts.
	src.pods[len(src.pods)-1] = budgetPod(100, true, now)
	if err := b.Check(src.pods[2]); err != nil {
		t.Fatalf("after a replacement became Ready: %v", err)
	}
	if got := b.Migrating("dep"); got != 1 {
		t.Fatalf("migrating %d, want 1", got)
	}
	// Release returns a slot whose eviction failed.
	b.Release(slots[1])
	if got := b.Migrating("dep"); got != 0 {
		t.Fatalf("migrating after Release %d, want 0", got)
	}
}

// TestBudgetUnavailable: pods NotReady for other reasons count against maxUnavailablePerWorkload;
// evicting a pod that is NotReady itself makes none more unavailable.
func TestBudgetUnavailable(t *testing.T) {
	now := time.Now()
	src := &fakeWorkloads{w: Workload{Kind: "Deployment", Namespace: "ns", Name: "web", UID: "dep", Replicas: 6}}
	for i := range 6 {
		src.pods = append(src.pods, budgetPod(i, i >= 2, now))
	}
	b := NewBudget(BudgetConfig{}, src, nil)
	err := b.Check(src.pods[3])
	var we *framework.WorkloadBudgetError
	if !errors.As(err, &we) || we.Rule != RuleMaxUnavailable || we.Count != 2 || we.Limit != 2 {
		t.Fatalf("2 of 6 NotReady, limit 2: %v, want maxUnavailablePerWorkload", err)
	}
	if err := b.Check(src.pods[0]); err != nil {
		t.Fatalf("evicting a NotReady pod: %v", err)
	}
	three := intstr.FromInt32(3)
	b = NewBudget(BudgetConfig{MaxUnavailable: &three}, src, nil)
	if err := b.Check(src.pods[3]); err != nil {
		t.Fatalf("policy maxUnavailablePerWorkload 3: %v", err)
	}
}

func TestBudgetSingleReplicaAndBarePods(t *testing.T) {
	src := &fakeWorkloads{w: Workload{Kind: "Deployment", Namespace: "ns", Name: "one", UID: "dep", Replicas: 1}}
	src.pods = []*corev1.Pod{budgetPod(0, true, time.Now())}
	b := NewBudget(BudgetConfig{}, src, nil)
	var we *framework.WorkloadBudgetError
	if err := b.Check(src.pods[0]); !errors.As(err, &we) || we.Rule != RuleSingleReplica {
		t.Fatalf("single replica: %v, want evictSingleReplicaWorkloads", err)
	}
	b = NewBudget(BudgetConfig{EvictSingleReplica: true}, src, nil)
	if err := b.Check(src.pods[0]); err != nil {
		t.Fatalf("evictSingleReplicaWorkloads: true: %v", err)
	}
	bare := budgetPod(9, true, time.Now())
	bare.OwnerReferences = nil
	if err := b.Check(bare); err != nil {
		t.Fatalf("a pod without a controller has no workload budget: %v", err)
	}
}

// TestBudgetDryRun: dry-run reservations count within a cycle only.
func TestBudgetDryRun(t *testing.T) {
	src := &fakeWorkloads{w: Workload{Kind: "Deployment", Namespace: "ns", Name: "web", UID: "dep", Replicas: 5}}
	for i := range 5 {
		src.pods = append(src.pods, budgetPod(i, true, time.Now()))
	}
	b := NewBudget(BudgetConfig{}, src, nil)
	for i := range 2 {
		if _, err := b.Reserve(src.pods[i], true); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Check(src.pods[2]); !framework.IsWorkloadBudget(err) {
		t.Fatalf("third dry-run eviction of 5 replicas: %v", err)
	}
	b.Reset()
	if err := b.Check(src.pods[2]); err != nil {
		t.Fatalf("dry-run reservations outlived the cycle: %v", err)
	}
}

// TestSoftEvictionReleasesBudgetWhenCleared: a 4-replica Deployment (maxMigratingPerWorkload 2 by
// default) whose pods are soft-evicted, then no longer nominated (annotations removed while the pods
// still run), then nominated again: the budget lets them go again. A soft eviction's slot belongs to
// the annotation; it is not kept by the pod that stays.
func TestSoftEvictionReleasesBudgetWhenCleared(t *testing.T) {
	ctx := context.Background()
	created := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	now := created.Add(time.Hour)
	clock := func() time.Time { return now }
	src := &fakeWorkloads{w: Workload{UID: "d", Kind: "Deployment", Namespace: "ns", Name: "d", Replicas: 4}}
	for i := range 4 {
		p := budgetPod(i, true, created)
		p.Spec.NodeName = "n1"
		src.pods = append(src.pods, p)
	}
	objs := make([]runtime.Object, 0, len(src.pods))
	for _, p := range src.pods {
		objs = append(objs, p)
	}
	client := fake.NewClientset(objs...)
	tracker := NewInProgress(false, clock)
	lim := NewLimiter(Limits{})
	lim.SetBudget(NewBudget(BudgetConfig{}, src, clock))
	lim.SetInProgress(tracker)
	soft := &Soft{Profile: "p", Client: client, Now: clock}
	e := &ProfileEvictor{Profile: "p", EvictPlugin: &countingEvict{}, Limiter: lim, Soft: soft}
	// sync shows the informer's view of the pods to the tracker and the workload source.
	sync := func() {
		for i, old := range src.pods {
			cur, err := client.CoreV1().Pods("ns").Get(ctx, old.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tracker.observe(old, cur)
			src.pods[i] = cur
		}
	}
	for round := range 3 {
		// The node violates: the first two pods are soft-evicted, the budget holds the others.
		soft.BeginCycle()
		for i := range 2 {
			if err := e.Evict(ctx, src.pods[i], framework.EvictOptions{PluginName: "Pl"}); err != nil {
				t.Fatalf("round %d: soft eviction of pod %d: %v", round, i, err)
			}
		}
		if err := e.Evict(ctx, src.pods[2], framework.EvictOptions{PluginName: "Pl"}); !framework.IsWorkloadBudget(err) {
			t.Fatalf("round %d: third pod of 4: %v, want the workload budget", round, err)
		}
		soft.EndCycle(ctx, src.pods, true, nil)
		sync()
		lim.Reset()
		// The node fits: a complete cycle nominates none; the annotations go.
		now = now.Add(time.Minute)
		soft.BeginCycle()
		if cleared := soft.EndCycle(ctx, src.pods, true, nil); len(cleared) != 2 {
			t.Fatalf("round %d: cleared %d annotations, want 2", round, len(cleared))
		}
		sync()
		lim.Reset()
		if got := lim.Budget().Migrating("d"); got != 0 {
			t.Fatalf("round %d: %d evictions still count against the workload after their annotations were removed, want 0", round, got)
		}
		now = now.Add(time.Minute)
	}
}

// TestBudgetFinishedPodIsGone: an evicted pod that finished (a KubeVirt source pod after its live
// migration, Succeeded and kept) is gone for its workload: a Ready pod created since replaces it.
func TestBudgetFinishedPodIsGone(t *testing.T) {
	created := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	now := created.Add(time.Hour)
	src := &fakeWorkloads{w: Workload{UID: "d", Kind: "Deployment", Namespace: "ns", Name: "d", Replicas: 4}}
	for i := range 4 {
		src.pods = append(src.pods, budgetPod(i, true, created))
	}
	b := NewBudget(BudgetConfig{}, src, func() time.Time { return now })
	if _, err := b.Reserve(src.pods[0], false); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute)
	done := src.pods[0].DeepCopy()
	done.Status.Phase = corev1.PodSucceeded
	src.pods = append([]*corev1.Pod{done}, src.pods[1:]...)
	src.pods = append(src.pods, budgetPod(4, true, now))
	if err := b.Check(src.pods[1]); err != nil {
		t.Fatal(err)
	}
	if got := b.Migrating("d"); got != 0 {
		t.Fatalf("%d evictions count against the workload after the evicted pod finished and a Ready pod replaced it, want 0", got)
	}
}

// TestBackgroundEvictionBudgetEndsWithIt: a background eviction the controller never confirms
// (dropped after AssumedBackgroundTimeout), or whose eviction-in-progress annotation goes while the
// pod stays (the migration failed), no longer counts against the workload: the pod did not go.
func TestBackgroundEvictionBudgetEndsWithIt(t *testing.T) {
	ctx := context.Background()
	created := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	now := created.Add(time.Hour)
	clock := func() time.Time { return now }
	src := &fakeWorkloads{w: Workload{UID: "d", Kind: "Deployment", Namespace: "ns", Name: "d", Replicas: 4}}
	for i := range 4 {
		p := budgetPod(i, true, created)
		p.Spec.NodeName = "n1"
		p.Annotations = map[string]string{RequestEvictOnlyAnnotation: ""}
		src.pods = append(src.pods, p)
	}
	tracker := NewInProgress(true, clock)
	lim := NewLimiter(Limits{})
	lim.SetBudget(NewBudget(BudgetConfig{}, src, clock))
	lim.SetInProgress(tracker)
	answer := apierrors.NewTooManyRequests(`admission webhook "virt" denied the request: Eviction triggered evacuation of VMI "ns/vm"`, 0)
	e := &ProfileEvictor{Profile: "p", EvictPlugin: &stubEvict{err: answer}, Limiter: lim}
	for i := range 2 {
		if err := e.Evict(ctx, src.pods[i], framework.EvictOptions{PluginName: "Pl"}); err != nil {
			t.Fatalf("background eviction of pod %d: %v", i, err)
		}
	}
	if err := lim.Budget().Check(src.pods[2]); !framework.IsWorkloadBudget(err) {
		t.Fatalf("third pod of 4 with 2 migrating: %v, want the workload budget", err)
	}
	// Pod 1's controller confirms, then removes eviction-in-progress: its migration ended, the pod
	// stays.
	confirmed := src.pods[1].DeepCopy()
	confirmed.Annotations[EvictionInProgressAnnotation] = ""
	tracker.observe(src.pods[1], confirmed)
	tracker.observe(confirmed, src.pods[1])
	if got := lim.Budget().Migrating("d"); got != 1 {
		t.Fatalf("after pod 1's eviction-in-progress was removed: %d migrating, want 1", got)
	}
	// Pod 0's request is never confirmed.
	now = now.Add(AssumedBackgroundTimeout + time.Second)
	if err := lim.Budget().Check(src.pods[2]); err != nil {
		t.Fatalf("after both background evictions ended with their pods still there: %v", err)
	}
	if got := lim.Budget().Migrating("d"); got != 0 {
		t.Fatalf("%d migrating after both background evictions ended, want 0", got)
	}
}

// Each eviction takes the oldest replacement created since it, whatever order the workload source
// lists the pods in (the informer's index, in map order): two evictions 10 s apart, one
// replacement created between them and one after both, are both replaced. Before, with the later
// replacement listed first, the older eviction took it, the newer one counted on, and how many
// evictions were replaced changed from call to call.
func TestBudgetMatchesReplacementsInCreationOrder(t *testing.T) {
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	start := now
	src := &fakeWorkloads{w: Workload{Kind: "Deployment", Namespace: "ns", Name: "web", UID: "dep", Replicas: 6}}
	for i := range 6 {
		src.pods = append(src.pods, budgetPod(i, true, now.Add(-time.Hour)))
	}
	b := NewBudget(BudgetConfig{}, src, func() time.Time { return now })
	for i := range 2 {
		if _, err := b.Reserve(src.pods[i], false); err != nil {
			t.Fatalf("eviction %d: %v", i, err)
		}
		now = now.Add(10 * time.Second)
	}
	// Pods 0 and 1 are gone; 5 of 6 Ready, so each eviction needs a replacement of its own.
	between, after := budgetPod(100, true, start.Add(5*time.Second)), budgetPod(101, true, start.Add(20*time.Second))
	src.pods = append([]*corev1.Pod{after, between}, src.pods[2:5]...)
	_ = b.Check(src.pods[2])
	if n := b.Migrating("dep"); n != 0 {
		t.Fatalf("%d evictions still migrating, want 0: each has a Ready replacement created since it", n)
	}
}

// TestBudgetAcceptedEvictionBeforeTheCacheSeesIt: once the Eviction is accepted, the pod is gone for
// its workload whether or not the informer has delivered its deletion: a Ready replacement frees
// the slot at once (the next pod of the workload may go the same instant in every run, not only
// in those where the informer was quicker than the next decision), the pod counts neither as
// Ready nor as a replacement, and it is not evicted again, until the cache shows it go.
func TestBudgetAcceptedEvictionBeforeTheCacheSeesIt(t *testing.T) {
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	src := &fakeWorkloads{w: Workload{Kind: "ReplicaSet", Namespace: "ns", Name: "w0", UID: "rs", Replicas: 5}}
	for i := range 5 {
		src.pods = append(src.pods, budgetPod(i, i != 3, now.Add(-time.Hour)))
	}
	one, two := intstr.FromInt32(1), intstr.FromInt32(2)
	b := NewBudget(BudgetConfig{MaxMigrating: &one, MaxUnavailable: &two}, src, func() time.Time { return now })
	slot, err := b.Reserve(src.pods[0], false)
	if err != nil {
		t.Fatal(err)
	}
	// The replacement is Ready; the cache still lists pod 0 running (its deletion not delivered).
	src.pods = append(src.pods, budgetPod(5, true, now))
	if err := b.Check(src.pods[1]); !framework.IsWorkloadBudget(err) {
		t.Fatalf("before the eviction was accepted: %v, want maxMigratingPerWorkload", err)
	}
	b.markAccepted(slot)
	// Ready: pods 1, 2, 4, 5 (pod 0 is going, pod 3 is not Ready): evicting pod 1 makes 2 unavailable.
	if err := b.Check(src.pods[1]); err != nil {
		t.Fatalf("after the eviction was accepted and a replacement is Ready: %v", err)
	}
	if got := b.Migrating("rs"); got != 0 {
		t.Fatalf("migrating %d, want 0", got)
	}
	if !b.Counts(src.pods[0]) {
		t.Fatal("the cache's running copy of the evicted pod may be evicted again")
	}
	src.pods[2] = budgetPod(2, false, now.Add(-time.Hour))
	var we *framework.WorkloadBudgetError
	if err := b.Check(src.pods[1]); !errors.As(err, &we) || we.Rule != RuleMaxUnavailable || we.Count != 2 {
		t.Fatalf("with pods 2 and 3 NotReady and pod 0 going: %v, want maxUnavailablePerWorkload at 2 (pod 0 counted Ready?)", err)
	}
	// The cache shows pod 0 go: forgotten.
	src.pods = src.pods[1:]
	if err := b.Check(src.pods[0]); !errors.As(err, &we) || we.Rule != RuleMaxUnavailable {
		t.Fatalf("after the deletion was seen: %v", err)
	}
	if b.Counts(budgetPod(0, true, now)) || len(b.gone) != 0 {
		t.Fatalf("pod 0 still remembered after the cache saw it go: %v", b.gone)
	}
}
