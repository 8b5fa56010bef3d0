package evictions

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/decision"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
)

// forgetfulJudge admits every pod with a prediction and keeps its decisions per cycle, as
// SchedulerSimulation does: BeginCycle forgets them.
type forgetfulJudge struct {
	decided map[string]bool
}

func (j *forgetfulJudge) Name() string            { return "Judge" }
func (j *forgetfulJudge) Filter(*corev1.Pod) bool { return true }
func (j *forgetfulJudge) PreEvictionFilter(p *corev1.Pod) bool {
	ok, _ := j.PreEvictionFilterFor(p, "")
	return ok
}
func (j *forgetfulJudge) SetNominators([]framework.Nominator) {}
func (j *forgetfulJudge) PreEvictionFilterFor(pod *corev1.Pod, _ string) (bool, *decision.Prediction) {
	j.decided[pod.Name] = true
	score := int64(55)
	return true, &decision.Prediction{Judge: "Judge", Node: "n2", Score: &score, CurrentNode: pod.Spec.NodeName, Message: "predicted on n2 with score 55"}
}
func (j *forgetfulJudge) RefusalMessage(*corev1.Pod) string { return "" }
func (j *forgetfulJudge) HasSynced() bool                   { return true }
func (j *forgetfulJudge) BeginCycle()                       { clear(j.decided) }

// decisionsRecorded is a DecisionRecorder that keeps what it is given.
type decisionsRecorded struct {
	events.EventRecorder
	got []decision.Decision
}

func (r *decisionsRecorded) RecordDecision(pod *corev1.Pod, eventtype, reason, note string, d decision.Decision) {
	r.got = append(r.got, d)
	r.Eventf(pod, nil, eventtype, reason, decisionAction, "%s", note)
}

// The prediction of an admitted pod reaches its eviction's decision (and the evict plugin) even when
// a cycle began between the admission and the eviction and the judge forgot its decisions: an
// event-triggered controller's evictions run while the periodic cycles begin. Before, the evictor
// asked the judge again at the eviction, and those Events went without a prediction (the console's
// newest eviction rows without a predicted node, TestConsoleInChromium 2 of 5).
func TestEvictionKeepsItsPredictionAcrossACycle(t *testing.T) {
	judge := &forgetfulJudge{decided: map[string]bool{}}
	var gotOpts framework.EvictOptions
	ep := &recordingEvict{opts: &gotOpts}
	rec := &decisionsRecorded{EventRecorder: events.NewFakeRecorder(10)}
	e := &ProfileEvictor{Profile: "p", EvictPlugin: ep, PreEvictionFilters: []framework.EvictorPlugin{judge},
		Limiter: NewLimiter(Limits{}), Metrics: metrics.New(), Recorder: rec}
	ev := e.ForPlugin("Nominator")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	if !ev.PreEvictionFilter(pod) {
		t.Fatal("not admitted")
	}
	judge.BeginCycle()
	if err := ev.Evict(context.Background(), pod, framework.EvictOptions{Reason: "hot"}); err != nil {
		t.Fatal(err)
	}
	if gotOpts.PredictedNode != "n2" {
		t.Errorf("the evict plugin got PredictedNode %q, want n2", gotOpts.PredictedNode)
	}
	if len(rec.got) != 1 {
		t.Fatalf("%d decisions recorded, want 1", len(rec.got))
	}
	d := rec.got[0]
	pred, ok := d.Predicted()
	if d.Verdict != decision.VerdictEvicted || d.Plugin != "Nominator" || d.Profile != "p" || d.Reason != "hot" || d.Pod.UID != "uid-a" || d.Pod.Node != "n1" ||
		!ok || pred.Node != "n2" || *pred.Score != 55 {
		t.Fatalf("decision %+v", d)
	}
	if err := d.Validate(); err != nil {
		t.Errorf("decision invalid: %v", err)
	}
	if d.RequestedAt == nil || d.RequestedAt.IsZero() {
		t.Errorf("decision without the time its eviction was requested")
	}
	if n := len(e.admissions.of(pod)); n != 0 {
		t.Errorf("%d predictions still kept after the eviction", n)
	}
}

// recordingEvict keeps the options of its last Evict and places a reservation as ReservationFirst
// does (BeforeEvict before evicting).
type recordingEvict struct{ opts *framework.EvictOptions }

func (r *recordingEvict) Name() string { return "Recording" }
func (r *recordingEvict) Evict(ctx context.Context, _ *corev1.Pod, opts framework.EvictOptions) error {
	*r.opts = opts
	if opts.BeforeEvict != nil {
		return opts.BeforeEvict(ctx, "res-a", opts.PredictedNode)
	}
	return nil
}

