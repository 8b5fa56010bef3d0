package schedulersimulation

import (
	"context"
	"testing"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/decision"
)

// A pod-intrinsic nomination (age, failures, restarts) is never blocked, even when the replacement
// would land back on the same node, but its prediction is recorded and composed: a placement
// nomination later in the cycle cannot count on that room. The nominator is on the decision.
func TestPodIntrinsicNominationsAreNotBlocked(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.p.SetNominators([]framework.Nominator{{Name: "PodLifeTime", PodIntrinsic: true}, {Name: "RemoveDuplicates"},
		{Name: "RemovePodsHavingTooManyRestarts", PodIntrinsic: true}})
	f.p.BeginCycle(ctx)
	defer f.p.EndCycle(ctx)
	if !admit(f.p.PreEvictionFilterFor(f.a, "PodLifeTime")) {
		t.Fatalf("PodLifeTime's nomination blocked: %+v", f.decision(f.a))
	}
	da := f.decision(f.a)
	if da.Reason != ReasonPodIntrinsic || da.Plugin != "PodLifeTime" || da.Prediction.Node != "n2" {
		t.Fatalf("decision on a: %+v", da)
	}
	// n2's room is a's replacement's: b, nominated for its placement, would land back on n1.
	if admit(f.p.PreEvictionFilterFor(f.b, "RemoveDuplicates")) {
		t.Fatalf("b admitted into the room a's replacement takes: %+v", f.decision(f.b))
	}
	if db := f.decision(f.b); db.Reason != ReasonSameNode || db.Plugin != "RemoveDuplicates" {
		t.Fatalf("decision on b: %+v", db)
	}
	// The same same-node outcome does not block a pod-intrinsic nomination.
	if !admit(f.p.PreEvictionFilterFor(f.b, "RemovePodsHavingTooManyRestarts")) {
		t.Fatalf("RemovePodsHavingTooManyRestarts' nomination blocked: %+v", f.decision(f.b))
	}
}

// The nominating plugin's NodeVerdicter is asked first, so its reason is the one reported.
func TestNominatorVerdictFirst(t *testing.T) {
	f := newFixture(t)
	f.p.SetNominators([]framework.Nominator{{Name: "Other", Verdicter: flagNode("n2")}, {Name: "LowNodeUtilization", Verdicter: flagNode("n2")}})
	ctx := context.Background()
	f.p.BeginCycle(ctx)
	defer f.p.EndCycle(ctx)
	if admit(f.p.PreEvictionFilterFor(f.a, "LowNodeUtilization")) {
		t.Fatal("a admitted onto a flagged node")
	}
	if d := f.decision(f.a); d.Reason != ReasonFlagged || d.Message[:len("LowNodeUtilization")] != "LowNodeUtilization" {
		t.Fatalf("decision %+v, want LowNodeUtilization's verdict", d)
	}
}

// admit is PreEvictionFilterFor's verdict.
func admit(ok bool, _ *decision.Prediction) bool { return ok }
