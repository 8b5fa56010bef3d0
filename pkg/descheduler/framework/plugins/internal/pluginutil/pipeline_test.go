package pluginutil

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

// recordingEvictor records the decisions and the evictions in flight; Evict waits on gate (when
// set) before answering, and answers from limit: after limit evictions, limitErr.
type recordingEvictor struct {
	reject   map[string]bool
	gate     func(inFlight []*corev1.Pod)
	limit    int
	limitErr error
	// checkErr is what CheckLimits returns: the cycle's limits stop every pod before it is decided.
	checkErr error

	mu        sync.Mutex
	decided   []string
	evicted   []string
	inFlight  []*corev1.Pod
	maxFlight int
	mixed     []string // evictions started while one of another priority rank was in flight
}

func (e *recordingEvictor) Filter(*corev1.Pod) bool       { return true }
func (e *recordingEvictor) CheckLimits(*corev1.Pod) error { return e.checkErr }
func (*recordingEvictor) ExplainPreEviction(*corev1.Pod) framework.PreEvictionExplanation {
	return framework.PreEvictionExplanation{}
}

func (e *recordingEvictor) PreEvictionFilter(pod *corev1.Pod) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.decided = append(e.decided, pod.Name)
	return !e.reject[pod.Name]
}

func (e *recordingEvictor) Evict(_ context.Context, pod *corev1.Pod, opts framework.EvictOptions) error {
	// As the profile's evictor, the limits are taken (here: none) before the eviction's own work.
	if opts.GatesPassed != nil {
		opts.GatesPassed()
	}
	e.mu.Lock()
	for _, p := range e.inFlight {
		if ComparePriorityLowToHigh(p, pod) != 0 {
			e.mixed = append(e.mixed, fmt.Sprintf("%s while %s", pod.Name, p.Name))
		}
	}
	e.inFlight = append(e.inFlight, pod)
	e.maxFlight = max(e.maxFlight, len(e.inFlight))
	snapshot := slices.Clone(e.inFlight)
	e.mu.Unlock()
	if e.gate != nil {
		e.gate(snapshot)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.inFlight = slices.DeleteFunc(e.inFlight, func(p *corev1.Pod) bool { return p == pod })
	if e.limitErr != nil && len(e.evicted) >= e.limit {
		return e.limitErr
	}
	e.evicted = append(e.evicted, pod.Name)
	return nil
}

func prioPods(prios ...int32) []*corev1.Pod {
	var out []*corev1.Pod
	for i, p := range prios {
		out = append(out, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%d", i)},
			Spec: corev1.PodSpec{Priority: &p}})
	}
	return out
}

func reasonOf(*corev1.Pod) string { return "r" }

// The evictions of pods of one priority overlap, up to inFlight at once: four pods, four in flight,
// each eviction waiting until all four are under way.
func TestEvictOverlappedOverlaps(t *testing.T) {
	all := make(chan struct{})
	var once sync.Once
	ev := &recordingEvictor{gate: func(inFlight []*corev1.Pod) {
		if len(inFlight) == 4 {
			once.Do(func() { close(all) })
		}
		select {
		case <-all:
		case <-time.After(30 * time.Second):
			t.Error("the four evictions were never in flight together")
		}
	}}
	pods := prioPods(0, 0, 0, 0)
	if got := EvictOverlapped(context.Background(), ev, pods, "Pl", reasonOf, 4); got != framework.Evicted {
		t.Fatalf("outcome %v, want Evicted", got)
	}
	if ev.maxFlight != 4 || len(ev.evicted) != 4 {
		t.Fatalf("%d evicted, at most %d in flight; want 4 and 4", len(ev.evicted), ev.maxFlight)
	}
	if !slices.Equal(ev.decided, []string{"p0", "p1", "p2", "p3"}) {
		t.Fatalf("decided %v, want the pods' order", ev.decided)
	}
}

// A pod of a higher priority is evicted only after the lower ones' evictions are done, and the
// decisions follow the pods' order.
func TestEvictOverlappedKeepsPriorityOrder(t *testing.T) {
	ev := &recordingEvictor{}
	pods := prioPods(0, 0, 0, 5, 5, 9)
	if got := EvictOverlapped(context.Background(), ev, pods, "Pl", reasonOf, 8); got != framework.Evicted {
		t.Fatalf("outcome %v, want Evicted", got)
	}
	if len(ev.mixed) > 0 {
		t.Fatalf("evictions of different priorities overlapped: %v", ev.mixed)
	}
	if !slices.Equal(ev.decided, []string{"p0", "p1", "p2", "p3", "p4", "p5"}) {
		t.Fatalf("decided %v, want the pods' order", ev.decided)
	}
	if len(ev.evicted) != 6 {
		t.Fatalf("evicted %v, want all six", ev.evicted)
	}
}

