package removeduplicates

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

var _ framework.NodeVerdicter = &Plugin{}

// NodeVerdict reports whether the plugin would evict pod again once it runs on node: with the pod
// there, node would hold more pods of one of its owners than ceil(owner's pods / nodes the owner
// could run on), the bound Balance evicts above (same owner keys, same PlacementChecker).
func (p *Plugin) NodeVerdict(pod *corev1.Pod, node *corev1.Node) (bool, string) {
	if !p.sel.Matches(pod) {
		return false, ""
	}
	keys := p.ownerKeys(nil, pod)
	if len(keys) == 0 {
		return false, ""
	}
	// Every node, from the cycle's node list (Handle.Nodes), to count the ones the pod may run on.
	nodes, err := p.h.Nodes(nil)
	if err != nil {
		return false, ""
	}
	checker := pluginutil.NewPlacementChecker(pod)
	n := 0
	for _, nd := range nodes {
		if checker.Allows(nd) {
			n++
		}
	}
	if n < 2 {
		return false, ""
	}
	var other []ownerKey
	for _, k := range keys {
		pods, err := p.podsOf(k)
		if err != nil {
			return false, ""
		}
		total, onNode := 0, 0
		for _, q := range pods {
			if q.Spec.NodeName == "" || pluginutil.IsFinished(q) || q.DeletionTimestamp != nil {
				continue
			}
			other = p.ownerKeys(other[:0], q)
			for _, ok := range other {
				if ok == k {
					total++
					if q.Spec.NodeName == node.Name && q.UID != pod.UID {
						onNode++
					}
					break
				}
			}
		}
		onNode++ // the pod itself, placed on node
		if upper := (total + n - 1) / n; onNode > 1 && onNode > upper {
			return true, fmt.Sprintf("node %s would hold %d pods of owner %s/%s, at most %d wanted", node.Name, onNode, k.kind, k.name, upper)
		}
	}
	return false, ""
}

// podsOf returns the pods that may belong to owner k: its pods, from the owner index, or without
// the index every pod of k's namespace (the caller matches each pod's owners).
func (p *Plugin) podsOf(k ownerKey) ([]*corev1.Pod, error) {
	if p.owners == nil {
		return p.h.SharedInformerFactory().Core().V1().Pods().Lister().Pods(k.namespace).List(labels.Everything())
	}
	objs, err := p.owners.ByIndex(ownerIndex, ownerIndexKey(k.namespace, k.kind, k.name))
	if err != nil {
		return nil, err
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if q, ok := o.(*corev1.Pod); ok {
			pods = append(pods, q)
		}
	}
	return pods, nil
}