func TestDecisionRecordsReservationAndHeld(t *testing.T) {
	var gotOpts framework.EvictOptions
	rec := &decisionsRecorded{EventRecorder: events.NewFakeRecorder(10)}
	e := &ProfileEvictor{Profile: "p", EvictPlugin: &recordingEvict{opts: &gotOpts}, Limiter: NewLimiter(Limits{}), Metrics: metrics.New(), Recorder: rec}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	called := false
	err := e.Evict(context.Background(), pod, framework.EvictOptions{PluginName: "PodMigration", Reason: "PodMigration m", PredictedNode: "n3",
		BeforeEvict: func(context.Context, string, string) error { called = true; return nil }})
	if err != nil || !called {
		t.Fatalf("Evict = %v, the caller's BeforeEvict called: %v", err, called)
	}
	if len(rec.got) != 1 || rec.got[0].Reservation == nil || *rec.got[0].Reservation != (decision.Reservation{Name: "res-a", Node: "n3"}) {
		t.Fatalf("decisions %+v, want one with reservation res-a on n3", rec.got)
	}
	// A caller's BeforeEvict that refuses still refuses.
	boom := errors.New("boom")
	pod2 := pod.DeepCopy()
	pod2.UID, pod2.Name = "uid-b", "b"
	if err := e.Evict(context.Background(), pod2, framework.EvictOptions{PluginName: "PodMigration",
		BeforeEvict: func(context.Context, string, string) error { return boom }}); !errors.Is(err, boom) {
		t.Fatalf("Evict = %v, want the caller's BeforeEvict error", err)
	}

	e.held(pod, "LowNodeLoad", errors.New("budget spent"))
	d := rec.got[len(rec.got)-1]
	if d.Verdict != decision.VerdictHeld || d.Blocker == nil || d.Blocker.Gate != HeldWorkloadBudget || d.Blocker.Message != "budget spent" || d.Plugin != "LowNodeLoad" {
		t.Fatalf("held decision %+v", d)
	}
	if err := d.Validate(); err != nil {
		t.Errorf("held decision invalid: %v", err)
	}
}

// fakeSink keeps the Events created through it.
type fakeSink struct {
	mu      sync.Mutex
	created []*eventsv1.Event
}

func (s *fakeSink) Create(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.created = append(s.created, e)
	return e, nil
}
func (s *fakeSink) Update(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	return e, nil
}
func (s *fakeSink) Patch(_ context.Context, e *eventsv1.Event, _ []byte) (*eventsv1.Event, error) {
	return e, nil
}

// The sink writes a decision on the Event recorded for it, through a real events broadcaster.
func TestDecisionSinkAnnotatesTheEvent(t *testing.T) {
	inner := &fakeSink{}
	sink := NewDecisionSink(inner)
	b := events.NewBroadcaster(sink)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.StartRecordingToSink(ctx.Done())
	defer b.Shutdown()
	rec := sink.Recorder(b.NewRecorder(scheme.Scheme, decision.ReportingController))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	e := &ProfileEvictor{Profile: "p"}
	d := e.newDecision(pod, "LowNodeLoad", "hot", decision.VerdictEvicted)
	rec.RecordDecision(pod, corev1.EventTypeNormal, ReasonDescheduled, EventMessage("LowNodeLoad", "p", "hot", ""), d)
	// An Event with no decision stays without the annotation.
	rec.Eventf(pod, nil, corev1.EventTypeWarning, ReasonEvictionFailed, decisionAction, "failed")
	deadline := time.Now().Add(10 * time.Second)
	for {
		inner.mu.Lock()
		n := len(inner.created)
		inner.mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d Events created in 10s, want 2", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	inner.mu.Lock()
	defer inner.mu.Unlock()
	for _, ev := range inner.created {
		js, ok := ev.Annotations[decision.Annotation]
		switch ev.Reason {
		case ReasonDescheduled:
			got, err := decision.Unmarshal(js)
			if !ok || err != nil || got.Plugin != "LowNodeLoad" || got.Pod.UID != "uid-a" || ev.ReportingController != decision.ReportingController {
				t.Errorf("Descheduled Event: annotation %q (%v), reportingController %q", js, err, ev.ReportingController)
			}
		default:
			if ok {
				t.Errorf("%s Event carries a decision: %s", ev.Reason, js)
			}
		}
	}
}

// A pod this process has just evicted is not held by its workload budget: a cycle that listed it
// before its deletion showed (an event-triggered controller evicted it meanwhile) finds its own
// eviction counted in the budget. Recorded, that EvictionHeld Event was newer than the pod's
// Descheduled one, and the console's newest row for the pod said "held by workload budget", with no
// predicted node, for a pod that was evicted.
func TestNoHeldDecisionForAPodJustEvicted(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	src := &fakeWorkloads{w: Workload{Kind: "Deployment", Namespace: "ns", Name: "m", UID: "dep", Replicas: 2}}
	for i := range 2 {
		src.pods = append(src.pods, budgetPod(i, true, now.Add(-time.Hour)))
	}
	lim := NewLimiter(Limits{})
	lim.SetBudget(NewBudget(BudgetConfig{}, src, func() time.Time { return now }))
	rec := &decisionsRecorded{EventRecorder: events.NewFakeRecorder(10)}
	e := &ProfileEvictor{Profile: "p", EvictPlugin: &stubEvict{}, Limiter: lim, Metrics: metrics.New(), Recorder: rec}
	ev := e.ForPlugin("NodeCRDResourceFit")
	b := src.pods[1]
	if err := ev.Evict(context.Background(), b, framework.EvictOptions{Reason: "r"}); err != nil {
		t.Fatal(err)
	}
	// The cycle's stale copy of b (no deletionTimestamp yet).
	err := ev.CheckLimits(b)
	if err == nil || !framework.IsPodGone(err) {
		t.Errorf("CheckLimits(b just evicted) = %v, want an error wrapping ErrPodGone", err)
	}
	// Its sibling is held, as before.
	if err := ev.CheckLimits(src.pods[0]); !framework.IsWorkloadBudget(err) {
		t.Errorf("CheckLimits(sibling) = %v, want the workload budget", err)
	}
	var verdicts []string
	for _, d := range rec.got {
		verdicts = append(verdicts, d.Pod.Name+" "+d.Verdict)
	}
	if want := []string{"p1 Evicted", "p0 Held"}; fmt.Sprint(verdicts) != fmt.Sprint(want) {
		t.Errorf("decisions %v, want %v", verdicts, want)
	}
}
