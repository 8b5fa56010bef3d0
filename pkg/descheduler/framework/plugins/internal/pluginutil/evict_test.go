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
