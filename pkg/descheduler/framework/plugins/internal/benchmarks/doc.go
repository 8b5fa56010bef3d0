// Package benchmarks measures one descheduling cycle of each in-tree plugin, and of the whole
// standard profile, over 5000 nodes and 100 000 pods held in informer caches (go test -bench).
package benchmarks
