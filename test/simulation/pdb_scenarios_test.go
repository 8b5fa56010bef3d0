package simulation

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
)

func traceHas(r Result, s string) bool {
	for _, line := range r.Trace {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

func ptrIntOrString(v intstr.IntOrString) *intstr.IntOrString { return &v }

// The scenarios of PodDisruptionBudgets and of the reservation placed on a node that stops fitting
// (TestScenarios runs them with the others).
func init() {
	scenarios = append(scenarios, scenario{
		// A budget that allows no disruption (minAvailable 100%): every eviction of node0's
		// violators is refused 429 by the apiserver, none goes.
		name: "pdb-refuses-every-eviction-at-min-available-100-percent",
		cfg: Config{Zone: "Europe/Berlin", Start: berlin, Nodes: 3, MaxMigrating: 3,
			Workloads: []Workload{{Replicas: 4, GPU: true, Namespace: "ns-a", PDB: &PDB{MinAvailable: ptrIntOrString(intstr.FromString("100%"))}}}},
		actions: []Action{setGPU(0, false), advance(20 * time.Minute)},
		check: func(t *testing.T, r Result, s summary) {
			if s.evicted != 0 || !traceHas(r, "pdb:") {
				t.Errorf("want every eviction refused by the budget (pdb: in the trace) and none accepted: %+v", s)
			}
		},
	}, scenario{
		// maxUnavailable 1 over 4 replicas, the descheduler's caps and budget wider (3): node0's
		// violators go one at a time, each once the previous one's replacement is Ready (invariant
		// pdb at every accepted eviction).
		name: "pdb-max-unavailable-one-at-a-time",
		cfg: Config{Zone: "Europe/Berlin", Start: berlin, Nodes: 3, MaxMigrating: 3, PerNode: 3,
			Workloads: []Workload{{Replicas: 6, GPU: true, Namespace: "ns-a", PDB: &PDB{MaxUnavailable: ptrIntOrString(intstr.FromInt32(1))}}}},
		actions: []Action{setGPU(0, false), advance(30 * time.Minute)},
		check: func(t *testing.T, r Result, s summary) {
			if s.evicted < 2 || !traceHas(r, "pdb:") {
				t.Errorf("want node0's violators evicted, some refused by the budget first: %+v", s)
			}
		},
	}, scenario{
		// DefaultEvictor's PodsWithoutPDB protection: w1, which no budget selects, is never evicted
		// (invariant pods-without-pdb); w0, which has one, is.
		name: "pods-without-pdb-protected",
		cfg: Config{Zone: "Europe/Berlin", Start: berlin, Nodes: 3, MaxMigrating: 3, PodsWithoutPDB: true,
			Workloads: []Workload{{Replicas: 4, GPU: true, Namespace: "ns-a", PDB: &PDB{MaxUnavailable: ptrIntOrString(intstr.FromString("50%"))}},
				{Replicas: 4, GPU: true, Namespace: "ns-b"}}},
		actions: []Action{setGPU(0, false), advance(30 * time.Minute)},
		check: func(t *testing.T, r Result, s summary) {
			if s.evicted == 0 {
				t.Errorf("w0 (with a budget) not evicted: %+v", s)
			}
		},
	}, scenario{
		// A reservation whose node stops fitting before the eviction: node0's violators get their
		// reservations on node1, the only other GPU node, which stops offering GPUs 150 ms later,
		// before the plugin's next poll. The placer fails them (NodeNoLongerFits) and nothing is
		// evicted into them (invariant reservation-first, here also requiring the reservation's
		// node to still fit as the request arrives).
		name: "reservation-first-node-stops-fitting",
		cfg: Config{Zone: "Europe/Berlin", Start: berlin, ReservationFirst: true, ReservationNodeFits: true, Nodes: 3,
			Workloads: []Workload{{Replicas: 4, GPU: true, Namespace: "ns-a"}, {Replicas: 3, GPU: true, Namespace: "ns-b"}}},
		actions: []Action{setGPU(0, false), advance(150 * time.Millisecond), setGPU(1, false), advance(20 * time.Minute)},
	})
}
