// Package podlifetime is an example out-of-tree descheduling plugin: it evicts pods that have been
// running longer than a maximum lifetime, oldest first.
//
// +k8s:deepcopy-gen=package
package podlifetime
