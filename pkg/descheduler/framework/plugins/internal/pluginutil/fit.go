package pluginutil

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/nodefit"
)

// Fitter answers "would this pod fit another node" with the DefaultEvictor's nodeFit rules (Ready,
// taints, required node affinity, resources, ClusterScopedResource), so every plugin that needs the
// check applies the same one the evictor does. It keeps each node's requested totals while the
// node's pods are unchanged (see nodefit.Fitter), so checking many pods is cheap.
//
// +k8s:deepcopy-gen=false
type Fitter struct {
	f *nodefit.Fitter
}

// NewFitter returns a Fitter reading ClusterScopedResources from the handle's informer factory,
// treating a node without one as the profile's missingCRPolicy says (Handle.MissingCRPolicy:
// its DefaultEvictor's or NodeCRDResourceFit's arg, Reject by default); on a
// cluster that does not serve the ClusterScopedResource CRD it checks no CR and watches none (see
// nodefit.ForHandle). Call it from a plugin factory, so that the informer is started
// with the others.
func NewFitter(ctx context.Context, h framework.Handle) *Fitter {
	return &Fitter{f: nodefit.ForHandle(ctx, h, h.MissingCRPolicy())}
}

// FitsOn reports whether pod fits node.
func (f *Fitter) FitsOn(pod *corev1.Pod, node *corev1.Node, requested []corev1.ResourceName) bool {
	ok, _ := f.f.Fits(pod, node, requested)
	return ok
}

// FitsAnyOther reports whether pod fits one of nodes other than the one it runs on, and which.
// keep, when not nil, must also accept the node.
func (f *Fitter) FitsAnyOther(pod *corev1.Pod, nodes []*corev1.Node, keep func(*corev1.Node) bool) (*corev1.Node, bool) {
	return f.f.FitsAnyOther(pod, nodes, keep)
}
