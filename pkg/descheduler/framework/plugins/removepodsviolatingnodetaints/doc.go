// Package removepodsviolatingnodetaints is the upstream RemovePodsViolatingNodeTaints plugin: it
// evicts pods that do not tolerate a NoSchedule taint of their node (and, with
// includePreferNoSchedule, a PreferNoSchedule taint). Taint matching is component-helpers'. See
// README.md.
//
// +k8s:deepcopy-gen=package
package removepodsviolatingnodetaints
