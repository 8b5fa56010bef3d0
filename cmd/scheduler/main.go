// Command accord-scheduler is kube-scheduler with Accord's NodeCRDResourceFit and LoadAware
// plugins. It takes every kube-scheduler flag; give it a KubeSchedulerConfiguration with --config
// (see manifests/scheduler/).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	// --logging-format=json and the --log-json-* flags, as kube-scheduler's own main.
	_ "k8s.io/component-base/logs/json/register"

	"github.com/accord-sched/accord/pkg/scheduler/server"
)

func main() {
	os.Exit(cli.Run(server.NewSchedulerCommand()))
}
