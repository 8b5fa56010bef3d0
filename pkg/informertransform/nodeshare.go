package informertransform

import (
	corev1 "k8s.io/api/core/v1"
)

// NodeSharer is an informer transform (Transform) for nodes that, beyond StripManagedFields, makes
// nodes with equal capacity or allocatable lists share one copy of each list, as PodSharer does for
// pods' requests. Each node is decoded into its own two resource maps (a few hundred bytes each,
// whatever their size, since a Go map keeps room for eight entries); the nodes of one pool (one
// machine type and kubelet configuration) have equal ones. At 5000 such nodes they were 5 MB of
// kube-scheduler's heap. Nodes whose lists differ (a pool per node, a kubelet reserving a varying
// amount) keep their own, at the cost of a key built per node event.
//
// Sharing is safe because informer objects are read-only (client-go's contract: kube-scheduler and
// the Accord plugins read a node's lists, never write them). The node is semantically unchanged
// (TestNodeSharerKeepsEverything).
type NodeSharer struct {
	// s holds the table of resource lists and its lock (only its lists table is used).
	s PodSharer
}

// NewNodeSharer returns an empty NodeSharer; give each node informer its own.
func NewNodeSharer() *NodeSharer { return &NodeSharer{} }

// Transform is the cache.TransformFunc: a node is stripped of its managedFields and shares its
// capacity and allocatable lists with the nodes whose lists are equal; any other object is only
// stripped (StripManagedFields).
func (n *NodeSharer) Transform(obj any) (any, error) {
	obj, err := StripManagedFields(obj)
	if node, ok := obj.(*corev1.Node); ok && err == nil {
		n.s.mu.Lock()
		defer n.s.mu.Unlock()
		node.Status.Capacity = n.s.resourceList(node.Status.Capacity)
		node.Status.Allocatable = n.s.resourceList(node.Status.Allocatable)
	}
	return obj, err
}
