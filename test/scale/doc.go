// Package scale measures accord-scheduler and accord-descheduler as a user runs them: the real
// binaries, as subprocesses, against a real control plane (pkg/demo/localcluster) holding a generated
// population of nodes (each with a NodeMetric and, but for control-plane-like ones, a
// ClusterScopedResource) and pods. README.md describes the method, the two populations
// (heterogeneous, the primary one, and uniform) and every figure measured so far.
//
// Its tests print FIGURE lines: TestScale, for each population on its own control plane, the
// scheduling throughput (pods/s from the first to the last bind), CPU time and peak RSS of
// kube-scheduler itself (built from the k8s.io/kubernetes module accord-scheduler uses) with its
// default profile next to accord-scheduler's Accord profile, with their ratios; one
// accord-descheduler cycle (cycle time, candidates simulated per second, peak RSS); and
// kube-scheduler's CPU per pod scheduling pending copies of that cycle's candidates next to the
// descheduler's simulation time per candidate. TestDeschedulerEvent prints the event-triggered
// accord-descheduler's latency from a ClusterScopedResource change on one node to each of its
// violators' eviction (uniform population). `make test` runs them at a small size as smoke tests
// (they assert that every pod was bound, that the cycle ran and simulated candidates, that exactly
// the violators were evicted); `make bench-scale` runs them at cluster scale (ACCORD_SCALE=1, sizes
// from ACCORD_SCALE_NODES, ACCORD_SCALE_PODS, ACCORD_SCALE_BOUND_PODS and ACCORD_SCALE_EVENT_TRIALS;
// ACCORD_SCALE_POPULATIONS the populations; ACCORD_SCALE_ONLY=scheduler or descheduler runs one half
// of TestScale; ACCORD_SCALE_SCHEDULER_BASELINE=<binary> also runs that accord-scheduler build with
// the Accord profile and prints the ratio to it, an A/B of two builds on the same cluster). Speed is
// printed, never asserted. TestSoak (ACCORD_SOAK=1, `make soak`) runs both binaries for many
// descheduling cycles under churn on a control plane with controllers and the node simulator, and
// prints the slope per 100 cycles of what must stay flat (RSS, goroutines, metric series, watches,
// Reservations, PodMigrations, soft-eviction annotations). TestConsoleScale (`make bench-console`)
// opens accord-console's page in Chromium on the heterogeneous population and prints its first
// render, an update's repaint and the bytes pushed per update.
package scale
