package pluginutil

import (
	"cmp"
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

// NodeUsage is a node with the requests of the pods bound to it (the scheduler's view of its
// utilization), in milli-units per resource; the "pods" resource counts pods.
//
// +k8s:deepcopy-gen=false
type NodeUsage struct {
	Node  *corev1.Node
	Pods  []*corev1.Pod
	Usage map[corev1.ResourceName]int64
	// Percent is Usage in percent of allocatable, for each resource the node has allocatable of.
	Percent map[corev1.ResourceName]float64
	// Capacity, when it has a resource, replaces the node's allocatable of it (in milli-units): a
	// metric that is not a node resource (LowNodeUtilization's MetricResource, out of 100).
	Capacity map[corev1.ResourceName]int64
}

// NewNodeUsage returns the NodeUsage of a node whose usage was measured (not summed from requests),
// with Percent computed.
func NewNodeUsage(node *corev1.Node, pods []*corev1.Pod, usage, capacity map[corev1.ResourceName]int64, resources []corev1.ResourceName) *NodeUsage {
	u := &NodeUsage{Node: node, Pods: pods, Usage: usage, Capacity: capacity}
	u.updatePercent(resources)
	return u
}

// PodRequest returns the pod's requests for resources as Kubernetes computes them
// (component-helpers' PodRequests: containers, init containers, overhead, pod-level requests), in
// milli-units; "pods" is 1000 (one pod).
func PodRequest(pod *corev1.Pod, resources []corev1.ResourceName) map[corev1.ResourceName]int64 {
	out := make(map[corev1.ResourceName]int64, len(resources))
	AddPodRequest(out, pod, resources, 1)
	return out
}

// AddPodRequest adds sign times the pod's requests for resources (see PodRequest) to sum. A pod
// with only regular containers (no init containers, overhead or pod-level requests), for which
// PodRequests is the plain sum of the containers' requests, is summed without allocating.
func AddPodRequest(sum map[corev1.ResourceName]int64, pod *corev1.Pod, resources []corev1.ResourceName, sign int64) {
	var accBuf [8]int64
	var hasBuf [8]bool
	acc, has := accBuf[:0], hasBuf[:0]
	if len(resources) > len(accBuf) {
		acc, has = make([]int64, 0, len(resources)), make([]bool, 0, len(resources))
	}
	acc, has = acc[:len(resources)], has[:len(resources)]
	addPodRequest(acc, has, pod, resources, sign)
	for i, r := range resources {
		if has[i] {
			sum[r] += acc[i]
		}
	}
}

// addPodRequest is AddPodRequest into acc, indexed like resources; has[i] is set when resources[i]
// was added to (the key AddPodRequest would have set in its map).
func addPodRequest(acc []int64, has []bool, pod *corev1.Pod, resources []corev1.ResourceName, sign int64) {
	if len(pod.Spec.InitContainers) > 0 || pod.Spec.Overhead != nil || pod.Spec.Resources != nil {
		all := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
		for i, r := range resources {
			if r == corev1.ResourcePods {
				acc[i] += sign * 1000
				has[i] = true
			} else if q, ok := all[r]; ok {
				acc[i] += sign * q.MilliValue()
				has[i] = true
			}
		}
		return
	}
	for i, r := range resources {
		if r == corev1.ResourcePods {
			acc[i] += sign * 1000
			has[i] = true
			continue
		}
		for j := range pod.Spec.Containers {
			if q, ok := pod.Spec.Containers[j].Resources.Requests[r]; ok {
				acc[i] += sign * q.MilliValue()
				has[i] = true
			}
		}
	}
}

// NodeUsages computes the usage of each node from the pods bound to it that have not finished.
func NodeUsages(h framework.Handle, nodes []*corev1.Node, resources []corev1.ResourceName) ([]*NodeUsage, error) {
	out := make([]*NodeUsage, 0, len(nodes))
	acc, has := make([]int64, len(resources)), make([]bool, len(resources))
	for _, n := range nodes {
		pods, err := h.GetPodsAssignedToNode(n.Name, func(p *corev1.Pod) bool { return !IsFinished(p) })
		if err != nil {
			return nil, err
		}
		u := &NodeUsage{Node: n, Pods: pods, Usage: make(map[corev1.ResourceName]int64, len(resources))}
		clear(acc)
		clear(has)
		for _, p := range pods {
			addPodRequest(acc, has, p, resources, 1)
		}
		for i, r := range resources {
			if has[i] {
				u.Usage[r] += acc[i]
			}
		}
		u.updatePercent(resources)
		out = append(out, u)
	}
	return out, nil
}

func (u *NodeUsage) updatePercent(resources []corev1.ResourceName) {
	if u.Percent == nil {
		u.Percent = make(map[corev1.ResourceName]float64, len(resources))
	}
	for _, r := range resources {
		if a := u.Allocatable(r); a > 0 {
			u.Percent[r] = float64(u.Usage[r]) * 100 / float64(a)
		}
	}
}

// Allocatable returns the node's allocatable of r in milli-units.
func (u *NodeUsage) Allocatable(r corev1.ResourceName) int64 {
	if c, ok := u.Capacity[r]; ok {
		return c
	}
	q, ok := u.Node.Status.Allocatable[r]
	if !ok {
		return 0
	}
	return q.MilliValue()
}

// Total returns the sum of the node's usage percentages, to order nodes.
func (u *NodeUsage) Total() float64 {
	var s float64
	for _, v := range u.Percent {
		s += v
	}
	return s
}

// MeanPercent returns, per resource, the mean usage percentage over nodes.
func MeanPercent(nodes []*NodeUsage, resources []corev1.ResourceName) map[corev1.ResourceName]float64 {
	out := make(map[corev1.ResourceName]float64, len(resources))
	for _, r := range resources {
		var sum float64
		var n int
		for _, u := range nodes {
			if v, ok := u.Percent[r]; ok {
				sum += v
				n++
			}
		}
		if n > 0 {
			out[r] = sum / float64(n)
		}
	}
	return out
}

// Capacity returns, per resource, what the nodes can still take before reaching pct percent of
// their allocatable (pct per resource), in milli-units.
func Capacity(nodes []*NodeUsage, resources []corev1.ResourceName, pct map[corev1.ResourceName]float64) map[corev1.ResourceName]int64 {
	out := make(map[corev1.ResourceName]int64, len(resources))
	for _, r := range resources {
		for _, u := range nodes {
			out[r] += int64(float64(u.Allocatable(r))*pct[r]/100) - u.Usage[r]
		}
	}
	return out
}

// Mover evicts pods from source nodes onto the capacity of destination nodes: the shared core of
// LowNodeUtilization and HighNodeUtilization.
//
// +k8s:deepcopy-gen=false
type Mover struct {
	Handle    framework.Handle
	Plugin    string
	Resources []corev1.ResourceName
	// Select picks the pods that may move (namespaces); nil takes all.
	Select func(*corev1.Pod) bool
	// Reason explains an eviction from the node.
	Reason func(*NodeUsage) string
	// PodUsage, when set, is what evicting a pod takes off its node and the destinations' capacity
	// (measured usage) instead of its requests; a pod it fails for is skipped.
	PodUsage func(context.Context, *corev1.Pod) (map[corev1.ResourceName]int64, error)
	// Unmeasured: what a pod uses is unknown (a node-level metric), so capacity is checked but not
	// charged, the source's usage does not change, and MaxPerSource bounds the evictions.
	Unmeasured bool
	// MaxPerSource, when positive, bounds the evictions from one source node in one Move.
	MaxPerSource int
}

// Move goes through sources in order and, on each, through its candidate pods (those Select and the
// evictor's Filter accept), lowest priority first, evicting while more(source) holds and capacity
// has room for the pod's requests. Usage and capacity follow the evictions. It returns true when
// the cycle's total limit stopped it.
func (m *Mover) Move(ctx context.Context, sources []*NodeUsage, capacity map[corev1.ResourceName]int64, more func(*NodeUsage) bool) bool {
	logger := klog.FromContext(ctx)
	ev := m.Handle.Evictor()
	for _, src := range sources {
		pods := make([]*corev1.Pod, 0, len(src.Pods))
		for _, p := range src.Pods {
			if (m.Select == nil || m.Select(p)) && ev.Filter(p) {
				pods = append(pods, p)
			}
		}
		SortByPriorityLowToHigh(pods)
		evicted := 0
	podLoop:
		for _, p := range pods {
			if !more(src) || (m.MaxPerSource > 0 && evicted >= m.MaxPerSource) {
				break
			}
			if !slices.ContainsFunc(m.Resources, func(r corev1.ResourceName) bool { return capacity[r] > 0 }) {
				logger.V(3).Info("No capacity left on the destination nodes")
				return false
			}
			var req map[corev1.ResourceName]int64
			switch {
			case m.Unmeasured:
			case m.PodUsage != nil:
				u, err := m.PodUsage(ctx, p)
				if err != nil {
					logger.V(3).Info("Pod skipped: its usage is unknown", "pod", klog.KObj(p), "err", err)
					continue
				}
				req = u
			default:
				req = PodRequest(p, m.Resources)
			}
			if slices.ContainsFunc(m.Resources, func(r corev1.ResourceName) bool { return req[r] > capacity[r] }) {
				continue
			}
			switch framework.Evict(ctx, ev, p, m.Plugin, m.Reason(src)) {
			case framework.Evicted:
				evicted++
				if m.Unmeasured {
					continue
				}
				for _, r := range m.Resources {
					src.Usage[r] -= req[r]
					capacity[r] -= req[r]
				}
				src.updatePercent(m.Resources)
			case framework.NodeFull:
				break podLoop
			case framework.StopEvicting:
				return true
			}
		}
	}
	return false
}

// SortByUsage sorts nodes by Total, descending when desc.
func SortByUsage(nodes []*NodeUsage, desc bool) {
	slices.SortStableFunc(nodes, func(a, b *NodeUsage) int {
		if desc {
			return cmp.Compare(b.Total(), a.Total())
		}
		return cmp.Compare(a.Total(), b.Total())
	})
}

// DefaultThresholdResources sets cpu, memory and pods to 100 percent in every given thresholds map
// that lacks them, as the upstream descheduler does, so that unlisted basic resources never decide.
func DefaultThresholdResources(value Percentage, maps ...ResourceThresholds) {
	for _, m := range maps {
		if m == nil {
			continue
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
			if _, ok := m[r]; !ok {
				m[r] = value
			}
		}
	}
}
