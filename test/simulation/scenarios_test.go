package simulation

import (
	"testing"
	"time"
)

// scenario is a run kept as a regression test: a shrunk failing case (or a case written by hand)
// that must keep passing.
type scenario struct {
	name    string
	cfg     Config
	actions []Action
	// check, when set, asserts on what the run did (beyond the invariants).
	check func(t *testing.T, r Result, w summary)
}

type summary struct{ evicted, soft, background int }

func advance(d time.Duration) Action { return Action{Kind: "advance", D: d} }
func setGPU(node int, gpuOK bool) Action {
	return Action{Kind: "cr", I: node, B: gpuOK}
}

// berlin is a Saturday afternoon before the spring DST change: no window edge moves.
var berlin = time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC)

// scenarios are the cases issue #35 found by reading, each as small as the simulation shrinks it.
// Every one fails on a runtime that has the bug and passes on one that has not.
var scenarios = []scenario{{
	// Soft eviction leaks budget: a 4-replica ReplicaSet whose node violates, then fits: once the
	// annotations are cleared and all 4 pods are Ready, the budget must count nothing.
	name: "soft-slot-released-when-annotation-cleared",
	cfg: Config{Zone: "Europe/Berlin", Start: berlin, Soft: true, Nodes: 3,
		Workloads: []Workload{{Replicas: 4, GPU: true, Namespace: "ns-a"}}},
	actions: []Action{setGPU(0, false), advance(20 * time.Minute), setGPU(0, true), advance(20 * time.Minute)},
}, {
	// Soft annotations are cleared while the pod still violates: 4 violators on node0 and the
	// default cap of 2; the controller annotates w0-1 and w1-4 (w0-2 is held by its 2-replica
	// workload's budget); the next cycle stops at the node's cap on w0-2, before it reaches
	// w1-4 again, and must not clear w1-4's annotation.
	name: "soft-annotation-kept-while-violating",
	cfg: Config{Zone: "Europe/Berlin", Start: berlin, Soft: true, Nodes: 3,
		Workloads: []Workload{{Replicas: 2, GPU: true, Namespace: "ns-b"}, {Replicas: 8, GPU: true, Namespace: "ns-a"}}},
	actions: []Action{setGPU(0, false), advance(20 * time.Minute)},
}, {
	// Windows move by an hour on DST days: a daily 01:00-05:00 Europe/Berlin window closes at
	// 05:00 CEST on 2026-03-29 (not 06:00).
	name: "window-at-wall-clock-on-spring-dst-day",
	cfg: Config{Zone: "Europe/Berlin", Start: time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC), Window: []string{"01:00", "05:00"}, Nodes: 3,
		Workloads: []Workload{{Replicas: 4, GPU: true, Namespace: "ns-a"}}},
	actions: []Action{advance(3*time.Hour + 30*time.Minute)},
}, {
	// ... and at 05:00 CET on 2026-10-25 (not 04:00).
	name: "window-at-wall-clock-on-autumn-dst-day",
	cfg: Config{Zone: "Europe/Berlin", Start: time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC), Window: []string{"01:00", "05:00"}, Nodes: 3,
		Workloads: []Workload{{Replicas: 4, GPU: true, Namespace: "ns-a"}}},
	actions: []Action{advance(4 * time.Hour)},
}, {
	// Windows open late in event-only mode: a CR change at 23:00 holds the node's violators until
	// the window opens at 01:00; they are tried within openGrace of 01:00, not after the
	// workqueue's back-off (up to 1000 s).
	name: "event-only-window-opens-on-time",
	cfg: Config{Zone: "Europe/Berlin", Start: time.Date(2026, 3, 27, 22, 0, 0, 0, time.UTC), EventOnly: true, Window: []string{"01:00", "05:00"}, Nodes: 3,
		Workloads: []Workload{{Replicas: 4, GPU: true, Namespace: "ns-a"}}},
	actions: []Action{setGPU(0, false), advance(150 * time.Minute)},
}, {
	// KubeVirt VMs: a virt-launcher pod is its VM's only pod, so by default
	// (evictSingleReplicaWorkloads: false) it is never evicted...
	name: "single-pod-vm-held-by-default",
	cfg: Config{Zone: "Europe/Berlin", Start: berlin, Background: true, Nodes: 3,
		Workloads: []Workload{{Replicas: 1, GPU: true, VM: true, Namespace: "ns-a"}, {Replicas: 1, GPU: true, VM: true, Namespace: "ns-a"}}},
	actions: []Action{setGPU(0, false), setGPU(1, false), advance(30 * time.Minute)},
	check: func(t *testing.T, r Result, s summary) {
		if s.background != 0 || s.evicted != 0 {
			t.Errorf("VMs evicted by default: %+v", s)
		}
	},
}, {
	// ... and with evictSingleReplicaWorkloads: true and EvictionsInBackground (the documented
	// policy for VMs) each is migrated (429 "Eviction triggered evacuation"), once, and its VM is
	// back to one running pod on a node that fits.
	name: "single-pod-vm-migrated-with-policy",
	cfg: Config{Zone: "Europe/Berlin", Start: berlin, Background: true, SingleReplica: true, Nodes: 3,
		Workloads: []Workload{{Replicas: 1, GPU: true, VM: true, Namespace: "ns-a"}, {Replicas: 1, GPU: true, VM: true, Namespace: "ns-a"}}},
	actions: []Action{setGPU(0, false), setGPU(1, false), advance(30 * time.Minute)},
	check: func(t *testing.T, r Result, s summary) {
		if s.background == 0 || s.evicted != 0 {
			t.Errorf("VMs not migrated in background: %+v", s)
		}
	},
}, {
	// Reservation-first: node0's GPU pods violate; each is evicted only once accord-scheduler's
	// placer has placed a reservation for it on another node (invariant reservation-first), and
	// its replacement lands there; then two PodMigrations (ReservationFirst and EvictDirectly) move
	// a pod each, and end.
	name: "reservation-first-evicts-into-placed-reservations",
	cfg: Config{Zone: "Europe/Berlin", Start: berlin, ReservationFirst: true, Nodes: 3,
		Workloads: []Workload{{Replicas: 4, GPU: true, Namespace: "ns-a"}, {Replicas: 3, GPU: true, Namespace: "ns-b"}}},
	actions: []Action{setGPU(0, false), advance(20 * time.Minute), {Kind: "leader", B: true}, setGPU(1, false), advance(20 * time.Minute),
		{Kind: "migrate", I: 1, N: 0}, {Kind: "migrate", I: 0, N: 1, B: true}, advance(20 * time.Minute)},
	check: func(t *testing.T, r Result, s summary) {
		if s.evicted == 0 {
			t.Errorf("nothing evicted: %+v", s)
		}
	},
}, {
	// No pod lost: node1, then node0 stop offering GPUs. The first change moves one of node1's
	// pods to node0; after the second the violators have nowhere to go, so the scheduler
	// simulation holds them (invariant no-pod-lost: an eviction now leaves its replacement
	// Pending)...
	name: "scheduler-simulation-holds-pods-with-nowhere-to-go",
	cfg: Config{Zone: "Europe/Berlin", Start: berlin, SchedulerSimulation: true, Nodes: 3,
		Workloads: []Workload{{Replicas: 4, GPU: true, Namespace: "ns-a"}}},
	actions: []Action{setGPU(1, false), setGPU(0, false), advance(20 * time.Minute)},
}, {
	// ... and so does reservation-first: their reservations fail, and nothing more is evicted.
	name: "reservation-first-holds-pods-with-nowhere-to-go",
	cfg: Config{Zone: "Europe/Berlin", Start: berlin, ReservationFirst: true, Nodes: 3,
		Workloads: []Workload{{Replicas: 4, GPU: true, Namespace: "ns-a"}}},
	actions: []Action{setGPU(1, false), setGPU(0, false), advance(20 * time.Minute)},
}, {
	// A descheduler killed while its evictions wait for their reservations (its deletions of them
	// lost, the reservations left to their TTL) evicts nothing; the next one evicts the violators
	// reservation-first (invariants reservation-first, reservation-ttl, no-pod-lost, in-flight).
	name: "descheduler-killed-while-waiting-for-reservations",
	cfg: Config{Zone: "Europe/Berlin", Start: berlin, ReservationFirst: true, Nodes: 3,
		Workloads: []Workload{{Replicas: 4, GPU: true, Namespace: "ns-a"}, {Replicas: 3, GPU: true, Namespace: "ns-b"}}},
	actions: []Action{setGPU(0, false), {Kind: "restart"}, advance(20 * time.Minute)},
}}

// TestScenarios runs each scenario; its invariants must hold.
func TestScenarios(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			r := Run(t, sc.cfg, sc.actions)
			if r.Err != nil {
				for _, line := range r.Trace {
					t.Log(line)
				}
				t.Fatalf("%v\n(%s)", r.Err, r.Summary)
			}
			if sc.check != nil {
				sc.check(t, r, r.counts)
			}
		})
	}
}
