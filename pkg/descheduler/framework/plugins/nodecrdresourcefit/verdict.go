package nodecrdresourcefit

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

var _ framework.NodeVerdicter = &Plugin{}

// NodeVerdict reports whether the plugin would nominate pod if it ran on node: the same
// Violation (pkg/constraints) Deschedule evicts with, on node's ClusterScopedResource.
func (p *Plugin) NodeVerdict(pod *corev1.Pod, node *corev1.Node) (bool, string) {
	if !p.schedulerOK(pod) {
		return false, ""
	}
	csr, err := p.csrOf(node.Name)
	if err != nil {
		return true, "reading the node's ClusterScopedResource: " + err.Error()
	}
	reason, bad := Violation(csr, p.args.MissingCRPolicy, pod, nil)
	return bad, reason
}
