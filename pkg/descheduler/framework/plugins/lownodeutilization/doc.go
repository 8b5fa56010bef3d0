// Package lownodeutilization is the upstream LowNodeUtilization balance plugin: on requests (the
// scheduler's view), it evicts pods from nodes over targetThresholds while nodes under thresholds
// have room for them. See README.md.
//
// +k8s:deepcopy-gen=package
package lownodeutilization
