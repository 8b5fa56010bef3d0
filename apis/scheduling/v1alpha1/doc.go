// Package v1alpha1 holds the scheduling.accord.dev API: ClusterScopedResource, the per-node record of
// which extended resources a node offers and how well it serves each of them. accord-scheduler's
// NodeCRDResourceFit plugin filters and scores on it, and accord-descheduler evicts the pods that no
// longer satisfy it, through the same predicates in pkg/constraints.
//
// +k8s:deepcopy-gen=package
// +groupName=scheduling.accord.dev
package v1alpha1
