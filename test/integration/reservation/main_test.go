// Package reservation tests, on a real control plane (test/harness), what holding a predicted place
// needs: the node simulator's honest termination (a deleted pod stays Terminating for its grace
// period, and a StatefulSet recreates it only then), Reservations placed and honoured by
// accord-scheduler (run in-process, pkg/scheduler/server.RunInProcess) with the Reservation plugin,
// and accord-descheduler's ReservationFirst evict plugin (runner.Run in-process) against its direct
// counterpart, EvictionAPI.
package reservation

import (
	"testing"

	"github.com/accord-sched/accord/test/harness"
	"github.com/accord-sched/accord/test/harness/inprocess"
)

var env *harness.Env

func TestMain(m *testing.M) { harness.Main(m, &env, harness.Options{}) }

const (
	nsLabel       = "test.accord.dev/ns"
	schedulerName = "accord-scheduler"
)

// schedulerConfig is the accord-scheduler profile of manifests/scheduler/config.yaml with the
// Reservation plugin enabled, NodeCRDResourceFit ignoring nodes without a ClusterScopedResource (the
// tests are about room, not CRs) and quick retries.
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
      - name: Reservation
  pluginConfig:
  - name: NodeCRDResourceFit
    args:
      missingCRPolicy: Ignore
`

// startScheduler runs accord-scheduler in-process for the rest of the test.
func startScheduler(t *testing.T) {
	t.Helper()
	inprocess.Scheduler(t, env, inprocess.WriteFile(t, "scheduler-config.yaml", schedulerConfig))
}
