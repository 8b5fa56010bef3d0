// Command accord-descheduler runs Accord's descheduler with the in-tree plugins.
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/accord-sched/accord/pkg/descheduler/app"
)

func main() {
	os.Exit(cli.Run(app.NewDeschedulerCommand()))
}
