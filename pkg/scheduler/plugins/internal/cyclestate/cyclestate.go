// Package cyclestate holds what Accord's scheduler plugins share about their CycleState.
package cyclestate

import (
	"errors"
	"fmt"
	"sync/atomic"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// ReadOrInit returns the state plugin's PreFilter wrote under key, which must be a *T (another
// type is an error Status naming the plugin). A plugin's PreFilter may not run: kube-scheduler calls a plugin's
// PreFilter only when the profile enables it at preFilter (multiPoint does), and accepts a profile
// that enables it at filter and score alone, as the scheduler-plugins walkthrough prints. When the
// state is missing, ReadOrInit computes it with init — the function PreFilter writes it with, so
// verdicts and scores are identical — and stores it for the rest of the cycle. Concurrent Filter
// calls may each compute it once; the values are equal.
func ReadOrInit[T any, PT interface {
	*T
	fwk.StateData
}](state fwk.CycleState, key fwk.StateKey, plugin string, init func() PT) (PT, *fwk.Status) {
	d, err := state.Read(key)
	if errors.Is(err, fwk.ErrNotFound) {
		s := init()
		state.Write(key, s)
		return s, nil
	}
	if err != nil {
		return nil, fwk.AsStatus(fmt.Errorf("%s: reading PreFilter state: %w", plugin, err))
	}
	s, ok := d.(PT)
	if !ok {
		return nil, fwk.AsStatus(fmt.Errorf("%s: PreFilter state has type %T", plugin, d))
	}
	return s, nil
}

// Last is one plugin instance's memory of the state its PreFilter wrote last and of the CycleState
// it wrote it to. Filter and Score run once per node visited, and a CycleState's Read (a sync.Map
// holding every plugin's state) was 1.6% of accord-scheduler's CPU samples on the uniform population
// of test/scale (0.07% with Last); Last.ReadOrInit answers from the memory when it is given that same
// CycleState, and reads the CycleState otherwise.
//
// It answers what a Read would: the memory holds exactly what Write stored under the plugin's key in
// that CycleState, which only the plugin writes (PreFilter, once per cycle, before any Filter of the
// cycle; ReadOrInit's init, only where PreFilter did not run, and never remembered). A clone (the
// preemption's dry runs) or another pod's cycle is another CycleState, so it is read; the memory
// keeps the last CycleState alive, so its address cannot be reused by a later one. Only the
// scheduler's own *framework.CycleState is remembered: another implementation may not be comparable.
type Last[T any, PT interface {
	*T
	fwk.StateData
}] struct {
	last atomic.Pointer[written[T]]
}

type written[T any] struct {
	state *framework.CycleState
	data  *T
}

// Write writes s under key in state, as a PreFilter does, and remembers both.
func (l *Last[T, PT]) Write(state fwk.CycleState, key fwk.StateKey, s PT) {
	state.Write(key, s)
	if cs, ok := state.(*framework.CycleState); ok {
		l.last.Store(&written[T]{state: cs, data: (*T)(s)})
	} else {
		l.last.Store(nil)
	}
}

// ReadOrInit is the package's ReadOrInit, answered from the memory when state is the CycleState
// Write wrote to last.
func (l *Last[T, PT]) ReadOrInit(state fwk.CycleState, key fwk.StateKey, plugin string, init func() PT) (PT, *fwk.Status) {
	if w := l.last.Load(); w != nil {
		if cs, ok := state.(*framework.CycleState); ok && cs == w.state {
			return PT(w.data), nil
		}
	}
	return ReadOrInit(state, key, plugin, init)
}
