// Package cyclestate holds what Accord's scheduler plugins share about their CycleState.
package cyclestate

import (
	"errors"
	"fmt"

	fwk "k8s.io/kube-scheduler/framework"
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
