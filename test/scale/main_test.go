package scale

import (
	"flag"
	"os"
	"strconv"
	"testing"

	"github.com/accord-sched/accord/test/harness"
)

var scaleFlag = flag.Bool("scale", false, "run at cluster scale (as ACCORD_SCALE=1): sizes from ACCORD_SCALE_NODES, ACCORD_SCALE_PODS, ACCORD_SCALE_BOUND_PODS")

func TestMain(m *testing.M) { harness.MainCheckingLeaks(m) }

// size is one population and workload.
type size struct {
	Nodes     int // nodes, each with a ClusterScopedResource and a NodeMetric
	Pods      int // pending pods each scheduler profile binds
	BoundPods int // pods bound to the nodes for the descheduler
	// Uncapped also runs a descheduler cycle without eviction limits (every candidate simulated).
	Uncapped bool
	// Only is the one half to run, "scheduler" or "descheduler" (ACCORD_SCALE_ONLY); empty: both.
	Only string
	// Populations are the populations TestScale builds, each on its own control plane, in order
	// (ACCORD_SCALE_POPULATIONS, default heterogeneous,uniform).
	Populations []population
	// Rounds, Baseline and Reservations are the scheduler half's interleaved rounds, baseline
	// revision and reservations (see schedulerKnobs).
	Rounds       int
	Baseline     string
	Reservations reservationLoad
}

// runs reports whether the half (scheduler or descheduler) runs at this size.
func (s size) runs(half string) bool { return s.Only == "" || s.Only == half }

// smoke is the size `make test` runs: small enough for a loaded 2-core machine.
var smoke = size{Nodes: 100, Pods: 300, BoundPods: 1000, Uncapped: true, Populations: []population{heterogeneous, uniform},
	Rounds: 1, Reservations: reservationLoad{Finished: 30, Live: 5}}

// scaleSize is the size `make bench-scale` runs; issue #10's figures are at the defaults.
func scaleSize(t *testing.T) (size, bool) {
	t.Helper()
	if !*scaleFlag && os.Getenv("ACCORD_SCALE") == "" {
		return smoke, false
	}
	s := size{Nodes: envInt(t, "ACCORD_SCALE_NODES", 5000), Pods: envInt(t, "ACCORD_SCALE_PODS", 10000),
		BoundPods: envInt(t, "ACCORD_SCALE_BOUND_PODS", 100000)}
	if v := os.Getenv("ACCORD_SCALE_UNCAPPED"); v != "" {
		var err error
		if s.Uncapped, err = strconv.ParseBool(v); err != nil {
			t.Fatalf("ACCORD_SCALE_UNCAPPED=%q: %v", v, err)
		}
	}
	switch s.Only = os.Getenv("ACCORD_SCALE_ONLY"); s.Only {
	case "", "scheduler", "descheduler":
	default:
		t.Fatalf("ACCORD_SCALE_ONLY=%q: want scheduler or descheduler (empty: both)", s.Only)
	}
	s.Populations = smoke.Populations
	if v := os.Getenv("ACCORD_SCALE_POPULATIONS"); v != "" {
		var err error
		if s.Populations, err = parsePopulations(v); err != nil {
			t.Fatalf("ACCORD_SCALE_POPULATIONS=%q: %v", v, err)
		}
	}
	schedulerKnobs(t, &s)
	return s, true
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}
