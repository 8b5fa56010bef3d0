package schedulersimulation

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func ownedPod(name, node, owner string, created time.Time) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(created),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: owner, UID: types.UID(owner), Controller: new(true)}},
		},
		Spec: corev1.PodSpec{NodeName: node},
	}
}

// Each replacement that lands back on the node its predecessor was evicted from within the window
// doubles the backoff of that owner on that node, up to the maximum; the level resets once a whole
// window passes without a flap.
func TestFlapBackoffDoublesUpToMax(t *testing.T) {
	start := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(start)
	const window, base, maxBackoff = time.Hour, 5 * time.Minute, 15 * time.Minute
	f := newFlapMemory(clk, window, base, maxBackoff)

	flapOnce := func(i int) Landing {
		t.Helper()
		victim := ownedPod("victim", "n1", "rs", clk.Now().Add(-time.Hour))
		victim.UID = types.UID("victim-" + string(rune('a'+i)))
		f.Evicting(victim, "n2")
		f.Gone(victim)
		clk.SetTime(clk.Now().Add(time.Second))
		repl := ownedPod("repl", "n1", "rs", clk.Now())
		repl.UID = types.UID("repl-" + string(rune('a'+i)))
		return f.Bound(repl)
	}
	probe := ownedPod("probe", "n1", "rs", start)
	other := ownedPod("other", "n2", "rs", start)

	for i, want := range []time.Duration{base, 2 * base, maxBackoff, maxBackoff} {
		l := flapOnce(i)
		if !l.Matched || !l.Flap || l.Backoff != want || l.From != "n1" || l.Predicted != "n2" {
			t.Fatalf("flap %d: %+v, want a flap from n1 with backoff %s", i+1, l, want)
		}
		until, blocked := f.BlockedUntil(probe)
		if !blocked || !until.Equal(clk.Now().Add(want)) {
			t.Fatalf("flap %d: blocked=%v until %s, want blocked until %s", i+1, blocked, until, clk.Now().Add(want))
		}
		if _, blocked := f.BlockedUntil(other); blocked {
			t.Fatalf("flap %d: the owner is blocked on n2 too", i+1)
		}
		if f.Active() != 1 {
			t.Fatalf("flap %d: %d active backoffs, want 1", i+1, f.Active())
		}
		// Just before the backoff ends it still holds; at its end it is over.
		clk.SetTime(until.Add(-time.Nanosecond))
		if _, blocked := f.BlockedUntil(probe); !blocked {
			t.Fatalf("flap %d: backoff over early", i+1)
		}
		clk.SetTime(until)
		if _, blocked := f.BlockedUntil(probe); blocked {
			t.Fatalf("flap %d: backoff not over at its end", i+1)
		}
	}
	// A window without flaps resets the level.
	clk.SetTime(clk.Now().Add(window + time.Second))
	if l := flapOnce(10); !l.Flap || l.Backoff != base {
		t.Fatalf("after a quiet window: %+v, want backoff %s", l, base)
	}
}

func TestReplacementsThatAreNotFlaps(t *testing.T) {
	start := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(start)
	f := newFlapMemory(clk, time.Hour, time.Minute, time.Hour)
	victim := ownedPod("victim", "n1", "rs", start.Add(-time.Hour))

	f.Evicting(victim, "n2")
	// The evicted pod is not gone yet (the eviction may have been refused): a pod of the owner on
	// n1 is a scale-up, not a replacement.
	if l := f.Bound(ownedPod("early", "n1", "rs", start)); l.Matched {
		t.Fatalf("matched %+v before the evicted pod was gone", l)
	}
	f.Gone(victim)
	// A pod created before the eviction is not its replacement.
	if l := f.Bound(ownedPod("old", "n1", "rs", start.Add(-time.Minute))); l.Matched {
		t.Fatalf("matched a pod created before the eviction: %+v", l)
	}
	// Another owner's pod is not its replacement.
	if l := f.Bound(ownedPod("stranger", "n1", "other-rs", start)); l.Matched {
		t.Fatalf("matched another owner's pod: %+v", l)
	}
	// The replacement lands on the predicted node: settled, no flap.
	l := f.Bound(ownedPod("repl", "n2", "rs", start))
	if !l.Matched || l.Flap || l.Node != "n2" || l.Predicted != "n2" {
		t.Fatalf("landing %+v, want a non-flap on the predicted node", l)
	}
	// The eviction is settled: a later pod of the owner on n1 matches nothing.
	if l := f.Bound(ownedPod("later", "n1", "rs", start)); l.Matched {
		t.Fatalf("a settled eviction matched again: %+v", l)
	}
	if _, blocked := f.BlockedUntil(victim); blocked {
		t.Fatal("the owner is backing off without a flap")
	}
	// Evictions expire after the window.
	f.Evicting(victim, "n2")
	f.Gone(victim)
	clk.SetTime(start.Add(2 * time.Hour))
	if l := f.Bound(ownedPod("late", "n1", "rs", clk.Now())); l.Matched {
		t.Fatalf("an eviction older than the window matched: %+v", l)
	}
}

