package pluginutil

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

// Outcome is what a plugin does after one eviction attempt.
type Outcome int

const (
	// Evicted: the pod was evicted (or would have been, in dry-run mode), or was already gone
	// (framework.ErrPodGone): either way it no longer runs on its node.
	Evicted Outcome = iota
	// Failed: this pod was not evicted (e.g. a PodDisruptionBudget); go on with the next one.
	Failed
	// NodeFull: the node's limit for the cycle is reached; go on with the next node.
	NodeFull
	// NamespaceFull: the namespace's limit is reached; skip the namespace's other pods.
	NamespaceFull
	// Stop: the cycle's total limit is reached, the caches have not re-synced, or ctx is done; the
	// plugin should return.
	Stop
)

// Evict runs the pod through the profile's PreEvictionFilter and evicts it, and says how the
// plugin should go on. A pod PreEvictionFilter keeps is reported as Failed. When the evictor is a
// framework.LimitChecker, a pod the cycle's limits stop is reported (NodeFull, NamespaceFull, Stop)
// without running PreEvictionFilter.
func Evict(ctx context.Context, ev framework.Evictor, pod *corev1.Pod, plugin, reason string) Outcome {
	if ctx.Err() != nil {
		return Stop
	}
	if out, limited := limitedNow(ctx, ev, pod, plugin); limited {
		return out
	}
	if !ev.PreEvictionFilter(pod) {
		return Failed
	}
	return EvictFiltered(ctx, ev, pod, plugin, reason)
}

// limitedNow reports how the plugin goes on when the cycle's limits stop pod already (limited
// false: they do not, or ev cannot say), so that the preEvictionFilters (the scheduler simulation)
// do not run for a pod the limits would refuse.
func limitedNow(ctx context.Context, ev framework.Evictor, pod *corev1.Pod, plugin string) (out Outcome, limited bool) {
	if lc, ok := ev.(framework.LimitChecker); ok {
		if err := lc.CheckLimits(pod); err != nil {
			return outcome(ctx, pod, plugin, err), true
		}
	}
	return Evicted, false
}

// EvictFiltered evicts a pod that already passed PreEvictionFilter.
func EvictFiltered(ctx context.Context, ev framework.Evictor, pod *corev1.Pod, plugin, reason string) Outcome {
	return outcome(ctx, pod, plugin, ev.Evict(ctx, pod, framework.EvictOptions{PluginName: plugin, Reason: reason}))
}

// outcome is what an eviction's result (Evict's error) means for the plugin's loop.
func outcome(ctx context.Context, pod *corev1.Pod, plugin string, err error) Outcome {
	switch {
	case err == nil, errors.Is(err, framework.ErrDryRun):
		return Evicted
	case framework.IsPodGone(err):
		// Evicted by someone else: nothing to retry, and the plugin's accounting (usage, duplicates,
		// spread) is right to treat it as removed.
		return Evicted
	case framework.IsTotalLimit(err), framework.IsCachesNotSynced(err):
		// The total limit, or caches that have not re-synced: nothing more this cycle.
		return Stop
	case framework.IsNodeLimit(err):
		return NodeFull
	case framework.IsNamespaceLimit(err):
		return NamespaceFull
	default:
		klog.FromContext(ctx).V(3).Info("Pod not evicted", "pod", klog.KObj(pod), "plugin", plugin, "err", err)
		return Failed
	}
}

// EvictAll evicts pods in order (each through PreEvictionFilter), moving on past node and
// namespace limits, and reports the number evicted and whether the cycle's total limit stopped it.
func EvictAll(ctx context.Context, ev framework.Evictor, pods []*corev1.Pod, plugin string, reason func(*corev1.Pod) string) (evicted int, stopped bool) {
	fullNodes := map[string]bool{}
	fullNS := map[string]bool{}
	for _, pod := range pods {
		if fullNodes[pod.Spec.NodeName] || fullNS[pod.Namespace] {
			continue
		}
		switch Evict(ctx, ev, pod, plugin, reason(pod)) {
		case Evicted:
			evicted++
		case NodeFull:
			fullNodes[pod.Spec.NodeName] = true
		case NamespaceFull:
			fullNS[pod.Namespace] = true
		case Stop:
			return evicted, true
		}
	}
	return evicted, false
}
