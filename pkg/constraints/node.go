package constraints

import corev1 "k8s.io/api/core/v1"

// NodeReady reports whether the node's Ready condition is True (a node without one is not Ready).
// The descheduler's runtime and nodeFit, the console and the local cluster's node simulator all
// judge readiness by it.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
