package evictions

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

// admitted asks the preEvictionFilter plugins that are framework.PlacementJudges about pod: the
// first non-empty predicted node for its replacement, and what they add to its Event, joined.
func (e *ProfileEvictor) admitted(pod *corev1.Pod) (predictedNode, message string) {
	var parts []string
	for _, f := range e.PreEvictionFilters {
		j, ok := f.(framework.PlacementJudge)
		if !ok {
			continue
		}
		node, msg := j.Admitted(pod)
		if predictedNode == "" {
			predictedNode = node
		}
		if msg != "" {
			parts = append(parts, msg)
		}
	}
	return predictedNode, strings.Join(parts, "; ")
}
