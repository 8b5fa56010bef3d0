package pluginutil

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

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

// As framework.Evict, EvictOverlapped runs no pod the cycle's limits stop through PreEvictionFilter
// (the scheduler simulation).
func TestEvictOverlappedChecksLimitsBeforePreEvictionFilter(t *testing.T) {
	for _, tc := range []struct {
		limit error
		want  framework.EvictOutcome
	}{
		{&framework.EvictionLimitError{Scope: framework.LimitScopeTotal}, framework.StopEvicting},
		{&framework.EvictionLimitError{Scope: framework.LimitScopeNode, Key: "n"}, framework.NotEvicted},
		{&framework.EvictionLimitError{Scope: framework.LimitScopeNamespace, Key: "ns"}, framework.NotEvicted},
	} {
		ev := &limitedEvictor{limit: tc.limit}
		if got := EvictOverlapped(context.Background(), ev, prioPods(0, 0, 0), "Pl", reasonOf, 4); got != tc.want || ev.preFiltered != 0 || ev.evictions != 0 {
			t.Errorf("limit %v: outcome %v (want %v), %d PreEvictionFilter calls, %d Evict calls (want none)", tc.limit, got, tc.want, ev.preFiltered, ev.evictions)
		}
	}
	ev := &limitedEvictor{}
	if got := EvictOverlapped(context.Background(), ev, prioPods(0), "Pl", reasonOf, 4); got != framework.Evicted || ev.preFiltered != 1 || ev.evictions != 1 {
		t.Errorf("no limit: outcome %v, %d PreEvictionFilter calls, %d Evict calls; want Evicted, 1, 1", got, ev.preFiltered, ev.evictions)
	}
}
