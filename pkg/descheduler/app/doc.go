// Package app is the accord-descheduler command: its flags (drop-in compatible with the upstream
// kubernetes-sigs/descheduler), serving (/healthz, /readyz, /metrics), leader election, tracing and
// the explain and version subcommands. WithPlugin adds out-of-tree plugins to it, WithSchedulerPlugin
// out-of-tree scheduler plugins to its SchedulerSimulation. The descheduler
// itself, without serving or leader election, is pkg/descheduler/runner; explain's logic is
// pkg/descheduler/explain.
package app
