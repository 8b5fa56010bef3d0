package lownodeload

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	"github.com/accord-sched/accord/pkg/constraints"
	"github.com/accord-sched/accord/pkg/crdcheck"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
	slolisters "github.com/accord-sched/accord/pkg/generated/listers/slo/v1alpha1"
)

// Name is the plugin's name.
const Name = "LowNodeLoad"

// Plugin is the LowNodeLoad plugin.
//
// +k8s:deepcopy-gen=false
type Plugin struct {
	h         framework.Handle
	args      *LowNodeLoadArgs
	metrics   slolisters.NodeMetricLister
	ns        *pluginutil.PodSelector
	selectors []labels.Selector
	high, low []constraints.ResourceThreshold
	weights   []constraints.ResourceWeight
	maxAge    time.Duration
	clock     clock.PassiveClock
	// est is the usage estimate LoadAware makes (nil: off).
	est *constraints.UsageEstimator

	// usage are the node usage gauges (nil until RegisterMetrics); usageResources the threshold
	// resources they are written for.
	usage          *usageMetrics
	usageResources []corev1.ResourceName

	mu sync.Mutex
	// hotCycles counts, per node, the consecutive cycles it has been hot.
	hotCycles map[string]int32
	// usageNodes are the nodes whose usage gauges the last cycle wrote.
	usageNodes map[string]bool
}

var _ framework.BalancePlugin = &Plugin{}

// New builds the plugin from its (defaulted, validated) args.
func New(ctx context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	args, ok := obj.(*LowNodeLoadArgs)
	if !ok {
		return nil, fmt.Errorf("%s: want args of type LowNodeLoadArgs, got %T", Name, obj)
	}
	ns, err := pluginutil.NewPodSelector(args.EvictableNamespaces, nil)
	if err != nil {
		return nil, err
	}
	if err := framework.RequireCRD(h, crdcheck.NodeMetrics(), Name); err != nil {
		return nil, err
	}
	p := &Plugin{
		h: h, args: args, ns: ns,
		metrics:   h.AccordInformerFactory().Slo().V1alpha1().NodeMetrics().Lister(),
		high:      thresholds(args.HighThresholds),
		low:       thresholds(args.LowThresholds),
		clock:     clock.RealClock{},
		hotCycles: map[string]int32{},

		usageResources: usageResourceNames(args),
	}
	if args.NodeMetricExpirationSeconds != nil {
		p.maxAge = time.Duration(*args.NodeMetricExpirationSeconds) * time.Second
	}
	for _, name := range pluginutil.SortedResourceNames(args.ResourceWeights) {
		p.weights = append(p.weights, constraints.ResourceWeight{Name: name, Weight: args.ResourceWeights[name]})
	}
	var factors []constraints.ResourceFactor
	for _, name := range pluginutil.SortedResourceNames(args.EstimatedScalingFactors) {
		factors = append(factors, constraints.ResourceFactor{Name: name, Percent: args.EstimatedScalingFactors[name]})
	}
	var after int64
	if args.EstimatedSecondsAfterPodScheduled != nil {
		after = *args.EstimatedSecondsAfterPodScheduled
	}
	p.est = constraints.NewUsageEstimator(factors, time.Duration(after)*time.Second).OnAnnotationClamped(
		func(pod *corev1.Pod, name corev1.ResourceName, annotated, clamp float64) {
			klog.InfoS("Estimated usage annotation above the node's allocatable; counted as the allocatable (logged once per pod and resource)",
				"plugin", Name, "pod", klog.KObj(pod), "annotation", constraints.EstimatedUsageAnnotation, "resource", name, "annotated", annotated, "allocatable", clamp)
		})
	for _, s := range args.PodSelectors {
		sel, err := metav1.LabelSelectorAsSelector(s.Selector)
		if err != nil {
			return nil, fmt.Errorf("%s: podSelectors %q: %w", Name, s.Name, err)
		}
		p.selectors = append(p.selectors, sel)
	}
	return p, nil
}

