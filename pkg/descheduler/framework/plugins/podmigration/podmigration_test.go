package podmigration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/controller"
	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
	accordfake "github.com/accord-sched/accord/pkg/generated/clientset/versioned/fake"
	accordinformers "github.com/accord-sched/accord/pkg/generated/informers/externalversions"
)

// evictor stands for the profile's evictor: its preEvictionFilter verdict and explanation, and
// the result of Evict.
type evictor struct {
	admit   bool
	explain framework.PreEvictionExplanation
	err     error
	evicted []framework.EvictOptions
	judged  []*corev1.Pod
	// onEvict, when set, is called by Evict.
	onEvict func(ctx context.Context, opts framework.EvictOptions)
}

func (e *evictor) Filter(*corev1.Pod) bool { return true }
func (e *evictor) PreEvictionFilter(pod *corev1.Pod) bool {
	e.judged = append(e.judged, pod)
	return e.admit
}
func (e *evictor) Evict(ctx context.Context, _ *corev1.Pod, opts framework.EvictOptions) error {
	e.evicted = append(e.evicted, opts)
	if e.onEvict != nil {
		e.onEvict(ctx, opts)
	}
	return e.err
}
func (e *evictor) ExplainPreEviction(*corev1.Pod) framework.PreEvictionExplanation { return e.explain }
func (*evictor) CheckLimits(*corev1.Pod) error                                     { return nil }

// handle gives the plugin an Accord clientset and informers of its own: the fake cluster's
// field-tracking clientset has no schema for Accord's types.
type handle struct {
	*fake.Handle
	accord  accordclient.Interface
	factory accordinformers.SharedInformerFactory
}

func (h handle) AccordClient() accordclient.Interface                         { return h.accord }
func (h handle) AccordInformerFactory() accordinformers.SharedInformerFactory { return h.factory }

// run reconciles one PodMigration of pod (to target) through ev and returns it as stored after.
func run(t *testing.T, pod *corev1.Pod, pm *schedv1alpha1.PodMigration, ev *evictor) *schedv1alpha1.PodMigration {
	t.Helper()
	p, accord := setup(t, pod, ev, pm)
	return reconcile(t, p, accord, pm)
}

