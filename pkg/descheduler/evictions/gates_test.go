package evictions

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/accord-sched/accord/apis/descheduler"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
)

// TestCheckAndEvictWalkOneGateOrder: for every set of failing gates (an eviction in progress, a
// closed window, a reached cap, an exhausted workload budget), CheckLimits and Evict refuse the pod
// with the verdict of the same gate, the first of the set in gates' order, and neither leaves a
// cap slot taken.
func TestCheckAndEvictWalkOneGateOrder(t *testing.T) {
	order := []string{"in progress", HeldWindow, "caps", HeldWorkloadBudget}
	var checked []string
	for _, g := range gates {
		if g.check != nil && g.name != "nominated" {
			checked = append(checked, g.name)
		}
	}
	if !slices.Equal(checked, order) {
		t.Fatalf("the gates CheckLimits asks are %q, want %q", checked, order)
	}
	verdict := func(err error) string {
		switch {
		case err == nil:
			return ""
		case framework.IsEvictionInProgress(err):
			return "in progress"
		case framework.IsWindowClosed(err):
			return HeldWindow
		case framework.IsWorkloadBudget(err):
			return HeldWorkloadBudget
		case framework.IsNodeLimit(err):
			return "caps"
		}
		return "other: " + err.Error()
	}
	now := time.Date(2026, 11, 26, 0, 59, 0, 0, time.UTC)
	build := func(failing map[string]bool) (*ProfileEvictor, *countingEvict) {
		created := now.Add(-time.Hour)
		src := &fakeWorkloads{w: Workload{Kind: "Deployment", Namespace: "ns", Name: "web", UID: "dep", Replicas: 6}}
		for i := range 6 {
			// Two NotReady pods of six exhaust the default budget for a Ready one.
			src.pods = append(src.pods, budgetPod(i, i >= 2 || !failing[HeldWorkloadBudget], created))
			src.pods[i].Spec.NodeName = "n1"
		}
		zero := 0
		limits := Limits{}
		if failing["caps"] {
			limits.PerNode = &zero
		}
		lim := NewLimiter(limits)
		lim.SetBudget(NewBudget(BudgetConfig{}, src, func() time.Time { return now }))
		tracker := NewInProgress(false, func() time.Time { return now })
		lim.SetInProgress(tracker)
		if failing["in progress"] {
			tracker.Assume(src.pods[3], InProgressSoft)
		}
		counter := &countingEvict{}
		e := &ProfileEvictor{Profile: "p", EvictPlugin: counter, Limiter: lim, Metrics: metrics.New(),
			Now: func() time.Time { return now }}
		if failing[HeldWindow] {
			e.Windows = mustWindows(t, descheduler.EvictionWindow{Start: "01:00", End: "05:00"})
		}
		return e, counter
	}
	for mask := range 1 << len(order) {
		failing := map[string]bool{}
		var names []string
		for i, g := range order {
			if mask&(1<<i) != 0 {
				failing[g] = true
				names = append(names, g)
			}
		}
		want := ""
		if len(names) > 0 {
			want = names[0]
		}
		name := strings.Join(names, "+")
		if name == "" {
			name = "none"
		}
		t.Run(name, func(t *testing.T) {
			e, _ := build(failing)
			pod := e.Limiter.Budget().src.(*fakeWorkloads).pods[3]
			gotCheck := verdict(e.CheckLimits(pod))
			if n := e.Limiter.Total(); n != 0 {
				t.Errorf("CheckLimits took %d cap slots", n)
			}
			e, counter := build(failing)
			pod = e.Limiter.Budget().src.(*fakeWorkloads).pods[3]
			gotEvict := verdict(e.Evict(context.Background(), pod, framework.EvictOptions{PluginName: "Pl"}))
			if gotCheck != want || gotEvict != want {
				t.Errorf("CheckLimits' verdict %q, Evict's %q, want both %q", gotCheck, gotEvict, want)
			}
			if want != "" && (counter.calls.Load() != 0 || e.Limiter.Total() != 0) {
				t.Errorf("refused by %s: %d evictions, %d cap slots taken", want, counter.calls.Load(), e.Limiter.Total())
			}
			if want == "" && counter.calls.Load() != 1 {
				t.Errorf("no gate failing: %d evictions, want 1", counter.calls.Load())
			}
		})
	}
}
