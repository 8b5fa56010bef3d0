package pluginutil

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// ContainerStatuses returns the pod's container statuses, with its init and ephemeral containers'
// when asked.
func ContainerStatuses(pod *corev1.Pod, init, ephemeral bool) []corev1.ContainerStatus {
	if !init && !ephemeral {
		return pod.Status.ContainerStatuses
	}
	out := slices.Clone(pod.Status.ContainerStatuses)
	if init {
		out = append(out, pod.Status.InitContainerStatuses...)
	}
	if ephemeral {
		out = append(out, pod.Status.EphemeralContainerStatuses...)
	}
	return out
}

// InStates reports whether the pod is in one of states: its phase, its status reason, or a waiting
// reason of one of the given container statuses. An empty states matches every pod.
func InStates(pod *corev1.Pod, states []string, statuses []corev1.ContainerStatus) bool {
	if len(states) == 0 {
		return true
	}
	if slices.Contains(states, string(pod.Status.Phase)) || (pod.Status.Reason != "" && slices.Contains(states, pod.Status.Reason)) {
		return true
	}
	for i := range statuses {
		if w := statuses[i].State.Waiting; w != nil && slices.Contains(states, w.Reason) {
			return true
		}
	}
	return false
}
