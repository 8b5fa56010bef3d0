// Package highnodeutilization is the upstream HighNodeUtilization balance plugin: on requests, it
// evicts pods from underutilized nodes so that the scheduler (with a MostAllocated scoring) packs
// them onto the others and the emptied nodes can be scaled down. See README.md.
//
// +k8s:deepcopy-gen=package
package highnodeutilization
