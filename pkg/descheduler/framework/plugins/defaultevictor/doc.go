// Package defaultevictor is the DefaultEvictor plugin, the evictor plugin a profile gets at its
// filter and preEvictionFilter extension points when it names none.
//
// Filter never lets through mirror or static pods, terminating pods, or pods the args'
// labelSelector rejects or that are younger than minPodAge; by default it also protects DaemonSet
// pods, system-critical pods (priority at or above the threshold, or a system-*-critical class), pods
// with local storage or PersistentVolumeClaims, and bare pods (no owner), each of which the args can
// allow. PreEvictionFilter, with nodeFit, lets a pod go only if it fits another Ready node: resources
// (the scheduler's NodeResourcesFit helper), taints and required node affinity (component-helpers),
// and the node's ClusterScopedResource (pkg/constraints; a node without one is treated as the
// missingCRPolicy arg says, which must equal the scheduler's NodeCRDResourceFit missingCRPolicy), as
// the Accord scheduler would check. NodeFitter keeps each node's requested totals while its pods are
// unchanged, so that nodeFit costs an index lookup per node rather than a NodeInfo.
//
// +k8s:deepcopy-gen=package
package defaultevictor
