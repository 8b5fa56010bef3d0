// Command out-of-tree-scheduler is accord-scheduler with one more plugin, PreferLabeled, built the
// way pkg/scheduler/README.md ("Build your own scheduler") shows: Accord's plugins stay registered
// and kube-scheduler's app.WithPlugin adds yours. It takes every kube-scheduler flag.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/accord-sched/accord/cmd/examples/out-of-tree-scheduler/preferlabeled"
	"github.com/accord-sched/accord/pkg/scheduler/server"
)

func main() {
	cmd := server.NewSchedulerCommand(
		app.WithPlugin(preferlabeled.Name, preferlabeled.New),
	)
	cmd.Use = "out-of-tree-scheduler"
	os.Exit(cli.Run(cmd))
}
