package evictions

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

// ExplainPreEviction says what the profile's PlacementJudges decided on pod the last time it went
// through PreEvictionFilter: the predicted node and, for a refused pod, the first judge that says
// why (framework.PlacementJudge.RefusalMessage); for an admitted pod, their eviction message.
func (e *ProfileEvictor) ExplainPreEviction(pod *corev1.Pod) framework.PreEvictionExplanation {
	node, msg := e.admitted(pod)
	x := framework.PreEvictionExplanation{PredictedNode: node}
	for _, f := range e.PreEvictionFilters {
		if j, ok := f.(framework.PlacementJudge); ok {
			if m := j.RefusalMessage(pod); m != "" {
				x.BlockedBy, x.Message = f.Name(), m
				return x
			}
		}
	}
	x.Message = msg
	return x
}

func (p *pluginEvictor) ExplainPreEviction(pod *corev1.Pod) framework.PreEvictionExplanation {
	return p.e.ExplainPreEviction(pod)
}
