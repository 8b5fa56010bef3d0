package lownodeutilization

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

var _ framework.NodeVerdicter = &Plugin{}

// NodeVerdict reports whether the plugin would move pod off node once it runs there: node's
// requests (pluginutil.NodeUsages, what Balance classifies nodes by) plus the pod's are over
// targetThresholds for some resource. With useDeviationThresholds the thresholds depend on the
// whole cluster's mean and are not judged here.
func (p *Plugin) NodeVerdict(pod *corev1.Pod, node *corev1.Node) (bool, string) {
	if p.args.UseDeviationThresholds || !p.ns.Matches(pod) {
		return false, ""
	}
	if p.metrics != nil {
		return p.measuredVerdict(pod, node)
	}
	usages, err := pluginutil.NodeUsages(p.h, []*corev1.Node{node}, p.resources)
	if err != nil || len(usages) != 1 {
		return false, ""
	}
	u := usages[0]
	if pod.Spec.NodeName != node.Name {
		pluginutil.AddPodRequest(u.Usage, pod, p.resources, 1)
	}
	for _, r := range p.resources {
		a := u.Allocatable(r)
		if a <= 0 {
			continue
		}
		if pct := float64(u.Usage[r]) * 100 / float64(a); pct > float64(p.args.TargetThresholds[r]) {
			return true, fmt.Sprintf("node %s would be over its target %s utilization (%.0f%% > %v%%)", node.Name, r, pct, p.args.TargetThresholds[r])
		}
	}
	return false, ""
}

// measuredVerdict is NodeVerdict with metricsUtilization: the node's usage measured by the latest
// Balance plus, for KubernetesMetrics, the pod's measured usage (read in that Balance); for the
// Prometheus source, which does not measure pods, whether the node is already over its target. A node
// the latest Balance did not measure is not flagged.
func (p *Plugin) measuredVerdict(pod *corev1.Pod, node *corev1.Node) (bool, string) {
	p.mu.Lock()
	measured := p.measured[node.Name]
	podUsage := p.podUsage[pod.UID]
	var usage map[corev1.ResourceName]int64
	if measured != nil {
		usage = make(map[corev1.ResourceName]int64, len(measured.Usage))
		for r, v := range measured.Usage {
			usage[r] = v
		}
	}
	p.mu.Unlock()
	if measured == nil {
		return false, ""
	}
	if pod.Spec.NodeName != node.Name {
		for r, v := range podUsage {
			usage[r] += v
		}
	}
	for _, r := range p.resources {
		a := measured.Allocatable(r)
		if a <= 0 {
			continue
		}
		if pct := float64(usage[r]) * 100 / float64(a); pct > float64(p.args.TargetThresholds[r]) {
			return true, fmt.Sprintf("node %s would be over its target %s utilization, measured (%.0f%% > %v%%)", node.Name, r, pct, p.args.TargetThresholds[r])
		}
	}
	return false, ""
}