// thresholds turns a threshold map into the sorted list pkg/constraints takes, sorted by name as the
// scheduler's LoadAware plugin sorts it.
func thresholds(m map[corev1.ResourceName]int64) []constraints.ResourceThreshold {
	out := make([]constraints.ResourceThreshold, 0, len(m))
	for _, name := range pluginutil.SortedResourceNames(m) {
		out = append(out, constraints.ResourceThreshold{Name: name, Percent: m[name]})
	}
	return out
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// nodeState is one node with a fresh metric, and its usage as evictions are planned.
type nodeState struct {
	node *corev1.Node
	// metric is the node's NodeMetric with its NodeUsage replaced by the estimated usage
	// (constraints.UsageEstimator, as LoadAware's Filter counts it).
	metric *slov1alpha1.NodeMetric
	// load is the node's compiled NodeMetric and adj the estimate's change to its usage.
	load *constraints.Load
	adj  constraints.Adjustment
	// projected is a private copy of the metric whose NodeUsage follows the planned moves.
	projected *slov1alpha1.NodeMetric
	score     float64
}

func (p *Plugin) percent(n *corev1.Node, m *slov1alpha1.NodeMetric, name corev1.ResourceName) (float64, bool) {
	alloc, ok := n.Status.Allocatable[name]
	if !ok || alloc.AsApproximateFloat64() <= 0 {
		return 0, false
	}
	used := m.Status.NodeUsage[name]
	return used.AsApproximateFloat64() * 100 / alloc.AsApproximateFloat64(), true
}

// weightedUsage is the weighted mean usage in percent, used to order nodes.
func (p *Plugin) weightedUsage(n *corev1.Node, m *slov1alpha1.NodeMetric) float64 {
	var sum, total float64
	for _, w := range p.weights {
		if w.Weight <= 0 {
			continue
		}
		if pct, ok := p.percent(n, m, w.Name); ok {
			sum += float64(w.Weight) * pct
			total += float64(w.Weight)
		}
	}
	if total == 0 {
		return 0
	}
	return sum / total
}

// effectiveThresholds returns the high and low thresholds of this cycle: the args, or with
// useDeviationThresholds the mean usage plus/minus the args.
func (p *Plugin) effectiveThresholds(fresh []*nodeState) (high, low []constraints.ResourceThreshold) {
	if !p.args.UseDeviationThresholds {
		return p.high, p.low
	}
	mean := func(name corev1.ResourceName) float64 {
		var sum float64
		var n int
		for _, s := range fresh {
			if pct, ok := p.percent(s.node, s.metric, name); ok {
				sum += pct
				n++
			}
		}
		if n == 0 {
			return 0
		}
		return sum / float64(n)
	}
	for _, t := range p.high {
		high = append(high, constraints.ResourceThreshold{Name: t.Name, Percent: min(int64(mean(t.Name))+t.Percent, 100)})
	}
	for _, t := range p.low {
		low = append(low, constraints.ResourceThreshold{Name: t.Name, Percent: max(int64(mean(t.Name))-t.Percent, 0)})
	}
	return high, low
}

// cool reports whether every low threshold's resource is at or under its threshold.
func (p *Plugin) cool(s *nodeState, low []constraints.ResourceThreshold) bool {
	for _, t := range low {
		pct, ok := p.percent(s.node, s.metric, t.Name)
		if ok && pct > float64(t.Percent) {
			return false
		}
	}
	return true
}

// Balance drains hot nodes (see the package documentation and README.md).
func (p *Plugin) Balance(ctx context.Context, nodes []*corev1.Node) *framework.Status {
	logger := klog.FromContext(ctx)
	now := p.clock.Now()
	var fresh []*nodeState
	for _, n := range nodes {
		m, err := p.metrics.Get(n.Name)
		if err != nil && !apierrors.IsNotFound(err) {
			return framework.Errorf("reading NodeMetric %q: %v", n.Name, err)
		}
		if err != nil || !constraints.MetricFresh(m, now, p.maxAge) {
			continue
		}
		s, err := p.estimated(n, m, now)
		if err != nil {
			return framework.Errorf("listing the pods of node %q: %v", n.Name, err)
		}
		if s.adj.Estimated > 0 || s.adj.Departed > 0 {
			logger.V(4).Info("Node usage estimated", "node", n.Name, "podsEstimated", s.adj.Estimated, "podsGone", s.adj.Departed,
				"reportedCPU", m.Status.NodeUsage.Cpu().String(), "estimatedCPU", s.metric.Status.NodeUsage.Cpu().String())
		}
		fresh = append(fresh, s)
	}
	p.recordUsage(fresh)
	high, low := p.effectiveThresholds(fresh)

	var hot, coolNodes []*nodeState
	seen := make(map[string]bool, len(nodes))
	p.mu.Lock()
	for _, s := range fresh {
		seen[s.node.Name] = true
		c := constraints.NewNodeLoad(s.load, s.node.Status.Allocatable, high, nil).CheckEstimated(&s.adj, now, p.maxAge)
		switch {
		case c.Overloaded:
			p.hotCycles[s.node.Name]++
			logger.V(4).Info("Node is over its high threshold", "node", s.node.Name, "resource", c.Resource,
				"usagePercent", c.UsagePercent, "thresholdPercent", c.ThresholdPercent, "consecutiveCycles", p.hotCycles[s.node.Name])
			if p.hotCycles[s.node.Name] >= p.args.ConsecutiveAbnormalities {
				hot = append(hot, s)
			}
		default:
			delete(p.hotCycles, s.node.Name)
			if p.cool(s, low) {
				coolNodes = append(coolNodes, s)
			}
		}
	}
	for name := range p.hotCycles {
		if !seen[name] {
			delete(p.hotCycles, name)
		}
	}
	p.mu.Unlock()

	logger.V(3).Info("Node load classified", "freshMetrics", len(fresh), "hot", len(hot), "cool", len(coolNodes))
	if len(hot) == 0 || len(coolNodes) == 0 || len(coolNodes) <= int(p.args.NumberOfNodes) {
		return nil
	}
	for _, s := range hot {
		s.score = p.weightedUsage(s.node, s.metric)
	}
	for _, s := range coolNodes {
		s.score = p.weightedUsage(s.node, s.metric)
		s.projected = projectedCopy(s.metric)
	}
	slices.SortStableFunc(hot, func(a, b *nodeState) int { return cmp.Compare(b.score, a.score) })
	slices.SortStableFunc(coolNodes, func(a, b *nodeState) int { return cmp.Compare(a.score, b.score) })

	for _, s := range hot {
		evicted, stop := p.drain(ctx, s, coolNodes, high, now)
		if evicted > 0 {
			// The node's metric lags the evictions: count again from zero before the next drain.
			p.mu.Lock()
			delete(p.hotCycles, s.node.Name)
			p.mu.Unlock()
		}
		if stop {
			break
		}
	}
	return nil
}

// estimated returns the node's state with its estimated usage: the metric's, adjusted by the
// estimate for the pods bound to the node (all of them, whatever the plugin may evict).
func (p *Plugin) estimated(n *corev1.Node, m *slov1alpha1.NodeMetric, now time.Time) (*nodeState, error) {
	s := &nodeState{node: n, metric: m, load: constraints.NewLoad(m)}
	if p.est == nil {
		return s, nil
	}
	pods, err := p.h.GetPodsAssignedToNode(n.Name, nil)
	if err != nil {
		return nil, err
	}
	s.adj = p.est.Adjust(s.load, n.Status.Allocatable, len(pods), func(i int) *corev1.Pod { return pods[i] }, now)
	s.metric = estimatedCopy(m, s.load, &s.adj)
	return s, nil
}

// estimatedCopy is a copy of the metric whose NodeUsage is the estimated usage, for the resources
// the metric reports.
func estimatedCopy(m *slov1alpha1.NodeMetric, l *constraints.Load, adj *constraints.Adjustment) *slov1alpha1.NodeMetric {
	c := projectedCopy(m)
	c.Status.PodsUsage = m.Status.PodsUsage
	for name, q := range c.Status.NodeUsage {
		if v, ok := l.EstimatedUsage(name, adj); ok {
			c.Status.NodeUsage[name] = *resource.NewMilliQuantity(int64(math.Round(v*1000)), q.Format)
		}
	}
	return c
}

func projectedCopy(m *slov1alpha1.NodeMetric) *slov1alpha1.NodeMetric {
	c := &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: m.Name}}
	c.Status.UpdateTime = m.Status.UpdateTime
	c.Status.NodeUsage = m.Status.NodeUsage.DeepCopy()
	return c
}

