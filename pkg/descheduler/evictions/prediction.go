package evictions

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

// predictedNode is the node the first preEvictionFilter plugin that predicts placements
// (framework.NodePredictor) predicted for pod's replacement, or "".
func (e *ProfileEvictor) predictedNode(pod *corev1.Pod) string {
	for _, f := range e.PreEvictionFilters {
		if p, ok := f.(framework.NodePredictor); ok {
			if node := p.PredictedNode(pod); node != "" {
				return node
			}
		}
	}
	return ""
}
