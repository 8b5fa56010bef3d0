package highnodeutilization

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// Name is the plugin's name.
const Name = "HighNodeUtilization"

// Plugin is the HighNodeUtilization plugin.
//
// +k8s:deepcopy-gen=false
type Plugin struct {
	h         framework.Handle
	args      *HighNodeUtilizationArgs
	ns        *pluginutil.PodSelector
	resources []corev1.ResourceName
}

var _ framework.BalancePlugin = &Plugin{}

// New builds the plugin from its (defaulted, validated) args.
func New(ctx context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	args, ok := obj.(*HighNodeUtilizationArgs)
	if !ok {
		return nil, fmt.Errorf("%s: want args of type HighNodeUtilizationArgs, got %T", Name, obj)
	}
	ns, err := pluginutil.NewPodSelector(args.EvictableNamespaces, nil)
	if err != nil {
		return nil, err
	}
	return &Plugin{h: h, args: args, ns: ns, resources: pluginutil.SortedResourceNames(args.Thresholds)}, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// Balance empties underutilized nodes, least utilized first, while the other schedulable nodes have
// room (up to their allocatable) for the evicted pods' requests.
func (p *Plugin) Balance(ctx context.Context, nodes []*corev1.Node) *framework.Status {
	logger := klog.FromContext(ctx)
	usages, err := pluginutil.NodeUsages(p.h, nodes, p.resources)
	if err != nil {
		return framework.NewStatus(err)
	}
	var under, others []*pluginutil.NodeUsage
	for _, u := range usages {
		isUnder := true
		for _, r := range p.resources {
			if v, ok := u.Percent[r]; ok && v >= float64(p.args.Thresholds[r]) {
				isUnder = false
			}
		}
		switch {
		case isUnder:
			under = append(under, u)
		case !u.Node.Spec.Unschedulable:
			others = append(others, u)
		}
	}
	logger.V(3).Info("Node utilization classified", "underutilized", len(under), "destinations", len(others), "nodes", len(usages))
	if len(under) == 0 || len(under) <= p.args.NumberOfNodes || len(others) == 0 {
		return nil
	}
	full := make(map[corev1.ResourceName]float64, len(p.resources))
	for _, r := range p.resources {
		full[r] = 100
	}
	pluginutil.SortByUsage(under, false)
	m := &pluginutil.Mover{Handle: p.h, Plugin: Name, Resources: p.resources, Select: p.ns.Matches,
		Reason: func(u *pluginutil.NodeUsage) string { return fmt.Sprintf("node %s is underutilized", u.Node.Name) }}
	if slices.Contains(p.args.EvictionModes, EvictionModeOnlyThresholdingResources) {
		// The thresholding resources are those thresholds lists below 100 percent (the defaults
		// fill the unlisted cpu, memory and pods in at 100, where they never decide).
		var thresholding []corev1.ResourceName
		for _, r := range p.resources {
			if p.args.Thresholds[r] < 100 {
				thresholding = append(thresholding, r)
			}
		}
		m.Select = func(pod *corev1.Pod) bool { return p.ns.Matches(pod) && requestsAny(pod, thresholding) }
	}
	m.Move(ctx, under, pluginutil.Capacity(others, p.resources, full), func(*pluginutil.NodeUsage) bool { return true })
	return nil
}

// requestsAny reports whether a container or init container of the pod requests one of names.
func requestsAny(pod *corev1.Pod, names []corev1.ResourceName) bool {
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			for _, n := range names {
				if _, ok := cs[i].Resources.Requests[n]; ok {
					return true
				}
			}
		}
	}
	return false
}
