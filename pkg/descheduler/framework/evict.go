package framework

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// EvictOutcome is what a plugin does after one eviction attempt (see Evict).
type EvictOutcome int

const (
	// Evicted: the pod was evicted (or would have been, in dry-run mode), or was already gone
	// (ErrPodGone): either way it no longer runs on its node.
	Evicted EvictOutcome = iota
	// NotEvicted: this pod was not evicted (a preEvictionFilter kept it, a PodDisruptionBudget
	// forbade it); go on with the next one.
	NotEvicted
	// NodeFull: the node's limit for the cycle is reached; go on with the next node.
	NodeFull
	// NamespaceFull: the namespace's limit is reached; skip the namespace's other pods.
	NamespaceFull
	// StopEvicting: the cycle's total limit is reached, the caches have not re-synced, or ctx is
	// done; the plugin should return.
	StopEvicting
)

// Evict is the eviction step of a plugin: it checks the cycle's limits (ev.CheckLimits, so that a
// pod no limit lets go is not run through an expensive PreEvictionFilter such as the scheduler
// simulation), runs the pod through ev.PreEvictionFilter, evicts it with plugin and reason, and says
// how the plugin goes on. A pod PreEvictionFilter keeps is NotEvicted. Call it for each candidate
// that passed ev.Filter:
//
//	switch framework.Evict(ctx, h.Evictor(), pod, Name, "why") {
//	case framework.StopEvicting:
//		return nil
//	case framework.NodeFull:
//		continue nodes
//	}
func Evict(ctx context.Context, ev Evictor, pod *corev1.Pod, plugin, reason string) EvictOutcome {
	if ctx.Err() != nil {
		return StopEvicting
	}
	if err := ev.CheckLimits(pod); err != nil {
		return OutcomeOf(ctx, pod, plugin, err)
	}
	if !ev.PreEvictionFilter(pod) {
		return NotEvicted
	}
	return EvictFiltered(ctx, ev, pod, plugin, reason)
}

// EvictFiltered evicts a pod that already passed PreEvictionFilter and says how the plugin goes on.
func EvictFiltered(ctx context.Context, ev Evictor, pod *corev1.Pod, plugin, reason string) EvictOutcome {
	return EvictFilteredWith(ctx, ev, pod, EvictOptions{PluginName: plugin, Reason: reason})
}

// EvictFilteredWith is EvictFiltered with the options given whole (opts.PluginName names the plugin).
func EvictFilteredWith(ctx context.Context, ev Evictor, pod *corev1.Pod, opts EvictOptions) EvictOutcome {
	return OutcomeOf(ctx, pod, opts.PluginName, ev.Evict(ctx, pod, opts))
}

// OutcomeOf is what an Evictor's answer (Evict's or CheckLimits' error) means for a plugin's loop;
// an error that is none of the framework's (a PodDisruptionBudget, the apiserver) is logged at V(3)
// and NotEvicted.
func OutcomeOf(ctx context.Context, pod *corev1.Pod, plugin string, err error) EvictOutcome {
	switch {
	case err == nil, errors.Is(err, ErrDryRun):
		return Evicted
	case IsPodGone(err):
		// Evicted by someone else: nothing to retry, and the plugin's accounting (usage, duplicates,
		// spread) is right to treat it as removed.
		return Evicted
	case IsTotalLimit(err), IsCachesNotSynced(err):
		// The total limit, or caches that have not re-synced: nothing more this cycle.
		return StopEvicting
	case IsNodeLimit(err):
		return NodeFull
	case IsNamespaceLimit(err):
		return NamespaceFull
	default:
		klog.FromContext(ctx).V(3).Info("Pod not evicted", "pod", klog.KObj(pod), "plugin", plugin, "err", err)
		return NotEvicted
	}
}

// EvictAll evicts pods in order (each with Evict), moving on past node and namespace limits, and
// reports the number evicted and whether the cycle's total limit (or ctx) stopped it.
func EvictAll(ctx context.Context, ev Evictor, pods []*corev1.Pod, plugin string, reason func(*corev1.Pod) string) (evicted int, stopped bool) {
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
		case StopEvicting:
			return evicted, true
		}
	}
	return evicted, false
}
