// Package cyclestate holds what Accord's scheduler plugins share about their CycleState.
package cyclestate

import (
	"fmt"

	fwk "k8s.io/kube-scheduler/framework"
)

// Read returns the state plugin's PreFilter wrote under key, which must be a *T. A missing state or
// one of another type is an error Status naming the plugin.
func Read[T any, PT interface {
	*T
	fwk.StateData
}](state fwk.CycleState, key fwk.StateKey, plugin string) (PT, *fwk.Status) {
	d, err := state.Read(key)
	if err != nil {
		return nil, fwk.AsStatus(fmt.Errorf("%s: reading PreFilter state: %w", plugin, err))
	}
	s, ok := d.(PT)
	if !ok {
		return nil, fwk.AsStatus(fmt.Errorf("%s: PreFilter state has type %T", plugin, d))
	}
	return s, nil
}
