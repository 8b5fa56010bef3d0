package framework

import (
	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
)

// AccordClientSource is implemented by a Handle that can write Accord's CRs.
type AccordClientSource interface {
	AccordClient() accordclient.Interface
}

// AccordClientOf returns the Accord client of h, or nil when it has none.
func AccordClientOf(h Handle) accordclient.Interface {
	if s, ok := h.(AccordClientSource); ok {
		return s.AccordClient()
	}
	return nil
}
