// Package removefailedpods is the upstream RemoveFailedPods plugin: it evicts (deletes, through the
// Eviction API) pods in the Failed phase, so their owners can replace them. See README.md.
//
// +k8s:deepcopy-gen=package
package removefailedpods
