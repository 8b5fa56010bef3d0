package cyclestate

import (
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

const key fwk.StateKey = "Test"

// state is a plugin's PreFilter state; Clone copies it, as a state that a plugin's extensions
// modify must.
type state struct{ pod string }

func (s *state) Clone() fwk.StateData { c := *s; return &c }

func read(t *testing.T, l *Last[state, *state], cs fwk.CycleState, init string) *state {
	t.Helper()
	s, st := l.ReadOrInit(cs, key, "Test", func() *state { return &state{pod: init} })
	if st != nil {
		t.Fatalf("ReadOrInit: %v", st)
	}
	return s
}

// Last answers exactly what the CycleState it is given holds: the remembered state only for the
// CycleState Write wrote last, a read for another one (an earlier cycle, a clone), init where the
// plugin's PreFilter did not run.
func TestLastAnswersWhatTheCycleStateHolds(t *testing.T) {
	var l Last[state, *state]
	a, b := framework.NewCycleState(), framework.NewCycleState()
	l.Write(a, key, &state{pod: "a"})
	l.Write(b, key, &state{pod: "b"})
	if got := read(t, &l, a, "init"); got.pod != "a" {
		t.Errorf("cycle a: got pod %q's state", got.pod)
	}
	wrote := read(t, &l, b, "init")
	if wrote.pod != "b" {
		t.Errorf("cycle b: got pod %q's state", wrote.pod)
	}
	clone := b.Clone()
	if got := read(t, &l, clone, "init"); got == wrote || got.pod != "b" {
		t.Errorf("clone of b: got %p (pod %q), want the clone's own copy of %p", got, got.pod, wrote)
	}
	fresh := framework.NewCycleState()
	if got := read(t, &l, fresh, "init"); got.pod != "init" {
		t.Errorf("cycle without PreFilter: got pod %q's state", got.pod)
	}
	// init's state is written to that CycleState, never remembered.
	if got := read(t, &l, b, "init"); got != wrote {
		t.Errorf("cycle b after another cycle's init: got %p, want %p", got, wrote)
	}
}

// other is a CycleState that is not the scheduler's, and not comparable (a map in a struct value).
type other struct {
	fwk.CycleState
	m map[string]int
}

// Last never compares such a CycleState (== would panic) and forgets what it remembered when Write
// is given one: a read answers.
func TestLastWithAnotherCycleState(t *testing.T) {
	var l Last[state, *state]
	l.Write(framework.NewCycleState(), key, &state{pod: "a"})
	o := other{CycleState: framework.NewCycleState(), m: map[string]int{}}
	l.Write(o, key, &state{pod: "o"})
	if got := read(t, &l, o, "init"); got.pod != "o" {
		t.Errorf("got pod %q's state", got.pod)
	}
	if l.last.Load() != nil {
		t.Error("Last still remembers the scheduler's CycleState after a Write to another one")
	}
}
