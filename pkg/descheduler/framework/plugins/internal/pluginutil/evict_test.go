package pluginutil

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

// errEvictor admits every pod and returns err from Evict.
type errEvictor struct{ err error }

func (errEvictor) Filter(*corev1.Pod) bool            { return true }
func (errEvictor) PreEvictionFilter(*corev1.Pod) bool { return true }
func (e errEvictor) Evict(context.Context, *corev1.Pod, framework.EvictOptions) error {
	return e.err
}

func TestEvictOutcomes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want Outcome
	}{
		{nil, Evicted},
		{framework.ErrDryRun, Evicted},
		// Evicted by someone else: nothing to retry.
		{fmt.Errorf("evicting pod ns/p: %w", framework.ErrPodGone), Evicted},
		{&framework.EvictionLimitError{Scope: framework.LimitScopeTotal}, Stop},
		{&framework.EvictionLimitError{Scope: framework.LimitScopeNode, Key: "n"}, NodeFull},
		{&framework.EvictionLimitError{Scope: framework.LimitScopeNamespace, Key: "ns"}, NamespaceFull},
		{fmt.Errorf("429"), Failed},
	} {
		if got := Evict(context.Background(), errEvictor{tc.err}, &corev1.Pod{}, "Pl", "r"); got != tc.want {
			t.Errorf("Evict with %v = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// limitedEvictor is an evictor whose limits stop every pod: CheckLimits returns limit, and
// PreEvictionFilter and Evict count their calls.
type limitedEvictor struct {
	limit                  error
	preFiltered, evictions int
}

func (*limitedEvictor) Filter(*corev1.Pod) bool              { return true }
func (e *limitedEvictor) PreEvictionFilter(*corev1.Pod) bool { e.preFiltered++; return true }
func (e *limitedEvictor) Evict(context.Context, *corev1.Pod, framework.EvictOptions) error {
	e.evictions++
	return e.limit
}
func (e *limitedEvictor) CheckLimits(*corev1.Pod) error { return e.limit }

// A pod the cycle's limits stop is not run through PreEvictionFilter (the scheduler simulation), by
// Evict or by EvictOverlapped, and the outcome is the limit's.
func TestLimitsCheckedBeforePreEvictionFilter(t *testing.T) {
	evict := func(ev *limitedEvictor) Outcome { return Evict(context.Background(), ev, &corev1.Pod{}, "Pl", "r") }
	overlapped := func(ev *limitedEvictor) Outcome {
		return EvictOverlapped(context.Background(), ev, prioPods(0, 0, 0), "Pl", reasonOf, 4)
	}
	for _, tc := range []struct {
		limit                error
		evict, overlappedOut Outcome
	}{
		{&framework.EvictionLimitError{Scope: framework.LimitScopeTotal}, Stop, Stop},
		{&framework.EvictionLimitError{Scope: framework.LimitScopeNode, Key: "n"}, NodeFull, Failed},
		{&framework.EvictionLimitError{Scope: framework.LimitScopeNamespace, Key: "ns"}, NamespaceFull, Failed},
	} {
		for _, run := range []struct {
			name string
			fn   func(*limitedEvictor) Outcome
			want Outcome
		}{{"Evict", evict, tc.evict}, {"EvictOverlapped", overlapped, tc.overlappedOut}} {
			ev := &limitedEvictor{limit: tc.limit}
			if got := run.fn(ev); got != run.want || ev.preFiltered != 0 || ev.evictions != 0 {
				t.Errorf("%s, limit %v: outcome %v (want %v), %d PreEvictionFilter calls, %d Evict calls (want none)", run.name, tc.limit, got, run.want, ev.preFiltered, ev.evictions)
			}
		}
	}
	ev := &limitedEvictor{}
	if got := Evict(context.Background(), ev, &corev1.Pod{}, "Pl", "r"); got != Evicted || ev.preFiltered != 1 || ev.evictions != 1 {
		t.Errorf("Evict, no limit: outcome %v, %d PreEvictionFilter calls, %d Evict calls; want Evicted, 1, 1", got, ev.preFiltered, ev.evictions)
	}
	ev = &limitedEvictor{}
	if got := EvictOverlapped(context.Background(), ev, prioPods(0), "Pl", reasonOf, 4); got != Evicted || ev.preFiltered != 1 || ev.evictions != 1 {
		t.Errorf("EvictOverlapped, no limit: outcome %v, %d PreEvictionFilter calls, %d Evict calls; want Evicted, 1, 1", got, ev.preFiltered, ev.evictions)
	}
}
