// Package removepodsviolatingtopologyspreadconstraint is the upstream
// RemovePodsViolatingTopologySpreadConstraint plugin: it evicts pods from the most crowded topology
// domains of a spread constraint until the skew is within maxSkew. See README.md.
//
// +k8s:deepcopy-gen=package
package removepodsviolatingtopologyspreadconstraint