// reconcile runs p on pm and returns pm as stored after.
func reconcile(t *testing.T, p *Plugin, accord accordclient.Interface, pm *schedv1alpha1.PodMigration) *schedv1alpha1.PodMigration {
	t.Helper()
	if err := p.reconcile(context.Background(), pm.Namespace+"/"+pm.Name); err != nil {
		t.Fatal(err)
	}
	got, err := accord.SchedulingV1alpha1().PodMigrations(pm.Namespace).Get(context.Background(), pm.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// setup builds the plugin over a fake cluster holding pod and the migrations pms (and objs, such as
// reservations), evicting through ev.
func setup(t *testing.T, pod *corev1.Pod, ev *evictor, pms ...runtime.Object) (*Plugin, accordclient.Interface) {
	t.Helper()
	c := fake.NewCluster(pod)
	accord := accordfake.NewSimpleClientset(pms...)
	factory := accordinformers.NewSharedInformerFactory(accord, 0)
	fh, err := fake.NewHandle(c)
	if err != nil {
		t.Fatal(err)
	}
	fh.Evict = ev
	pl, err := New(context.Background(), nil, handle{Handle: fh, accord: accord, factory: factory})
	if err != nil {
		t.Fatal(err)
	}
	c.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	p := pl.(*Plugin)
	p.queue = controller.NewQueue(Name, p.reconcile)
	t.Cleanup(p.queue.ShutDown)
	return p, accord
}

func testPod() *corev1.Pod {
	pod := fake.Pod("ns", "db-0", "src", 100)
	pod.UID = "uid-1" // a label value, as real UIDs are
	pod.OwnerReferences[0].Controller = ptr.To(true)
	pod.Spec.SchedulerName = "accord-scheduler"
	return pod
}

func migration(target string) *schedv1alpha1.PodMigration {
	return &schedv1alpha1.PodMigration{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns", CreationTimestamp: metav1.Now()},
		Spec: schedv1alpha1.PodMigrationSpec{PodName: "db-0", TargetNode: target}}
}

func TestImpossibleTargetFailsWithTheSchedulersReason(t *testing.T) {
	ev := &evictor{explain: framework.PreEvictionExplanation{BlockedBy: "SchedulerSimulation", Message: "infeasible: 0/2 nodes are available: 1 Insufficient cpu."}}
	got := run(t, testPod(), migration("dst"), ev)
	if got.Status.Phase != schedv1alpha1.PodMigrationFailed || got.Status.Reason != ReasonUnschedulable ||
		!strings.Contains(got.Status.Message, "spec.targetNode dst: SchedulerSimulation: infeasible: 0/2 nodes are available") {
		t.Fatalf("status %+v", got.Status)
	}
	if len(ev.evicted) != 0 {
		t.Errorf("evicted %v", ev.evicted)
	}
	// The simulation judged the pod pinned to the target.
	terms := ev.judged[0].Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || terms[0].MatchFields[0].Values[0] != "dst" {
		t.Errorf("simulated pod's node affinity %+v, want pinned to dst", terms)
	}
}

func TestEvictsIntoTheTargetAndRuns(t *testing.T) {
	ev := &evictor{admit: true, explain: framework.PreEvictionExplanation{PredictedNode: "dst"}}
	got := run(t, testPod(), migration(""), ev)
	if got.Status.Phase != schedv1alpha1.PodMigrationRunning || got.Status.TargetNode != "dst" || got.Status.SourceNode != "src" || got.Status.EvictionTime == nil {
		t.Fatalf("status %+v", got.Status)
	}
	if len(ev.evicted) != 1 || ev.evicted[0].PredictedNode != "dst" || !ev.evicted[0].RequireReservation {
		t.Errorf("evictions %+v, want one to dst requiring a reservation", ev.evicted)
	}
}

// TestDryRunWritesNothing: with --dry-run the evictor answers ErrDryRun: the migration is logged,
// its status left alone.
func TestDryRunWritesNothing(t *testing.T) {
	ev := &evictor{admit: true, err: framework.ErrDryRun, explain: framework.PreEvictionExplanation{PredictedNode: "dst"}}
	pm := migration("")
	p, accord := setup(t, testPod(), ev, pm)
	p.handle.(handle).Handle.Dry = true
	got := reconcile(t, p, accord, pm)
	if got.Status.Phase != "" || len(ev.evicted) != 1 {
		t.Fatalf("status %+v after a dry run (evictions %v), want untouched", got.Status, ev.evicted)
	}
}

// TestHeldIsRetried: a limit (or budget, window, PDB) keeps the migration Pending, reason Held.
func TestHeldIsRetried(t *testing.T) {
	ev := &evictor{admit: true, err: errors.New("maximum number of pods per node reached")}
	got := run(t, testPod(), migration("dst"), ev)
	if got.Status.Phase != schedv1alpha1.PodMigrationPending || got.Status.Reason != ReasonHeld || !strings.Contains(got.Status.Message, "per node") {
		t.Fatalf("status %+v", got.Status)
	}
}

func TestRefusals(t *testing.T) {
	bare := testPod()
	bare.OwnerReferences = nil
	late := migration("dst")
	late.Spec.Deadline = ptr.To(metav1.NewTime(time.Now().Add(-time.Minute)))
	for _, tc := range []struct {
		name   string
		pod    *corev1.Pod
		pm     *schedv1alpha1.PodMigration
		phase  schedv1alpha1.PodMigrationPhase
		reason string
	}{
		{"bare pod", bare, migration("dst"), schedv1alpha1.PodMigrationFailed, ReasonNoController},
		{"target is the source", testPod(), migration("src"), schedv1alpha1.PodMigrationFailed, ReasonTargetIsSource},
		{"no such pod", fake.Pod("ns", "other", "src", 1), migration("dst"), schedv1alpha1.PodMigrationFailed, ReasonPodNotFound},
		{"deadline passed", testPod(), late, schedv1alpha1.PodMigrationAborted, ReasonDeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &evictor{admit: true}
			got := run(t, tc.pod, tc.pm, ev)
			if got.Status.Phase != tc.phase || got.Status.Reason != tc.reason || got.Status.CompletionTime == nil {
				t.Errorf("status %+v, want %s/%s", got.Status, tc.phase, tc.reason)
			}
			if len(ev.evicted) != 0 {
				t.Errorf("evicted %v", ev.evicted)
			}
		})
	}
}

// TestSecondMigrationOfAPodIsRefused: while one migration of db-0 is live, a second one fails at
// once, naming the first; the first goes on.
func TestSecondMigrationOfAPodIsRefused(t *testing.T) {
	first, second := migration("dst"), migration("dst")
	second.Name = "m2"
	second.CreationTimestamp = metav1.NewTime(first.CreationTimestamp.Add(time.Second))
	ev := &evictor{admit: true}
	p, accord := setup(t, testPod(), ev, first, second)
	got := reconcile(t, p, accord, second)
	if got.Status.Phase != schedv1alpha1.PodMigrationFailed || got.Status.Reason != ReasonAlreadyMigrating ||
		!strings.Contains(got.Status.Message, "already being migrated by PodMigration m (Pending)") {
		t.Fatalf("second migration's status %+v, want Failed/%s naming m", got.Status, ReasonAlreadyMigrating)
	}
	if len(ev.evicted) != 0 {
		t.Fatalf("the refused migration evicted: %v", ev.evicted)
	}
	if got := reconcile(t, p, accord, first); got.Status.Phase != schedv1alpha1.PodMigrationRunning {
		t.Fatalf("first migration's status %+v, want Running", got.Status)
	}
}

// TestPodUIDIsRecordedBeforeTheEviction: when the evictor is called, the stored status already
// names the pod's UID, and (through BeforeEvict) the reservation it evicts into.
func TestPodUIDIsRecordedBeforeTheEviction(t *testing.T) {
	pm := migration("dst")
	var atEviction, beforeEvict schedv1alpha1.PodMigrationStatus
	ev := &evictor{admit: true}
	p, accord := setup(t, testPod(), ev, pm)
	ev.onEvict = func(ctx context.Context, opts framework.EvictOptions) {
		got, err := accord.SchedulingV1alpha1().PodMigrations("ns").Get(ctx, "m", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		atEviction = got.Status
		if err := opts.BeforeEvict(ctx, "db-0-abcde", "dst"); err != nil {
			t.Fatal(err)
		}
		got, _ = accord.SchedulingV1alpha1().PodMigrations("ns").Get(ctx, "m", metav1.GetOptions{})
		beforeEvict = got.Status
	}
	got := reconcile(t, p, accord, pm)
	if atEviction.PodUID != "uid-1" || atEviction.Reason != ReasonReserving {
		t.Errorf("status when the evictor was called %+v, want the pod's UID and reason %s", atEviction, ReasonReserving)
	}
	if beforeEvict.Reason != ReasonEvicting || beforeEvict.ReservationName != "db-0-abcde" {
		t.Errorf("status after BeforeEvict %+v, want %s into db-0-abcde", beforeEvict, ReasonEvicting)
	}
	if got.Status.Phase != schedv1alpha1.PodMigrationRunning || got.Status.ReservationName != "db-0-abcde" {
		t.Errorf("status %+v, want Running into db-0-abcde", got.Status)
	}
}

// TestRestartNeverEvictsTheReplacement: a migration left by an earlier process with the old pod's
// UID recorded finds a pod of the same name with another UID (a StatefulSet's replacement). Before
// the eviction step it fails and evicts nothing; at the eviction step (Evicting, a reservation
// named) it follows the reservation (Running), and still evicts nothing.
func TestRestartNeverEvictsTheReplacement(t *testing.T) {
	for _, tc := range []struct {
		step, reservation string
		phase             schedv1alpha1.PodMigrationPhase
		reason            string
	}{
		{ReasonReserving, "", schedv1alpha1.PodMigrationFailed, ReasonPodReplaced},
		{ReasonHeld, "", schedv1alpha1.PodMigrationFailed, ReasonPodReplaced},
		{ReasonEvicting, "db-0-abcde", schedv1alpha1.PodMigrationRunning, ReasonEvicting},
	} {
		t.Run(tc.step, func(t *testing.T) {
			pm := migration("dst")
			pm.Status = schedv1alpha1.PodMigrationStatus{Phase: schedv1alpha1.PodMigrationPending, Reason: tc.step, PodUID: "uid-old", ReservationName: tc.reservation}
			ev := &evictor{admit: true}
			got := run(t, testPod(), pm, ev)
			if got.Status.Phase != tc.phase || got.Status.Reason != tc.reason || got.Status.PodUID != "uid-old" {
				t.Errorf("status %+v, want %s/%s with the old UID", got.Status, tc.phase, tc.reason)
			}
			if len(ev.evicted) != 0 {
				t.Errorf("the replacement was evicted: %v", ev.evicted)
			}
		})
	}
}

// TestDeadlineHasACeiling: a deadline more than MaxPodMigrationDeadline after the creation fails the
// migration with the field named.
func TestDeadlineHasACeiling(t *testing.T) {
	pm := migration("dst")
	pm.Spec.Deadline = ptr.To(metav1.NewTime(pm.CreationTimestamp.Add(schedv1alpha1.MaxPodMigrationDeadline + time.Minute)))
	ev := &evictor{admit: true}
	got := run(t, testPod(), pm, ev)
	if got.Status.Phase != schedv1alpha1.PodMigrationFailed || got.Status.Reason != ReasonInvalid ||
		!strings.Contains(got.Status.Message, "spec.deadline: Invalid value") || !strings.Contains(got.Status.Message, "at most 1h0m0s after") {
		t.Fatalf("status %+v", got.Status)
	}
	if len(ev.evicted) != 0 {
		t.Errorf("evicted %v", ev.evicted)
	}
	pm.Spec.Deadline = ptr.To(metav1.NewTime(pm.CreationTimestamp.Add(schedv1alpha1.MaxPodMigrationDeadline)))
	if errs := Validate(pm); len(errs) != 0 {
		t.Errorf("a deadline at the ceiling is refused: %v", errs)
	}
}

// TestHeldBacksOff: each hold doubles the wait from HeldRetry, up to MaxHeldRetry, and the status is
// written only when the reason changes.
func TestHeldBacksOff(t *testing.T) {
	pm := migration("dst")
	ev := &evictor{admit: true, err: errors.New("maximum number of pods per node reached")}
	p, accord := setup(t, testPod(), ev, pm)
	var waits []time.Duration
	var versions []string
	for range 8 {
		cur, err := p.migrations.PodMigrations("ns").Get("m")
		if err != nil {
			t.Fatal(err)
		}
		res := p.start(context.Background(), cur)
		if res.status != nil {
			if _, err := p.writeStatus(context.Background(), cur, res); err != nil {
				t.Fatal(err)
			}
		}
		waits = append(waits, res.after)
		got, _ := accord.SchedulingV1alpha1().PodMigrations("ns").Get(context.Background(), "m", metav1.GetOptions{})
		versions = append(versions, got.ResourceVersion)
		// The informer catches up before the next attempt.
		if err := waitFor(func() bool {
			c, _ := p.migrations.PodMigrations("ns").Get("m")
			return c.ResourceVersion == got.ResourceVersion
		}); err != nil {
			t.Fatal(err)
		}
	}
	want := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, MaxHeldRetry, MaxHeldRetry, MaxHeldRetry}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits %v, want %v", waits, want)
		}
	}
	if versions[2] != versions[7] {
		t.Errorf("the status was rewritten while the hold did not change (resource versions %v)", versions)
	}
}

