package podlifetime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

// Name is the plugin's name.
const Name = "PodLifeTime"

// PodLifeTime evicts pods older than MaxPodLifeTimeSeconds.
//
// +k8s:deepcopy-gen=false
type PodLifeTime struct {
	args   *PodLifeTimeArgs
	handle framework.Handle
}

var _ framework.DeschedulePlugin = &PodLifeTime{}

// New builds the plugin.
func New(obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	args, ok := obj.(*PodLifeTimeArgs)
	if !ok {
		return nil, fmt.Errorf("want *PodLifeTimeArgs, got %T", obj)
	}
	return &PodLifeTime{args: args, handle: h}, nil
}

// Name returns the plugin's name.
func (p *PodLifeTime) Name() string { return Name }

// Deschedule evicts, node by node and oldest first, the pods past their lifetime.
func (p *PodLifeTime) Deschedule(ctx context.Context, nodes []*corev1.Node) *framework.Status {
	maxAge := time.Duration(*p.args.MaxPodLifeTimeSeconds) * time.Second
	ev := p.handle.Evictor()
	for _, node := range nodes {
		pods, err := p.handle.GetPodsAssignedToNode(node.Name, func(pod *corev1.Pod) bool {
			return (len(p.args.Namespaces) == 0 || slices.Contains(p.args.Namespaces, pod.Namespace)) &&
				time.Since(pod.CreationTimestamp.Time) > maxAge && ev.Filter(pod)
		})
		if err != nil {
			return framework.NewStatus(err)
		}
		sort.Slice(pods, func(i, j int) bool { return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp) })
	pods:
		for _, pod := range pods {
			if !ev.PreEvictionFilter(pod) {
				continue
			}
			err := ev.Evict(ctx, pod, framework.EvictOptions{PluginName: Name, Reason: fmt.Sprintf("older than %s", maxAge)})
			switch {
			case framework.IsTotalLimit(err):
				return nil
			case framework.IsNodeLimit(err):
				break pods
			case err != nil && !errors.Is(err, framework.ErrDryRun):
				klog.FromContext(ctx).V(2).Info("Pod not evicted", "pod", klog.KObj(pod), "err", err)
			}
		}
	}
	return nil
}
