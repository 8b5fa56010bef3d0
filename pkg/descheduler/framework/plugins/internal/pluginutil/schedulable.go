package pluginutil

import (
	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// PlacementChecker answers, for one pod, whether a node is a possible home by its labels and taints
// alone: schedulable, required node affinity and nodeSelector matched (component-helpers), every
// NoSchedule and NoExecute taint tolerated. Resources are not considered.
type PlacementChecker struct {
	pod      *corev1.Pod
	affinity nodeaffinity.RequiredNodeAffinity
}

// NewPlacementChecker prepares the checks for pod.
func NewPlacementChecker(pod *corev1.Pod) *PlacementChecker {
	return &PlacementChecker{pod: pod, affinity: nodeaffinity.GetRequiredNodeAffinity(pod)}
}

// Allows reports whether the node is a possible home for the pod.
func (c *PlacementChecker) Allows(node *corev1.Node) bool {
	if node.Spec.Unschedulable {
		return false
	}
	if ok, err := c.affinity.Match(node); err != nil || !ok {
		return false
	}
	return TaintsTolerated(node, c.pod)
}

// TaintsTolerated reports whether the pod tolerates every NoSchedule and NoExecute taint of node.
func TaintsTolerated(node *corev1.Node, pod *corev1.Pod) bool {
	if len(node.Spec.Taints) == 0 {
		return true
	}
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, true)
	return !untolerated
}