func waitFor(cond func() bool) error {
	for range 200 {
		if cond() {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return errors.New("condition not met in 2s")
}

// TestEvictDirectly: mode EvictDirectly asks the evictor for no reservation, and the migration
// succeeds at the eviction.
func TestEvictDirectly(t *testing.T) {
	pm := migration("")
	pm.Spec.Mode = schedv1alpha1.PodMigrationEvictDirectly
	ev := &evictor{admit: true}
	got := run(t, testPod(), pm, ev)
	if got.Status.Phase != schedv1alpha1.PodMigrationSucceeded || got.Status.Reason != ReasonEvicted || got.Status.PodUID != "uid-1" {
		t.Fatalf("status %+v, want Succeeded/%s", got.Status, ReasonEvicted)
	}
	if len(ev.evicted) != 1 || !ev.evicted[0].NoReservation || ev.evicted[0].RequireReservation || ev.evicted[0].BeforeEvict != nil {
		t.Errorf("evictions %+v, want one with NoReservation", ev.evicted)
	}
}

// TestFinishedMigrationIsDeletedAfterItsTTL: the reconcile that finishes a migration schedules its
// deletion (its own status write queues nothing): with ttlSecondsAfterFinished 0 it is deleted at
// once, with 1 it comes back to the queue a second later, whatever the outcome (Succeeded, Failed).
func TestFinishedMigrationIsDeletedAfterItsTTL(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode schedv1alpha1.PodMigrationMode
		ev   *evictor
	}{
		{"succeeded", schedv1alpha1.PodMigrationEvictDirectly, &evictor{admit: true}},
		{"failed", "", &evictor{explain: framework.PreEvictionExplanation{BlockedBy: "SchedulerSimulation", Message: "infeasible"}}},
	} {
		t.Run(tc.name+"/ttl 0", func(t *testing.T) {
			pm := migration("")
			pm.Spec.Mode, pm.Spec.TTLSecondsAfterFinished = tc.mode, ptr.To[int32](0)
			p, accord := setup(t, testPod(), tc.ev, pm)
			if err := p.reconcile(context.Background(), "ns/m"); err != nil {
				t.Fatal(err)
			}
			if got, err := accord.SchedulingV1alpha1().PodMigrations("ns").Get(context.Background(), "m", metav1.GetOptions{}); err == nil {
				t.Fatalf("migration %s/%s still there after it finished with ttlSecondsAfterFinished 0", got.Status.Phase, got.Status.Reason)
			}
		})
		t.Run(tc.name+"/ttl 1", func(t *testing.T) {
			pm := migration("")
			pm.Spec.Mode, pm.Spec.TTLSecondsAfterFinished = tc.mode, ptr.To[int32](1)
			p, accord := setup(t, testPod(), tc.ev, pm)
			got := reconcile(t, p, accord, pm)
			if !got.Status.Phase.Finished() || got.Status.CompletionTime == nil {
				t.Fatalf("status %+v, want finished with a completion time", got.Status)
			}
			if err := waitFor(func() bool { return p.queue.Len() == 1 }); err != nil {
				t.Fatalf("the finished migration was not queued again for its TTL: %v", err)
			}
		})
	}
}
