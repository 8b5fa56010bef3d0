// Command out-of-tree is a custom descheduler: Accord's in-tree plugins plus one of its own,
// PodLifeTime, registered with app.WithPlugin together with its args type. Enable it in a policy:
//
//	profiles:
//	- name: lifetime
//	  pluginConfig:
//	  - name: PodLifeTime
//	    args: {maxPodLifeTimeSeconds: 86400}
//	  plugins:
//	    deschedule: {enabled: [PodLifeTime]}
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/accord-sched/accord/cmd/examples/out-of-tree/podlifetime"
	"github.com/accord-sched/accord/pkg/descheduler/app"
)

func main() {
	cmd := app.NewDeschedulerCommand(
		app.WithPlugin(podlifetime.Name, podlifetime.New, &podlifetime.PodLifeTimeArgs{}),
	)
	cmd.Use = "out-of-tree-descheduler"
	os.Exit(cli.Run(cmd))
}
