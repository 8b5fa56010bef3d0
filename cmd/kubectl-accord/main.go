// Command kubectl-accord is the kubectl plugin `kubectl accord` (pkg/kubectlaccord).
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/accord-sched/accord/pkg/kubectlaccord"
)

func main() {
	os.Exit(kubectlaccord.Main(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Args[1:]))
}
