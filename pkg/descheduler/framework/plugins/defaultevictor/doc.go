// Package defaultevictor is the DefaultEvictor plugin, the evictor plugin a profile gets at its
// filter and preEvictionFilter extension points when it names none.
//
// Filter never lets through mirror or static pods, terminating pods, or pods the args'
// labelSelector rejects or that are younger than minPodAge; by default it also protects DaemonSet
// pods, system-critical pods (priority at or above the threshold, or a system-*-critical class), pods
// with local storage or PersistentVolumeClaims, and bare pods (no owner), each of which the args can
// allow. PreEvictionFilter, with nodeFit, lets a pod go only if it fits another Ready node: resources
// (the scheduler's NodeResourcesFit helper), taints and required node affinity (component-helpers),
// and the node's ClusterScopedResource (pkg/constraints), as the Accord scheduler would check.
//
// +k8s:deepcopy-gen=package
package defaultevictor
