// Package evictmarked is an example out-of-tree descheduling plugin: it evicts the pods an operator
// marked for eviction with a label (accord.dev/evict=true by default), node by node, through the
// profile's evictor so the policy's limits, PDBs, dry-run and DefaultEvictor still apply.
package evictmarked
