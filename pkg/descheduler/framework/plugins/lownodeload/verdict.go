package lownodeload

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/accord-sched/accord/pkg/constraints"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

var _ framework.NodeVerdicter = &Plugin{}

// NodeVerdict reports whether the plugin would drain node once pod runs there: node's fresh
// NodeMetric, adjusted by the usage estimate for the pods bound to it, plus the pod's usage (measured on its current node, else its requests) is over the
// high thresholds by constraints.CheckLoad, the check Balance (and the scheduler's LoadAware Filter)
// uses. A node without a fresh metric is never drained, so never flagged. With
// useDeviationThresholds the thresholds depend on the whole cluster's mean and are not judged here.
func (p *Plugin) NodeVerdict(pod *corev1.Pod, node *corev1.Node) (bool, string) {
	if p.args.UseDeviationThresholds || !p.ns.Matches(pod) || !p.selected(pod) {
		return false, ""
	}
	now := p.clock.Now()
	m, err := p.metrics.Get(node.Name)
	if err != nil || !constraints.MetricFresh(m, now, p.maxAge) {
		return false, ""
	}
	s, err := p.estimated(node, m, now)
	if err != nil {
		return false, ""
	}
	adj := s.adj.Clone()
	if pod.Spec.NodeName != node.Name {
		adj.Move(p.podUsage(pod), +1)
	}
	c := constraints.NewNodeLoad(s.load, node.Status.Allocatable, p.high, nil).CheckEstimated(&adj, now, p.maxAge)
	if !c.Overloaded {
		return false, ""
	}
	return true, fmt.Sprintf("node %s would be over its %s threshold (%d%% > %d%%)", node.Name, c.Resource, c.UsagePercent, c.ThresholdPercent)
}

// podUsage is the pod's measured usage on its node, else its requests.
func (p *Plugin) podUsage(pod *corev1.Pod) corev1.ResourceList {
	if m, err := p.metrics.Get(pod.Spec.NodeName); err == nil {
		for _, u := range m.Status.PodsUsage {
			if u.Namespace == pod.Namespace && u.Name == pod.Name {
				return u.Usage
			}
		}
	}
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}
