// Command playground runs a local Accord cluster in one process (make run): a real etcd and
// kube-apiserver, the workload controllers, simulated nodes, Accord's CRDs and sample objects.
package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/pkg/demo/playground"
)

func main() {
	var opts playground.Options
	flag.StringVar(&opts.Dir, "dir", ".playground", "directory for the kubeconfig and generated configs")
	flag.StringVar(&opts.ConsoleAddress, "console-address", playground.DefaultConsoleAddress, "host:port accord-console serves on (port 0 picks a free one)")
	flag.BoolVar(&opts.WithoutConsole, "without-console", false, "do not start accord-console")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := playground.Run(ctx, opts); err != nil {
		klog.ErrorS(err, "Playground failed")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}
