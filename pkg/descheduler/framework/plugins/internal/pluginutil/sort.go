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

// SortByPriorityLowToHigh sorts pods with ComparePriorityLowToHigh, keeping the order of equals. It
// computes each pod's sort key (and QoS class, which can take a walk over its containers) once.
func SortByPriorityLowToHigh(pods []*corev1.Pod) {
	if len(pods) < 2 {
		return
	}
	type keyed struct {
		pod *corev1.Pod
		// rank is 0 without a priority, 1 with one.
		rank, qos int
		prio      int32
	}
	keys := make([]keyed, len(pods))
	for i, p := range pods {
		keys[i] = keyed{pod: p, qos: qosRank(p), prio: Priority(p)}
		if p.Spec.Priority != nil {
			keys[i].rank = 1
		}
	}
	slices.SortStableFunc(keys, func(a, b keyed) int {
		if c := cmp.Compare(a.rank, b.rank); c != 0 {
			return c
		}
		if c := cmp.Compare(a.prio, b.prio); c != 0 {
			return c
		}
		return cmp.Compare(a.qos, b.qos)
	})
	for i := range keys {
		pods[i] = keys[i].pod
	}
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
