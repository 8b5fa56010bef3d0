package framework_test

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
func (errEvictor) CheckLimits(*corev1.Pod) error      { return nil }
func (errEvictor) ExplainPreEviction(*corev1.Pod) framework.PreEvictionExplanation {
	return framework.PreEvictionExplanation{}
}
func (e errEvictor) Evict(context.Context, *corev1.Pod, framework.EvictOptions) error {
	return e.err
}

func TestEvictOutcomes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want framework.EvictOutcome
	}{
		{nil, framework.Evicted},
		{framework.ErrDryRun, framework.Evicted},
		// Evicted by someone else: nothing to retry.
		{fmt.Errorf("evicting pod ns/p: %w", framework.ErrPodGone), framework.Evicted},
		{&framework.EvictionLimitError{Scope: framework.LimitScopeTotal}, framework.StopEvicting},
		{&framework.EvictionLimitError{Scope: framework.LimitScopeNode, Key: "n"}, framework.NodeFull},
		{&framework.EvictionLimitError{Scope: framework.LimitScopeNamespace, Key: "ns"}, framework.NamespaceFull},
		{fmt.Errorf("429"), framework.NotEvicted},
	} {
		if got := framework.Evict(context.Background(), errEvictor{tc.err}, &corev1.Pod{}, "Pl", "r"); got != tc.want {
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
func (*limitedEvictor) ExplainPreEviction(*corev1.Pod) framework.PreEvictionExplanation {
	return framework.PreEvictionExplanation{}
}

// A pod the cycle's limits stop is not run through PreEvictionFilter (the scheduler simulation),
// and the outcome is the limit's.
func TestEvictChecksLimitsBeforePreEvictionFilter(t *testing.T) {
	for _, tc := range []struct {
		limit error
		want  framework.EvictOutcome
	}{
		{&framework.EvictionLimitError{Scope: framework.LimitScopeTotal}, framework.StopEvicting},
		{&framework.EvictionLimitError{Scope: framework.LimitScopeNode, Key: "n"}, framework.NodeFull},
		{&framework.EvictionLimitError{Scope: framework.LimitScopeNamespace, Key: "ns"}, framework.NamespaceFull},
	} {
		ev := &limitedEvictor{limit: tc.limit}
		if got := framework.Evict(context.Background(), ev, &corev1.Pod{}, "Pl", "r"); got != tc.want || ev.preFiltered != 0 || ev.evictions != 0 {
			t.Errorf("limit %v: outcome %v (want %v), %d PreEvictionFilter calls, %d Evict calls (want none)", tc.limit, got, tc.want, ev.preFiltered, ev.evictions)
		}
	}
	ev := &limitedEvictor{}
	if got := framework.Evict(context.Background(), ev, &corev1.Pod{}, "Pl", "r"); got != framework.Evicted || ev.preFiltered != 1 || ev.evictions != 1 {
		t.Errorf("no limit: outcome %v, %d PreEvictionFilter calls, %d Evict calls; want Evicted, 1, 1", got, ev.preFiltered, ev.evictions)
	}
}
