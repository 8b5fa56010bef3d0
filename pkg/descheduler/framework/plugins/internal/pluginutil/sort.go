package pluginutil

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/apis/core/v1/helper/qos"
)

// Priority returns the pod's priority, 0 when unset.
func Priority(pod *corev1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

func qosRank(pod *corev1.Pod) int {
	c := pod.Status.QOSClass
	if c == "" {
		c = qos.GetPodQOS(pod)
	}
	switch c {
	case corev1.PodQOSBestEffort:
		return 0
	case corev1.PodQOSBurstable:
		return 1
	default:
		return 2
	}
}

// ComparePriorityLowToHigh orders pods as the upstream descheduler evicts them: pods without a
// priority first, then by ascending priority, and among equal priorities BestEffort before Burstable
// before Guaranteed.
func ComparePriorityLowToHigh(a, b *corev1.Pod) int {
	if (a.Spec.Priority == nil) != (b.Spec.Priority == nil) {
		if a.Spec.Priority == nil {
			return -1
		}
		return 1
	}
	if c := cmp.Compare(Priority(a), Priority(b)); c != 0 {
		return c
	}
	return cmp.Compare(qosRank(a), qosRank(b))
}

// SortByPriorityLowToHigh sorts pods with ComparePriorityLowToHigh, keeping the order of equals.
func SortByPriorityLowToHigh(pods []*corev1.Pod) {
	slices.SortStableFunc(pods, ComparePriorityLowToHigh)
}

// OwnerKind returns the kind of the pod's controller owner, or of its first owner, "" for a bare pod.
func OwnerKind(pod *corev1.Pod) string {
	for _, o := range pod.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			return o.Kind
		}
	}
	if len(pod.OwnerReferences) > 0 {
		return pod.OwnerReferences[0].Kind
	}
	return ""
}
