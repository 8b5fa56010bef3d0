// Package removepodsviolatinginterpodantiaffinity is the upstream
// RemovePodsViolatingInterPodAntiAffinity plugin: it evicts pods whose required pod anti-affinity
// is broken by another pod in the same topology domain. Terms are the scheduler's
// (k8s.io/kube-scheduler/framework AffinityTerm). See README.md.
//
// +k8s:deepcopy-gen=package
package removepodsviolatinginterpodantiaffinity
