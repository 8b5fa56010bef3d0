// Package consistency holds the property tests that the descheduler's verdicts equal the scheduler
// plugins' Filter verdicts for random nodes, ClusterScopedResources, NodeMetrics and pods.
package consistency