// An eviction is pending (its replacement takes room on the predicted node in later cycles' snapshots)
// once the pod is gone and until its replacement is bound, plus a short grace for the simulator's
// cache to see the binding; an eviction that did not happen (the pod is not gone) is not pending.
func TestPendingMoves(t *testing.T) {
	start := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(start)
	f := newFlapMemory(clk, time.Hour, time.Minute, time.Hour)
	victim := ownedPod("victim", "n1", "rs", start.Add(-time.Hour))
	failed := ownedPod("failed", "n1", "rs2", start.Add(-time.Hour))
	f.Evicting(victim, "n2")
	f.Evicting(failed, "n3")
	if p := f.Pending(time.Minute); len(p) != 0 {
		t.Fatalf("pending before the pods are gone: %+v", p)
	}
	f.Gone(victim)
	if p := f.Pending(time.Minute); len(p) != 1 || p[0].Pod.Name != "victim" || p[0].Predicted != "n2" {
		t.Fatalf("pending = %+v, want victim to n2", p)
	}
	clk.SetTime(start.Add(time.Second))
	if l := f.Bound(ownedPod("repl", "n2", "rs", clk.Now())); !l.Matched || l.Flap {
		t.Fatalf("landing = %+v", l)
	}
	if p := f.Pending(time.Minute); len(p) != 1 {
		t.Fatalf("within the grace the landed replacement still counts: %+v", p)
	}
	clk.SetTime(start.Add(time.Second + landedGrace + time.Millisecond))
	if p := f.Pending(time.Minute); len(p) != 0 {
		t.Fatalf("pending after the grace: %+v", p)
	}
	// A gone pod whose replacement never lands stops counting after the TTL.
	other := ownedPod("other", "n1", "rs3", start)
	f.Evicting(other, "n2")
	f.Gone(other)
	clk.SetTime(clk.Now().Add(2 * time.Minute))
	if p := f.Pending(time.Minute); len(p) != 0 {
		t.Fatalf("pending after the TTL: %+v", p)
	}
}

// Evictions are forgotten exactly when they are a window old, however many were admitted since
// the memory last looked (expire scans only once something can have expired).
func TestEvictionsExpireAtTheirWindow(t *testing.T) {
	start := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(start)
	const window = time.Hour
	f := newFlapMemory(clk, window, 5*time.Minute, time.Hour)
	old := ownedPod("old", "n1", "rs-old", start.Add(-time.Hour))
	f.Evicting(old, "n2")
	f.Gone(old)
	for i := 0; i < 1000; i++ {
		clk.SetTime(start.Add(time.Duration(i) * time.Second))
		p := ownedPod("p", "n1", "rs-many", start)
		p.UID = types.UID(string(rune('a'+i%26)) + time.Duration(i).String())
		f.Evicting(p, "n2")
	}
	if n := len(f.evictions["rs-many"]); n != 1000 {
		t.Fatalf("%d evictions remembered, want 1000", n)
	}
	// Exactly a window after the first eviction it is still remembered: its replacement matches.
	clk.SetTime(start.Add(window))
	if l := f.Bound(ownedPod("repl", "n3", "rs-old", start.Add(window))); !l.Matched {
		t.Fatalf("at the window's end: %+v, want the eviction matched", l)
	}
	f.Evicting(old, "n2")
	f.Gone(old)
	// One nanosecond past the window of the first 1000, the first of them is forgotten, the rest not.
	clk.SetTime(start.Add(window + time.Nanosecond))
	f.expire()
	if n := len(f.evictions["rs-many"]); n != 999 {
		t.Fatalf("%d evictions remembered a window after the first, want 999", n)
	}
	clk.SetTime(start.Add(window + 1000*time.Second))
	f.expire()
	if _, ok := f.evictions["rs-many"]; ok {
		t.Fatalf("%d evictions remembered after all are a window old", len(f.evictions["rs-many"]))
	}
	if n := len(f.evictions["rs-old"]); n != 1 {
		t.Fatalf("the eviction admitted at %s: %d remembered, want 1", start.Add(window), n)
	}
}
