// Package monitoring checks manifests/monitoring against the binaries it watches: accord-scheduler,
// accord-descheduler and accord-metrics-reporter, built as users build them and run with the
// configuration the chart renders (leader election on), on a real control plane, driven through a
// NodeCRDResourceFit eviction with a reservation and an unschedulable pod. Every metric and label an
// alert rule or a dashboard panel reads must be in some binary's /metrics.
package monitoring

import (
	"testing"

	"github.com/accord-sched/accord/test/harness"
)

var env *harness.Env

func TestMain(m *testing.M) { harness.Main(m, &env, harness.Options{}) }
