package evictmarked

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

// Name is the plugin's name.
const Name = "EvictMarked"

// EvictMarked evicts the pods labelled <LabelKey>=true.
//
// +k8s:deepcopy-gen=false
type EvictMarked struct {
	args   *EvictMarkedArgs
	handle framework.Handle
}

var _ framework.DeschedulePlugin = &EvictMarked{}

// New builds the plugin.
func New(ctx context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	args, ok := obj.(*EvictMarkedArgs)
	if !ok {
		return nil, fmt.Errorf("want *EvictMarkedArgs, got %T", obj)
	}
	return &EvictMarked{args: args, handle: h}, nil
}

// Name returns the plugin's name.
func (p *EvictMarked) Name() string { return Name }

// Deschedule evicts the marked pods, node by node, until a limit stops it.
func (p *EvictMarked) Deschedule(ctx context.Context, nodes []*corev1.Node) *framework.Status {
	ev := p.handle.Evictor()
	for _, node := range nodes {
		pods, err := p.handle.GetPodsAssignedToNode(node.Name, func(pod *corev1.Pod) bool {
			return pod.Labels[p.args.LabelKey] == "true" &&
				(len(p.args.Namespaces) == 0 || slices.Contains(p.args.Namespaces, pod.Namespace)) && ev.Filter(pod)
		})
		if err != nil {
			return framework.NewStatus(err)
		}
	pods:
		for _, pod := range pods {
			// framework.Evict checks the cycle's limits, runs the preEvictionFilters, evicts, and
			// says how to go on (a pod it could not evict is logged; the next one is tried).
			switch framework.Evict(ctx, ev, pod, Name, "marked with "+p.args.LabelKey+"=true") {
			case framework.StopEvicting:
				return nil
			case framework.NodeFull:
				break pods
			}
		}
	}
	return nil
}
