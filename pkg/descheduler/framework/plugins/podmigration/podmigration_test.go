package podmigration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
}

func (e *evictor) Filter(*corev1.Pod) bool { return true }
func (e *evictor) PreEvictionFilter(pod *corev1.Pod) bool {
	e.judged = append(e.judged, pod)
	return e.admit
}
func (e *evictor) Evict(_ context.Context, _ *corev1.Pod, opts framework.EvictOptions) error {
	e.evicted = append(e.evicted, opts)
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
	c := fake.NewCluster(pod)
	accord := accordfake.NewSimpleClientset(pm)
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
	if err := p.reconcile(context.Background(), pm.Namespace+"/"+pm.Name); err != nil {
		t.Fatal(err)
	}
	got, err := accord.SchedulingV1alpha1().PodMigrations(pm.Namespace).Get(context.Background(), pm.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
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
	got := run(t, testPod(), migration(""), ev)
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
