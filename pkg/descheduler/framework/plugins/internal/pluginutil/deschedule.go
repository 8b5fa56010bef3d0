package pluginutil

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

// ViolationFunc says whether a pod breaks a plugin's rule on its node, and why.
type ViolationFunc func(node *corev1.Node, pod *corev1.Pod) (reason string, violates bool)

// EvictViolators is the loop of the rule-based deschedule plugins: node by node, it lists the
// candidate pods (sel, finished pods only with includeFinished, the evictor's Filter) that violate
// the rule, and evicts them lowest priority first, moving on past node and namespace limits and
// stopping at the cycle's total limit.
func EvictViolators(ctx context.Context, h framework.Handle, nodes []*corev1.Node, sel *PodSelector, includeFinished bool, plugin string, violates ViolationFunc) *framework.Status {
	return EvictConfirmedViolators(ctx, h, nodes, sel, includeFinished, plugin, violates, nil)
}

// EvictConfirmedViolators is EvictViolators with a second, expensive check (e.g. "fits another
// node") that runs only for a violator about to be evicted, so a cycle that reaches its eviction
// limit does not pay for the violators it would not have evicted anyway. confirm's reason, when it
// confirms, replaces violates'.
func EvictConfirmedViolators(ctx context.Context, h framework.Handle, nodes []*corev1.Node, sel *PodSelector, includeFinished bool, plugin string, violates, confirm ViolationFunc) *framework.Status {
	logger := klog.FromContext(ctx)
	ev := h.Evictor()
	fullNS := map[string]bool{}
	reasons := map[*corev1.Pod]string{}
	for _, node := range nodes {
		clear(reasons)
		pods, err := h.GetPodsAssignedToNode(node.Name, sel.Candidates(ev, includeFinished, func(pod *corev1.Pod) bool {
			if fullNS[pod.Namespace] {
				return false
			}
			reason, bad := violates(node, pod)
			if bad {
				reasons[pod] = reason
			}
			return bad
		}))
		if err != nil {
			return framework.NewStatus(err)
		}
		SortByPriorityLowToHigh(pods)
	podLoop:
		for _, pod := range pods {
			if fullNS[pod.Namespace] {
				continue
			}
			reason := reasons[pod]
			if confirm != nil {
				r, ok := confirm(node, pod)
				if !ok {
					continue
				}
				reason = r
			}
			logger.V(4).Info("Pod violates the plugin's rule", "pod", klog.KObj(pod), "node", node.Name, "reason", reason)
			switch framework.Evict(ctx, ev, pod, plugin, reason) {
			case framework.StopEvicting:
				return nil
			case framework.NodeFull:
				break podLoop
			case framework.NamespaceFull:
				fullNS[pod.Namespace] = true
			}
		}
	}
	return nil
}
