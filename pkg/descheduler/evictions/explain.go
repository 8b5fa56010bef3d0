package evictions

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

var (
	_ framework.PreEvictionExplainer = &ProfileEvictor{}
	_ framework.PreEvictionExplainer = &pluginEvictor{}
)

// ExplainPreEviction says what the profile's preEvictionFilter plugins decided on pod the last
// time it went through PreEvictionFilter: the predicted node (framework.NodePredictor) and, for a
// refused pod, the first plugin that says why (framework.RefusalMessager).
func (e *ProfileEvictor) ExplainPreEviction(pod *corev1.Pod) framework.PreEvictionExplanation {
	x := framework.PreEvictionExplanation{PredictedNode: e.predictedNode(pod)}
	for _, f := range e.PreEvictionFilters {
		if m, ok := f.(framework.RefusalMessager); ok {
			if msg := m.RefusalMessage(pod); msg != "" {
				x.BlockedBy, x.Message = f.Name(), msg
				return x
			}
		}
	}
	x.Message = e.evictionMessage(pod)
	return x
}

func (p *pluginEvictor) ExplainPreEviction(pod *corev1.Pod) framework.PreEvictionExplanation {
	return p.e.ExplainPreEviction(pod)
}
