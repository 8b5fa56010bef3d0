package pluginutil

import (
	"context"
	"testing"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

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
		ev := &recordingEvictor{checkErr: tc.limit}
		if got := EvictOverlapped(context.Background(), ev, prioPods(0, 0, 0), "Pl", reasonOf, 4); got != tc.want || len(ev.decided) != 0 || len(ev.evicted) != 0 {
			t.Errorf("limit %v: outcome %v (want %v), decided %v, evicted %v (want none)", tc.limit, got, tc.want, ev.decided, ev.evicted)
		}
	}
	ev := &recordingEvictor{}
	if got := EvictOverlapped(context.Background(), ev, prioPods(0), "Pl", reasonOf, 4); got != framework.Evicted || len(ev.decided) != 1 || len(ev.evicted) != 1 {
		t.Errorf("no limit: outcome %v, decided %v, evicted %v; want Evicted, one each", got, ev.decided, ev.evicted)
	}
}
