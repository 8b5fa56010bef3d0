// Package podlifetime is the upstream PodLifeTime plugin: it evicts pods older than
// maxPodLifeTimeSeconds, oldest first. See README.md.
//
// +k8s:deepcopy-gen=package
package podlifetime
