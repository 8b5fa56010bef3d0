package pluginutil

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/accord-sched/accord/pkg/constraints"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/defaultevictor"
	accordlisters "github.com/accord-sched/accord/pkg/generated/listers/scheduling/v1alpha1"
)

// Fitter answers "would this pod fit another node" with the DefaultEvictor's nodeFit rules (Ready,
// taints, required node affinity, resources, ClusterScopedResource), so every plugin that needs the
// check applies the same one the evictor does.
//
// +k8s:deepcopy-gen=false
type Fitter struct {
	h    framework.Handle
	csrs accordlisters.ClusterScopedResourceLister
}

// NewFitter returns a Fitter reading ClusterScopedResources from the handle's informer factory. Call
// it from a plugin factory, so that the informer is started with the others.
func NewFitter(h framework.Handle) *Fitter {
	return &Fitter{h: h, csrs: h.AccordInformerFactory().Scheduling().V1alpha1().ClusterScopedResources().Lister()}
}

// FitsOn reports whether pod fits node.
func (f *Fitter) FitsOn(pod *corev1.Pod, node *corev1.Node, requested []corev1.ResourceName) bool {
	ok, _ := defaultevictor.NodeFits(pod, node, requested, f.h, f.csrs)
	return ok
}

// FitsAnyOther reports whether pod fits one of nodes other than the one it runs on, and which.
// keep, when not nil, must also accept the node.
func (f *Fitter) FitsAnyOther(pod *corev1.Pod, nodes []*corev1.Node, keep func(*corev1.Node) bool) (*corev1.Node, bool) {
	requested := constraints.AppendRequestedResources(make([]corev1.ResourceName, 0, 8), pod)
	for _, n := range nodes {
		if n.Name == pod.Spec.NodeName || (keep != nil && !keep(n)) {
			continue
		}
		if f.FitsOn(pod, n, requested) {
			return n, true
		}
	}
	return nil, false
}
