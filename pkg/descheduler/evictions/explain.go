package evictions

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

// ExplainPreEviction says what the profile's PlacementJudges decided on pod the last time it went
// through PreEvictionFilter: for a refused pod, the first judge that says why
// (framework.PlacementJudge.RefusalMessage); for an admitted pod, the predicted node and their
// eviction message, as its eviction will record them.
func (e *ProfileEvictor) ExplainPreEviction(pod *corev1.Pod) framework.PreEvictionExplanation {
	for _, f := range e.PreEvictionFilters {
		if j, ok := f.(framework.PlacementJudge); ok {
			if m := j.RefusalMessage(pod); m != "" {
				return framework.PreEvictionExplanation{BlockedBy: f.Name(), Message: m}
			}
		}
	}
	predictions := e.admissions.of(pod)
	return framework.PreEvictionExplanation{PredictedNode: predictedNode(predictions), Message: predictionNote(predictions)}
}

func (p *pluginEvictor) ExplainPreEviction(pod *corev1.Pod) framework.PreEvictionExplanation {
	return p.e.ExplainPreEviction(pod)
}