type candidate struct {
	pod   *corev1.Pod
	usage corev1.ResourceList
	score float64
}

func (p *Plugin) selected(pod *corev1.Pod) bool {
	if len(p.selectors) == 0 {
		return true
	}
	set := labels.Set(pod.Labels)
	for _, s := range p.selectors {
		if s.Matches(set) {
			return true
		}
	}
	return false
}

// drain evicts pods from a hot node until its projected usage is no longer over the high thresholds
// (constraints.CheckLoad, as LoadAware's Filter) or no cool node can take the next pod.
func (p *Plugin) drain(ctx context.Context, s *nodeState, coolNodes []*nodeState, high []constraints.ResourceThreshold, now time.Time) (int, bool) {
	logger := klog.FromContext(ctx)
	pods, err := p.h.GetPodsAssignedToNode(s.node.Name, p.ns.Candidates(p.h.Evictor(), false, p.selected))
	if err != nil || len(pods) == 0 {
		return 0, false
	}
	usage := make(map[string]corev1.ResourceList, len(s.metric.Status.PodsUsage))
	for _, u := range s.metric.Status.PodsUsage {
		usage[u.Namespace+"/"+u.Name] = u.Usage
	}
	cands := make([]candidate, 0, len(pods))
	for _, pod := range pods {
		u, ok := usage[pod.Namespace+"/"+pod.Name]
		if !ok {
			// No measurement for the pod: its requests stand in for its usage.
			u = resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
		}
		c := candidate{pod: pod, usage: u}
		for _, w := range p.weights {
			if q, ok := u[w.Name]; ok && w.Weight > 0 {
				if a, ok := s.node.Status.Allocatable[w.Name]; ok && a.AsApproximateFloat64() > 0 {
					c.score += float64(w.Weight) * q.AsApproximateFloat64() / a.AsApproximateFloat64()
				}
			}
		}
		cands = append(cands, c)
	}
	slices.SortStableFunc(cands, func(a, b candidate) int {
		if c := pluginutil.ComparePriorityLowToHigh(a.pod, b.pod); c != 0 {
			return c
		}
		return cmp.Compare(b.score, a.score)
	})
	// The node's estimated usage as the evictions are planned: the verdict Balance gave it, with
	// each evicted pod's usage taken off.
	projected := s.adj.Clone()
	nodeLoad := constraints.NewNodeLoad(s.load, s.node.Status.Allocatable, high, nil)
	evicted := 0
	for _, c := range cands {
		check := nodeLoad.CheckEstimated(&projected, now, p.maxAge)
		if !check.Overloaded {
			logger.V(3).Info("Node is under its high thresholds after the evictions", "node", s.node.Name, "evicted", evicted)
			return evicted, false
		}
		dest := p.destination(c, coolNodes, high, now)
		if dest == nil {
			logger.V(4).Info("No cool node can take the pod", "pod", klog.KObj(c.pod), "node", s.node.Name)
			continue
		}
		reason := fmt.Sprintf("node %s is over its %s threshold (%d%% > %d%%)", s.node.Name, check.Resource, check.UsagePercent, check.ThresholdPercent)
		switch framework.Evict(ctx, p.h.Evictor(), c.pod, Name, reason) {
		case framework.Evicted:
			evicted++
			projected.Move(c.usage, -1)
			move(dest.projected.Status.NodeUsage, c.usage, +1)
		case framework.NodeFull:
			return evicted, false
		case framework.StopEvicting:
			return evicted, true
		}
	}
	return evicted, false
}

