// Package reservationfirst is an evict plugin that holds the predicted place before it evicts: for a
// pod placed by accord-scheduler it creates a Reservation (scheduling.accord.dev/v1alpha1) for the
// node SchedulerSimulation predicted for its replacement, waits (bounded) until accord-scheduler has
// placed it, and only then evicts the pod through the Eviction API. The replacement, an owner of the
// reservation (same name, or same controller), is placed into it. When the reservation cannot be
// placed, is placed on the pod's own node, or is not placed in time, the pod is not evicted and the
// reservation is deleted. Pods of other schedulers (not in args.schedulerNames) are evicted
// directly, as by EvictionAPI.
//
// +k8s:deepcopy-gen=package
package reservationfirst
