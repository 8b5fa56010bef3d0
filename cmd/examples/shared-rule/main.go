// Command shared-rule is both of Accord's binaries with one more rule, MaxLabeledPerNode (package
// maxlabeled), which both enforce: `shared-rule scheduler` is accord-scheduler (every
// kube-scheduler flag) with the rule's Filter plugin, `shared-rule descheduler` is
// accord-descheduler with the rule's Deschedule plugin, and with the rule's Filter plugin registered
// with its SchedulerSimulation (deschedapp.WithSchedulerPlugin, the same name and factory). Run the
// descheduler with --scheduler-config-file naming the scheduler's configuration: its
// MaxLabeledPerNode args follow the scheduler's, and SchedulerSimulation (on by default) simulates
// the scheduler's profiles, the rule's Filter included, so a pod is evicted only when the scheduler
// would place its replacement on another node. This is the example of the "A rule both binaries
// enforce" checklist in pkg/descheduler/README.md.
package main

import (
	"os"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	schedapp "k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/accord-sched/accord/cmd/examples/shared-rule/maxlabeled"
	"github.com/accord-sched/accord/cmd/examples/shared-rule/maxlabeled/descheduler"
	"github.com/accord-sched/accord/cmd/examples/shared-rule/maxlabeled/scheduler"
	deschedapp "github.com/accord-sched/accord/pkg/descheduler/app"
	"github.com/accord-sched/accord/pkg/scheduler/server"
)

// deschedulerOptions register the rule with accord-descheduler: its Deschedule plugin and args, and
// its scheduler plugin with SchedulerSimulation (the name and factory the scheduler gets).
var deschedulerOptions = []deschedapp.Option{
	deschedapp.WithPlugin(maxlabeled.Name, descheduler.New, &descheduler.MaxLabeledPerNodeArgs{}),
	deschedapp.WithSchedulerPlugin(maxlabeled.Name, scheduler.New),
}

func main() {
	sched := server.NewSchedulerCommand(schedapp.WithPlugin(maxlabeled.Name, scheduler.New))
	sched.Use = "scheduler"
	desched := deschedapp.NewDeschedulerCommand(deschedulerOptions...)
	desched.Use = "descheduler"
	root := &cobra.Command{Use: "shared-rule", Short: "accord-scheduler and accord-descheduler with the MaxLabeledPerNode rule"}
	root.AddCommand(sched, desched)
	os.Exit(cli.Run(root))
}
