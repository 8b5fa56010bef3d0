// Package schedulersimulation is the SchedulerSimulation plugin, a preEvictionFilter that makes the
// descheduler's eviction loop impossible by construction: before a pod is evicted it asks
// kube-scheduler's own framework, built from the KubeSchedulerConfiguration accord-scheduler runs
// (package simulator), where the replacement would go, and admits the eviction only if the pod is
// feasible somewhere, the predicted node is not the node it is on, and no registered NodeVerdicter
// (the plugin that nominated the pod) would flag the pod on the predicted node. Admitted evictions
// move the pod, in the simulation's snapshot, to its predicted node for the rest of the cycle, so two
// evictions never count on the same free room. A flap memory watches replacements: when one lands
// back on the node its predecessor was evicted from within the window, further evictions of that
// owner from that node back off exponentially. See README.md.
package schedulersimulation
