// Package removepodsviolatingnodeaffinity is the upstream RemovePodsViolatingNodeAffinity plugin:
// it evicts pods whose required node affinity (or nodeSelector) their node no longer matches, or,
// for preferredDuringSchedulingIgnoredDuringExecution, pods for which another node they fit matches
// more of their preferred terms. Matching is component-helpers' nodeaffinity. See README.md.
//
// +k8s:deepcopy-gen=package
package removepodsviolatingnodeaffinity
