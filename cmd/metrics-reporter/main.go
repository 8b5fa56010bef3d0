// Command accord-metrics-reporter writes every node's measured usage into its NodeMetric.
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/accord-sched/accord/pkg/metricsreporter/app"
)

func main() {
	os.Exit(cli.Run(app.NewCommand()))
}
