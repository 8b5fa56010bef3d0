// Command out-of-tree is a custom descheduler: Accord's in-tree plugins plus one of its own,
// EvictMarked, registered with app.WithPlugin together with its args type. Enable it in a policy:
//
//	profiles:
//	- name: marked
//	  pluginConfig:
//	  - name: EvictMarked
//	    args: {labelKey: accord.dev/evict}
//	  plugins:
//	    deschedule: {enabled: [EvictMarked]}
//
// and mark a pod: kubectl label pod NAME accord.dev/evict=true
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/accord-sched/accord/cmd/examples/out-of-tree/evictmarked"
	"github.com/accord-sched/accord/pkg/descheduler/app"
)

func main() {
	cmd := app.NewDeschedulerCommand(
		app.WithPlugin(evictmarked.Name, evictmarked.New, &evictmarked.EvictMarkedArgs{}),
	)
	cmd.Use = "out-of-tree-descheduler"
	os.Exit(cli.Run(cmd))
}
