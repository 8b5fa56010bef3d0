package framework

import corev1 "k8s.io/api/core/v1"

// RefusalMessager is implemented by a preEvictionFilter plugin that can say why it refused a pod
// in the current cycle (SchedulerSimulation: the scheduler's "0/N nodes are available: ..."
// message for a replacement that fits nowhere). An empty string says nothing.
type RefusalMessager interface {
	RefusalMessage(pod *corev1.Pod) string
}

// PreEvictionExplainer is implemented by the runtime's Evictors: for a pod that went through
// PreEvictionFilter, the node predicted for its replacement ("" when none) and, when it was
// refused, the refusing plugin and its reason.
type PreEvictionExplainer interface {
	ExplainPreEviction(pod *corev1.Pod) PreEvictionExplanation
}

// PreEvictionExplanation is what PreEvictionExplainer says about a pod.
type PreEvictionExplanation struct {
	// PredictedNode is where a NodePredictor predicted the replacement ("" when none).
	PredictedNode string
	// BlockedBy is the preEvictionFilter plugin that refused the pod ("" when none did) and Message
	// its reason (RefusalMessager), or the admitting plugins' eviction message (EvictionMessager).
	BlockedBy string
	Message   string
}

// ExplainPreEviction asks ev, when it is a PreEvictionExplainer; the zero explanation otherwise.
func ExplainPreEviction(ev Evictor, pod *corev1.Pod) PreEvictionExplanation {
	if x, ok := ev.(PreEvictionExplainer); ok {
		return x.ExplainPreEviction(pod)
	}
	return PreEvictionExplanation{}
}
