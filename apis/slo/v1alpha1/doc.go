// Package v1alpha1 holds the slo.accord.dev API: NodeMetric, the usage a node really has as reported
// by an agent. accord-scheduler's LoadAware plugin filters and scores on it, and accord-descheduler's
// LowNodeLoad plugin drains nodes that are over their thresholds, through the same predicates in
// pkg/constraints.
//
// +k8s:deepcopy-gen=package
// +groupName=slo.accord.dev
package v1alpha1
