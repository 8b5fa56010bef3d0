// Command accord-scheduler is kube-scheduler with Accord's NodeCRDResourceFit and LoadAware
// plugins. It takes every kube-scheduler flag; give it a KubeSchedulerConfiguration with --config
// (see manifests/scheduler/).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	// --logging-format=json and the --log-json-* flags, as kube-scheduler's own main.
	_ "k8s.io/component-base/logs/json/register"
	// client-go's metrics (leader_election_master_status, rest client, workqueues) and
	// kubernetes_build_info in /metrics, as kube-scheduler's own main.
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"

	"github.com/accord-sched/accord/pkg/scheduler/server"
)

func main() {
	os.Exit(cli.Run(server.NewSchedulerCommand()))
}
