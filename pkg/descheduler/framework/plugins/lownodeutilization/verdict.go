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