// destination returns the first cool node (least used first) whose projected usage with the pod's
// stays within the high thresholds, so the pod cannot make it a hot node.
func (p *Plugin) destination(c candidate, coolNodes []*nodeState, high []constraints.ResourceThreshold, now time.Time) *nodeState {
	for _, d := range coolNodes {
		if d.node.Name == c.pod.Spec.NodeName {
			continue
		}
		move(d.projected.Status.NodeUsage, c.usage, +1)
		over := constraints.CheckLoad(d.projected, d.node.Status.Allocatable, high, now, p.maxAge).Overloaded
		move(d.projected.Status.NodeUsage, c.usage, -1)
		if !over {
			return d
		}
	}
	return nil
}

// move adds (sign +1) or subtracts (-1) the pod's usage to or from a node's usage.
func move(nodeUsage, pod corev1.ResourceList, sign int) {
	for name, q := range pod {
		cur := nodeUsage[name]
		if sign > 0 {
			cur.Add(q)
		} else {
			cur.Sub(q)
			if cur.Sign() < 0 {
				cur = *resource.NewQuantity(0, q.Format)
			}
		}
		nodeUsage[name] = cur
	}
}

// Hot reports whether node, with metric as its NodeMetric (nil for none) and pods bound to it, is
// over the high thresholds at now: constraints.CheckLoadEstimated with highThresholds,
// nodeMetricExpirationSeconds and the estimate's args, the check the scheduler's LoadAware Filter
// makes with usageThresholds and the pods of its NodeInfo. It is the absolute verdict; with
// useDeviationThresholds, Balance judges against the cycle's mean instead.
func (p *Plugin) Hot(node *corev1.Node, metric *slov1alpha1.NodeMetric, pods []*corev1.Pod, now time.Time) bool {
	return constraints.CheckLoadEstimated(metric, node.Status.Allocatable, p.high, p.est, pods, now, p.maxAge).Overloaded
}
