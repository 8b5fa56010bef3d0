// Package nodecrdresourcefit is the descheduler's NodeCRDResourceFit plugin, the counterpart of the
// scheduler plugin of the same name: it evicts the pods the scheduler's Filter would no longer place
// on their node, because the node's ClusterScopedResource no longer enables a resource they request
// or (with missingCRPolicy Reject) because the node has no ClusterScopedResource. The verdict is
// computed with the same pkg/constraints functions the scheduler's Filter calls.
//
// The plugin is a DeschedulePlugin for periodic cycles and a framework.Controller for the
// event-triggered mode, where a change of one ClusterScopedResource re-checks only the pods of its
// node. See README.md.
//
// +k8s:deepcopy-gen=package
package nodecrdresourcefit
