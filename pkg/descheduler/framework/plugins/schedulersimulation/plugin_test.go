package schedulersimulation

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
)

func rsPod(name, node string, cpuMilli int64, created time.Time) *corev1.Pod {
	p := ownedPod(name, node, "rs", created)
	p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: *resource.NewMilliQuantity(cpuMilli, resource.DecimalSI),
	}}}}
	p.Status.Phase = corev1.PodRunning
	return p
}

type flagNode string

func (f flagNode) NodeVerdict(_ *corev1.Pod, node *corev1.Node) (bool, string) {
	return node.Name == string(f), "over its threshold"
}

type fixture struct {
	t       *testing.T
	c       *fake.Cluster
	clk     *clocktesting.FakePassiveClock
	p       *Plugin
	a, b    *corev1.Pod
	metrics *Metrics
}

// n1 holds a and b (1 CPU each, one ReplicaSet) and 2 CPUs more; n2 has room for exactly one
// more CPU; n3 is full. Evicting a sends it to n2; b then has nowhere to go but back to n1.
func newFixture(t *testing.T) *fixture {
	start := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	a, b := rsPod("a", "n1", 1000, start.Add(-time.Hour)), rsPod("b", "n1", 1000, start.Add(-time.Hour))
	objs := []runtime.Object{
		fake.Node("n1", nil, 4, 16), fake.Node("n2", nil, 4, 16), fake.Node("n3", nil, 4, 16),
		a, b, fake.Pod("ns", "f", "n1", 2000), fake.Pod("ns", "g", "n2", 2500), fake.Pod("ns", "h", "n3", 4000),
	}
	c := fake.NewCluster(objs...)
	clk := clocktesting.NewFakePassiveClock(start)
	args := &SchedulerSimulationArgs{BackoffBase: &metav1.Duration{Duration: 10 * time.Minute}}
	p, err := NewWithClock(t.Context(), args, &fake.Handle{Cluster: c}, clk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	reg := metrics.NewKubeRegistry()
	if err := p.Metrics().Register(reg); err != nil {
		t.Fatal(err)
	}
	c.Start(t)
	return &fixture{t: t, c: c, clk: clk, p: p, a: a, b: b, metrics: p.Metrics()}
}

func (f *fixture) nextCycle() { f.clk.SetTime(f.clk.Now().Add(2 * cycleGap)) }

func (f *fixture) decision(pod *corev1.Pod) Decision {
	f.t.Helper()
	d, ok := f.p.Decision(pod)
	if !ok {
		f.t.Fatalf("no decision on %s", pod.Name)
	}
	return d
}

func counter(t *testing.T, c *metrics.CounterVec, labels ...string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(c.WithLabelValues(labels...))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestAdmitsOnlyMovesAndComposesWithinACycle(t *testing.T) {
	f := newFixture(t)
	ok, pred := f.p.PreEvictionFilterFor(f.a, "")
	if !f.p.Filter(f.a) || !ok {
		t.Fatalf("a was not admitted: %+v", f.decision(f.a))
	}
	da := f.decision(f.a)
	if da.Verdict != VerdictEvict || da.Prediction.Node != "n2" || da.Prediction.CurrentNode != "n1" || da.Prediction.Profile != "default-scheduler" {
		t.Fatalf("decision on a: %+v, want evict to n2", da)
	}
	if pred == nil || pred.Judge != Name || pred.Node != "n2" || pred.Score == nil || *pred.Score != da.Prediction.Score || pred.CurrentNode != "n1" ||
		pred.SchedulerProfile != "default-scheduler" || !strings.Contains(pred.Message, "predicted on n2 with score") || !strings.Contains(pred.Message, "current node n1") {
		t.Fatalf("prediction of a = %+v, want n2 with the decision's score and message", pred)
	}
	// Same cycle: n2's room is a's now, so b would land back on n1.
	if ok, pred := f.p.PreEvictionFilterFor(f.b, ""); ok || pred != nil {
		t.Fatalf("b was admitted into the room promised to a: %+v, prediction %+v", f.decision(f.b), pred)
	}
	if db := f.decision(f.b); db.Reason != ReasonSameNode || db.Prediction.Node != "n1" {
		t.Fatalf("decision on b: %+v, want blocked for landing back on n1", db)
	}
	if got := len(f.p.Decisions()); got != 2 {
		t.Fatalf("%d decisions in the cycle, want 2", got)
	}
	// Next cycle (a was not actually evicted): b alone would go to n2.
	f.nextCycle()
	if !f.p.PreEvictionFilter(f.b) {
		t.Fatalf("b was not admitted in a new cycle: %+v", f.decision(f.b))
	}
	if got := len(f.p.Decisions()); got != 1 {
		t.Fatalf("%d decisions after a new cycle began, want 1", got)
	}
	if got := counter(t, f.metrics.Decisions, "test", VerdictEvict, ReasonAdmitted); got != 2 {
		t.Fatalf("admitted decisions metric %v, want 2", got)
	}
	if got := counter(t, f.metrics.Decisions, "test", VerdictBlocked, ReasonSameNode); got != 1 {
		t.Fatalf("same-node decisions metric %v, want 1", got)
	}

	// A NodeVerdicter that flags the predicted node blocks the eviction, with the runtime's hooks
	// marking the cycles.
	f.p.SetNominators([]framework.Nominator{{Name: "LowNodeUtilization", Verdicter: flagNode("n2")}})
	ctx := context.Background()
	f.p.EndCycle(ctx)
	f.p.BeginCycle(ctx)
	if f.p.PreEvictionFilter(f.a) {
		t.Fatal("a was admitted onto a node its nominating plugin flags")
	}
	if d := f.decision(f.a); d.Reason != ReasonFlagged || !strings.Contains(d.Message, "LowNodeUtilization would flag the pod on its predicted node n2") {
		t.Fatalf("decision %+v", d)
	}
	f.p.EndCycle(ctx)
}

// A replacement that lands back on the node its predecessor was evicted from makes the owner's
// further evictions from that node back off, as the informers report the deletion and the binding.
func TestFlapBacksOffTheOwnerOnThatNode(t *testing.T) {
	f := newFixture(t)
	if !f.p.PreEvictionFilter(f.a) {
		t.Fatalf("a was not admitted: %+v", f.decision(f.a))
	}
	ctx := context.Background()
	// The eviction happens; the ReplicaSet's replacement is bound to n1 anyway.
	if err := f.c.Client.CoreV1().Pods("ns").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	repl := rsPod("a-2", "n1", 1000, f.clk.Now())
	repl.UID = types.UID("uid-a-2")
	waitFor(t, func() bool {
		_, err := f.c.Factory.Core().V1().Pods().Lister().Pods("ns").Get("a")
		return err != nil
	})
	if _, err := f.c.Client.CoreV1().Pods("ns").Create(ctx, repl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return counter(t, f.metrics.Flaps, "test", "ns") == 1 })
	if got := counter(t, f.metrics.Landings, "test", "elsewhere"); got != 1 {
		t.Fatalf("landings elsewhere %v, want 1", got)
	}
	f.nextCycle()
	if f.p.Filter(f.b) || f.p.PreEvictionFilter(f.b) {
		t.Fatal("b, of the same owner on the same node, was let through during the backoff")
	}
	if d := f.decision(f.b); d.Reason != ReasonFlapBackoff || !strings.Contains(d.Message, "back off until 2026-11-21T10:10:0") {
		t.Fatalf("decision %+v", d)
	}
	// After the backoff, the simulation decides again.
	f.clk.SetTime(f.clk.Now().Add(10 * time.Minute))
	if !f.p.Filter(f.b) {
		t.Fatal("b still blocked after the backoff")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestArgs(t *testing.T) {
	a := &SchedulerSimulationArgs{}
	a.SetDefaults()
	if a.FlapWindow.Duration != DefaultFlapWindow || a.BackoffBase.Duration != DefaultBackoffBase || a.BackoffMax.Duration != DefaultBackoffMax {
		t.Fatalf("defaults %+v", a)
	}
	if errs := a.Validate(nil); len(errs) != 0 {
		t.Fatalf("defaults invalid: %v", errs)
	}
	bad := &SchedulerSimulationArgs{
		SchedulerConfigFile: "../../../../../manifests/scheduler/config.yaml",
		Profile:             "nope",
		FlapWindow:          &metav1.Duration{Duration: -time.Second},
		BackoffBase:         &metav1.Duration{Duration: time.Hour},
		BackoffMax:          &metav1.Duration{Duration: time.Minute},
	}
	errs := bad.Validate(nil)
	want := []string{"flapWindow: Invalid value", "backoffMax: Invalid value", "profile: Not found"}
	if len(errs) != len(want) {
		t.Fatalf("errors %v, want %d", errs, len(want))
	}
	for i, w := range want {
		if !strings.Contains(errs[i].Error(), w) {
			t.Fatalf("error %d %q does not contain %q", i, errs[i].Error(), w)
		}
	}
	missing := &SchedulerSimulationArgs{SchedulerConfigFile: "/nonexistent.yaml"}
	if errs := missing.Validate(nil); len(errs) != 1 || !strings.Contains(errs[0].Error(), "schedulerConfigFile") {
		t.Fatalf("errors %v, want one naming schedulerConfigFile", errs)
	}
	good := &SchedulerSimulationArgs{SchedulerConfigFile: "../../../../../manifests/scheduler/config.yaml", Profile: "accord-scheduler"}
	if errs := good.Validate(nil); len(errs) != 0 {
		t.Fatalf("errors %v", errs)
	}
}
