// Package constraints is Accord's single source of truth for "does this pod belong on this node".
//
// The scheduler plugins (NodeCRDResourceFit, LoadAware) and the descheduler call the same functions
// here, so a pod the scheduler places is never one the descheduler considers misplaced, and the
// other way round.
//
// Everything in this package is a pure function over core/v1 objects and Accord's API types: no
// informers, no clients, no scheduler framework types, no package-level state. The functions that
// run once per (pod, node) pair do not allocate; the benchmarks in this package check that.
package constraints
