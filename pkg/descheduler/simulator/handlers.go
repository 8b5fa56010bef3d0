package simulator

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// handlers feed the simulator's scheduler cache from informer events the way kube-scheduler's event
// handlers feed its own: nodes, and pods bound to a node. kube-scheduler's pod informer leaves out
// terminal pods (a field selector on status.phase); the descheduler's does not, so a pod that turns
// Succeeded or Failed is removed here.
type handlers struct {
	s      *Simulator
	logger klog.Logger
}

func inCache(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

func (h *handlers) addNode(obj any) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	h.s.cache.AddNode(h.logger, node)
	h.s.events.Add(1)
}

func (h *handlers) updateNode(oldObj, newObj any) {
	oldNode, ok1 := oldObj.(*corev1.Node)
	newNode, ok2 := newObj.(*corev1.Node)
	if !ok1 || !ok2 {
		return
	}
	h.s.cache.UpdateNode(h.logger, oldNode, newNode)
	h.s.events.Add(1)
}

func (h *handlers) deleteNode(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	if err := h.s.cache.RemoveNode(h.logger, node); err != nil {
		h.logger.V(4).Info("Removing a node from the scheduler cache", "node", klog.KObj(node), "err", err)
	}
	h.s.events.Add(1)
}

func (h *handlers) addPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || !inCache(pod) {
		return
	}
	if err := h.s.cache.AddPod(h.logger, pod); err != nil {
		h.logger.V(4).Info("Adding a pod to the scheduler cache", "pod", klog.KObj(pod), "err", err)
	}
	h.s.events.Add(1)
}

func (h *handlers) updatePod(oldObj, newObj any) {
	oldPod, ok1 := oldObj.(*corev1.Pod)
	newPod, ok2 := newObj.(*corev1.Pod)
	if !ok1 || !ok2 {
		return
	}
	var err error
	switch was, is := inCache(oldPod), inCache(newPod); {
	case was && is:
		err = h.s.cache.UpdatePod(h.logger, oldPod, newPod)
	case was:
		err = h.s.cache.RemovePod(h.logger, oldPod)
	case is:
		err = h.s.cache.AddPod(h.logger, newPod)
	default:
		return
	}
	if err != nil {
		h.logger.V(4).Info("Updating a pod in the scheduler cache", "pod", klog.KObj(newPod), "err", err)
	}
	h.s.events.Add(1)
}

func (h *handlers) deletePod(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return
	}
	// A terminal pod was removed when it turned terminal; RemovePod then reports it missing.
	if err := h.s.cache.RemovePod(h.logger, pod); err != nil {
		h.logger.V(5).Info("Removing a pod from the scheduler cache", "pod", klog.KObj(pod), "err", err)
	}
	h.s.events.Add(1)
}
