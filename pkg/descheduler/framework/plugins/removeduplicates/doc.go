// Package removeduplicates is the upstream RemoveDuplicates plugin: it spreads the pods of one owner
// (same kind, name and container images) that pile up on a node, evicting those above the owner's
// even share of the nodes it could run on. See README.md.
//
// +k8s:deepcopy-gen=package
package removeduplicates
