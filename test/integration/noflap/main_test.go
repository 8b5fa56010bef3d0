// Package noflap proves the no-flap guarantee end to end: accord-scheduler
// (pkg/scheduler/server.RunInProcess) and accord-descheduler (runner.Run, a 400 ms interval) run
// in-process against a real control plane (test/harness) for at least ten descheduling cycles, in
// scenarios where a descheduler without the guarantee evicts in a loop. With SchedulerSimulation
// (on by default) each real imbalance costs at most one eviction, no owner is evicted twice from
// the same node, and every replacement lands on the node the simulation predicted; with the plugin
// disabled the same scenario loops, in the same test.
//
// All scenarios live in this one package: each test binary links kube-apiserver, etcd,
// kube-scheduler and the descheduler.
package noflap

import (
	"testing"
	"time"

	"github.com/accord-sched/accord/test/harness"
	"github.com/accord-sched/accord/test/harness/inprocess"
)

var env *harness.Env

func TestMain(m *testing.M) { harness.Main(m, &env, harness.Options{}) }

const (
	nsLabel       = "test.accord.dev/ns"
	schedulerName = "accord-scheduler"
	// interval between descheduling cycles, and how many cycles each run lasts at least.
	interval  = 400 * time.Millisecond
	minCycles = 12
)

// schedulerConfig is accord-scheduler's configuration for these tests: the accord-scheduler
// profile of manifests/scheduler/config.yaml with NodeCRDResourceFit ignoring nodes without a
// ClusterScopedResource (the scenarios are about placement, not CRs) and quick retries. Both the
// scheduler and the descheduler's simulation read this same file.
const schedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {qps: 200, burst: 400}
leaderElection: {leaderElect: false}
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 2
profiles:
- schedulerName: accord-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: NodeCRDResourceFit
        weight: 5
  pluginConfig:
  - name: NodeCRDResourceFit
    args:
      missingCRPolicy: Ignore
`

// startScheduler runs accord-scheduler in-process for the rest of the test and returns the path of
// its configuration.
func startScheduler(t *testing.T) string {
	t.Helper()
	cfg := inprocess.WriteFile(t, "scheduler-config.yaml", schedulerConfig)
	inprocess.Scheduler(t, env, cfg)
	return cfg
}
