// Package scale measures accord-scheduler and accord-descheduler as a user runs them: the real
// binaries, as subprocesses, against a real control plane (pkg/localcluster) holding a generated
// population of nodes (each with a ClusterScopedResource and a NodeMetric) and pods.
//
// Its test prints FIGURE lines: scheduling throughput (pods/s from the first to the last bind), CPU
// time and peak RSS of kube-scheduler's default profile next to accord-scheduler's Accord profile,
// with their ratios, and one accord-descheduler cycle (cycle time, candidates simulated per second,
// peak RSS). `make test` runs it at a small size as a smoke test (it asserts that every pod was
// bound and that the cycle ran and simulated candidates); `make bench-scale` runs it at cluster
// scale (ACCORD_SCALE=1, sizes from ACCORD_SCALE_NODES, ACCORD_SCALE_PODS and
// ACCORD_SCALE_BOUND_PODS; ACCORD_SCALE_ONLY=scheduler or descheduler runs one half). Speed is
// printed, never asserted.
package scale
