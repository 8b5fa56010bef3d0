// Package simulation holds the seeded, invariant-checking simulation of accord-descheduler's runtime
// (issue #35): the real pkg/descheduler/framework/runtime with its evictors, caps, workload budgets,
// eviction windows, soft and background evictions, event-triggered controllers, ReservationFirst and
// PodMigration, and the real scheduler framework of accord-scheduler (pkg/descheduler/simulator)
// placing the pods, with its reservation placer and collector (pkg/scheduler/plugins/reservation), driven by
// random action sequences over a fake clock (testing/synctest) against a fake clientset, with the
// README's Guarantees checked as invariants after every step. Generation and shrinking are
// pgregory.net/rapid's. See README.md in this directory for how to run more seeds and reproduce one.
package simulation
