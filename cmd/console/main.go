// Command accord-console serves a live web console of an Accord cluster (read-only; with
// --playground, the playground's write controls too).
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/accord-sched/accord/pkg/console"
)

func main() {
	os.Exit(cli.Run(console.NewCommand()))
}