func TestEvictOverlappedOutcomes(t *testing.T) {
	nodeFull := &framework.EvictionLimitError{Scope: framework.LimitScopeNode, Key: "n"}
	total := &framework.EvictionLimitError{Scope: framework.LimitScopeTotal}
	for _, tc := range []struct {
		name        string
		ev          *recordingEvictor
		inFlight    int
		want        framework.EvictOutcome
		wantEvicted int
		maxDecided  int
	}{
		{name: "all evicted", ev: &recordingEvictor{}, inFlight: 3, want: framework.Evicted, wantEvicted: 5, maxDecided: 5},
		{name: "a filter keeps one", ev: &recordingEvictor{reject: map[string]bool{"p2": true}}, inFlight: 3, want: framework.NotEvicted, wantEvicted: 4, maxDecided: 5},
		// As the loop: the third pod is refused by the node's limit and no further pod is decided.
		{name: "node limit, one at a time", ev: &recordingEvictor{limit: 2, limitErr: nodeFull}, inFlight: 1, want: framework.NotEvicted, wantEvicted: 2, maxDecided: 3},
		// Overlapped: the pods in flight when the limit is reached are refused too, no more.
		{name: "node limit, overlapped", ev: &recordingEvictor{limit: 2, limitErr: nodeFull}, inFlight: 3, want: framework.NotEvicted, wantEvicted: 2, maxDecided: 2 + 3},
		{name: "total limit", ev: &recordingEvictor{limit: 1, limitErr: total}, inFlight: 3, want: framework.StopEvicting, wantEvicted: 1, maxDecided: 1 + 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := EvictOverlapped(context.Background(), tc.ev, prioPods(0, 0, 0, 0, 0), "Pl", reasonOf, tc.inFlight)
			if got != tc.want || len(tc.ev.evicted) != tc.wantEvicted || len(tc.ev.decided) > tc.maxDecided {
				t.Fatalf("outcome %v, evicted %v, decided %v; want %v, %d evicted, at most %d decided",
					got, tc.ev.evicted, tc.ev.decided, tc.want, tc.wantEvicted, tc.maxDecided)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ev := &recordingEvictor{}
	if got := EvictOverlapped(ctx, ev, prioPods(0, 0), "Pl", reasonOf, 3); got != framework.StopEvicting || len(ev.decided) != 0 {
		t.Fatalf("with ctx done: outcome %v, decided %v; want Stop, none", got, ev.decided)
	}
}

// capEvictor takes a slot under a cap of its own in Evict (as the profile's evictor takes the
// caps), then yields, so that goroutines started later could take the slots first.
type capEvictor struct {
	recordingEvictor
	cap   int
	slots []string
}

func (e *capEvictor) Evict(ctx context.Context, pod *corev1.Pod, opts framework.EvictOptions) error {
	time.Sleep(time.Duration(len(pod.Name)%3) * time.Millisecond) // goroutines start in any order
	e.mu.Lock()
	full := len(e.slots) >= e.cap
	if !full {
		e.slots = append(e.slots, pod.Name)
	}
	e.mu.Unlock()
	if opts.GatesPassed != nil {
		opts.GatesPassed()
	}
	if full {
		return &framework.EvictionLimitError{Scope: framework.LimitScopeNode, Key: "n"}
	}
	time.Sleep(time.Millisecond) // the API call overlaps
	return nil
}

// Among pods of one priority, the limits taken inside Evict go to the pods in the order given,
// whatever order the eviction goroutines run in: the next pod is decided only once the previous
// eviction has its limits (EvictOptions.GatesPassed). Before, a node's cap went to whichever
// goroutines reserved first, and a seeded simulation did not reproduce its trace.
func TestEvictOverlappedLimitsFollowTheOrder(t *testing.T) {
	for round := range 50 {
		pods := prioPods(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
		ev := &capEvictor{cap: 3}
		EvictOverlapped(context.Background(), ev, pods, "Pl", reasonOf, 8)
		if !slices.Equal(ev.slots, []string{"p0", "p1", "p2"}) {
			t.Fatalf("round %d: the cap of 3 went to %v, want p0 p1 p2 (the pods' order)", round, ev.slots)
		}
	}
}
