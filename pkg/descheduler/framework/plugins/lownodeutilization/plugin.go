package lownodeutilization

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// Name is the plugin's name.
const Name = "LowNodeUtilization"

// Plugin is the LowNodeUtilization plugin.
//
// +k8s:deepcopy-gen=false
type Plugin struct {
	h         framework.Handle
	args      *LowNodeUtilizationArgs
	ns        *pluginutil.PodSelector
	resources []corev1.ResourceName
	// metrics is the measured-usage source of metricsUtilization; nil judges requests.
	metrics *metricsSource

	mu sync.Mutex
	// measured is the latest Balance's measured usage by node (metricsUtilization), for NodeVerdict.
	measured map[string]*pluginutil.NodeUsage
	// podUsage caches the pod usage read during the latest Balance.
	podUsage map[types.UID]map[corev1.ResourceName]int64
}

var _ framework.BalancePlugin = &Plugin{}

// New builds the plugin from its (defaulted, validated) args.
func New(ctx context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	args, ok := obj.(*LowNodeUtilizationArgs)
	if !ok {
		return nil, fmt.Errorf("%s: want args of type LowNodeUtilizationArgs, got %T", Name, obj)
	}
	ns, err := pluginutil.NewPodSelector(args.EvictableNamespaces, nil)
	if err != nil {
		return nil, err
	}
	ms, err := newMetricsSource(args, h)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return &Plugin{h: h, args: args, ns: ns, resources: pluginutil.SortedResourceNames(args.Thresholds), metrics: ms}, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// Balance evicts pods from overutilized nodes while underutilized nodes have room for them.
func (p *Plugin) Balance(ctx context.Context, nodes []*corev1.Node) *framework.Status {
	logger := klog.FromContext(ctx)
	var usages []*pluginutil.NodeUsage
	var err error
	if p.metrics != nil {
		// A source that is down, or silent about a node, skips the cycle: missing usage is never
		// taken for zero.
		if usages, err = p.metrics.nodeUsages(ctx, p.h, nodes, p.resources); err != nil {
			return framework.Errorf("skipping this cycle, no %s utilization: %w", p.metrics.name(), err)
		}
		p.remember(usages)
	} else if usages, err = pluginutil.NodeUsages(p.h, nodes, p.resources); err != nil {
		return framework.NewStatus(err)
	}
	low := make(map[corev1.ResourceName]float64, len(p.resources))
	high := make(map[corev1.ResourceName]float64, len(p.resources))
	mean := map[corev1.ResourceName]float64{}
	if p.args.UseDeviationThresholds {
		mean = pluginutil.MeanPercent(usages, p.resources)
	}
	for _, r := range p.resources {
		if p.args.UseDeviationThresholds {
			low[r] = max(mean[r]-float64(p.args.Thresholds[r]), 0)
			high[r] = min(mean[r]+float64(p.args.TargetThresholds[r]), 100)
		} else {
			low[r], high[r] = float64(p.args.Thresholds[r]), float64(p.args.TargetThresholds[r])
		}
	}
	over := func(u *pluginutil.NodeUsage) bool {
		for _, r := range p.resources {
			if v, ok := u.Percent[r]; ok && v > high[r] {
				return true
			}
		}
		return false
	}
	var under, overNodes []*pluginutil.NodeUsage
	for _, u := range usages {
		isUnder := !u.Node.Spec.Unschedulable
		for _, r := range p.resources {
			if v, ok := u.Percent[r]; ok && v >= low[r] {
				isUnder = false
			}
		}
		switch {
		case isUnder:
			under = append(under, u)
		case over(u):
			overNodes = append(overNodes, u)
		}
	}
	logger.V(3).Info("Node utilization classified", "underutilized", len(under), "overutilized", len(overNodes), "nodes", len(usages))
	if len(under) == 0 || len(under) <= p.args.NumberOfNodes || len(under) == len(usages) || len(overNodes) == 0 {
		return nil
	}
	pluginutil.SortByUsage(overNodes, true)
	m := &pluginutil.Mover{Handle: p.h, Plugin: Name, Resources: p.resources, Select: p.ns.Matches,
		Reason: func(u *pluginutil.NodeUsage) string {
			return fmt.Sprintf("node %s is over its target utilization", u.Node.Name)
		}}
	switch {
	case p.metrics == nil:
	case p.metrics.prom != nil:
		// The query measures nodes, not pods: one pod per overutilized node per cycle (upstream).
		m.Unmeasured, m.MaxPerSource = true, 1
		m.Reason = func(u *pluginutil.NodeUsage) string {
			return fmt.Sprintf("node %s is over its target utilization (Prometheus: %.0f%%)", u.Node.Name, u.Percent[MetricResource])
		}
	default:
		m.PodUsage = p.cachedPodUsage
		m.Reason = func(u *pluginutil.NodeUsage) string {
			return fmt.Sprintf("node %s is over its target utilization (metrics.k8s.io)", u.Node.Name)
		}
	}
	if l := p.args.EvictionLimits; l != nil && l.Node != nil {
		if *l.Node == 0 {
			logger.V(3).Info("evictionLimits.node is 0: no pod may be evicted")
			return nil
		}
		if m.MaxPerSource == 0 || int(*l.Node) < m.MaxPerSource {
			m.MaxPerSource = int(*l.Node)
		}
	}
	m.Move(ctx, overNodes, pluginutil.Capacity(under, p.resources, high), over)
	return nil
}

// remember keeps the measured usage of this Balance for NodeVerdict and starts a new pod-usage
// cache.
func (p *Plugin) remember(usages []*pluginutil.NodeUsage) {
	m := make(map[string]*pluginutil.NodeUsage, len(usages))
	for _, u := range usages {
		m[u.Node.Name] = u
	}
	p.mu.Lock()
	p.measured, p.podUsage = m, map[types.UID]map[corev1.ResourceName]int64{}
	p.mu.Unlock()
}

// cachedPodUsage reads a pod's usage from metrics.k8s.io once per cycle.
func (p *Plugin) cachedPodUsage(ctx context.Context, pod *corev1.Pod) (map[corev1.ResourceName]int64, error) {
	p.mu.Lock()
	u, ok := p.podUsage[pod.UID]
	p.mu.Unlock()
	if ok {
		return u, nil
	}
	u, err := p.metrics.podUsage(ctx, pod)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if p.podUsage != nil {
		p.podUsage[pod.UID] = u
	}
	p.mu.Unlock()
	return u, nil
}
