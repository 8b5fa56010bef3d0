package server

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/informers"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/term"
	"k8s.io/component-base/version/verflag"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/accord-sched/accord/pkg/informertransform"
	"github.com/accord-sched/accord/pkg/scheduler/crcache"
)

// NewSchedulerCommand returns the accord-scheduler command: kube-scheduler's, with every one of its
// flags (--config included) and the same start-up, and Accord's plugins registered beside those opts
// add (kube-scheduler's app.WithPlugin: a binary of your own with your plugins beside Accord's).
//
// It is built here rather than taken from app.NewSchedulerCommand for one reason: between building
// the scheduler and running it, the command has the scheduler's custom-resource informers keep
// typed objects (crcache.Cache.TypeEventInformers), and app.NewSchedulerCommand offers no moment to
// do that. TestCommandFlagsMatchKubeScheduler keeps the flags identical to kube-scheduler's.
func NewSchedulerCommand(opts ...app.Option) *cobra.Command {
	o, a := options.NewOptions(), NewAccordOptions()
	cmd := &cobra.Command{
		Use: "accord-scheduler",
		Long: `accord-scheduler is kube-scheduler with Accord's plugins registered: NodeCRDResourceFit
(a node fits a pod only if its ClusterScopedResource enables every resource the pod requests)
and LoadAware (a node over its NodeMetric thresholds takes no more pods). It takes every
kube-scheduler flag; enable the plugins in a profile of the KubeSchedulerConfiguration given
with --config (manifests/scheduler/config.yaml is one).`,
		// Feature gates must be set before RunE reads them.
		PersistentPreRunE: func(*cobra.Command, []string) error { return o.ComponentGlobalsRegistry.Set() },
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCommand(cmd, o, a, opts...)
		},
		Args: func(cmd *cobra.Command, args []string) error {
			for _, a := range args {
				if a != "" {
					return fmt.Errorf("%q takes no arguments, got %q", cmd.CommandPath(), args)
				}
			}
			return nil
		},
	}
	nfs := o.Flags
	verflag.AddFlags(nfs.FlagSet("global"))
	globalflag.AddGlobalFlags(nfs.FlagSet("global"), cmd.Name(), logs.SkipLoggingConfigurationFlags())
	a.AddFlags(nfs.FlagSet("accord"))
	for _, fs := range nfs.FlagSets {
		cmd.Flags().AddFlagSet(fs)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, *nfs, cols)
	_ = cmd.MarkFlagFilename("config", "yaml", "yml", "json")
	return cmd
}

// runCommand starts the scheduler as kube-scheduler's command does: --version, the logging flags,
// the flags printed to the log, a context cancelled by SIGTERM or SIGINT.
func runCommand(cmd *cobra.Command, o *options.Options, a *AccordOptions, opts ...app.Option) error {
	verflag.PrintAndExitIfRequested()
	fg := o.ComponentGlobalsRegistry.FeatureGateFor(basecompatibility.DefaultKubeComponent)
	if err := logsapi.ValidateAndApply(o.Logs, fg); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
	cliflag.PrintFlags(cmd.Flags())

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-server.SetupSignalHandler()
		cancel()
	}()
	cache := crcache.New()
	// The cache's informers stop with ctx, and Shutdown waits for them: cancel first (Run can also
	// return with ctx alive, on an error).
	defer func() {
		cancel()
		cache.Shutdown()
	}()
	return setupAndRun(ctx, o, a, cache, func() {
		if mfg, ok := fg.(featuregate.MutableFeatureGate); ok {
			mfg.AddMetrics()
		}
		o.ComponentGlobalsRegistry.AddMetrics()
	}, opts...)
}

// setupAndRun builds the scheduler with Accord's plugins (reading cache) and opts' plugins, types
// its custom-resource informers, trims its pods and nodes (trimCachedObjects), calls beforeRun
// (nil: nothing) and runs it until ctx is done.
func setupAndRun(ctx context.Context, o *options.Options, a *AccordOptions, cache *crcache.Cache, beforeRun func(), opts ...app.Option) error {
	all := append(PluginOptions(cache), opts...)
	cc, sched, err := app.Setup(ctx, o, all...)
	if err != nil {
		return err
	}
	placer, err := reservationPlacer(ctx, cc, sched, cache, all)
	if err != nil {
		return err
	}
	if err := cache.TypeEventInformers(cc.DynInformerFactory); err != nil {
		return err
	}
	if err := trimCachedObjects(cc.InformerFactory); err != nil {
		return err
	}
	collector, err := reservationCollector(ctx, cc, cache, a)
	if err != nil {
		return err
	}
	if beforeRun != nil {
		beforeRun()
	}
	if collector != nil {
		// The collector stops with the scheduler.
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		wait := runBeside(ctx, collector.Run, "The reservation collector stopped; finished reservations are not deleted")
		defer func() { cancel(); _ = wait() }()
	}
	if placer == nil {
		return app.Run(ctx, cc, sched)
	}
	// The placer stops with the scheduler.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	placerDone := make(chan error, 1)
	go func() {
		perr := placer.Run(ctx)
		if perr != nil {
			klog.FromContext(ctx).Error(perr, "The reservation placer stopped; Pending reservations are not placed")
		}
		placerDone <- perr
	}()
	err = app.Run(ctx, cc, sched)
	cancel()
	if perr := <-placerDone; perr != nil && err == nil {
		err = perr
	}
	return err
}

// trimCachedObjects gives kube-scheduler's pod informer informertransform.PodSharer's transform (pods of one
// template share their common parts; kube-scheduler's own transform only drops managedFields, which
// PodSharer drops too) and its node informer informertransform.NodeSharer's (kube-scheduler keeps the
// nodes' managedFields; NodeSharer drops them, and nodes with equal capacity or allocatable lists
// share one copy). Both informers exist once Setup has returned, and have not started.
func trimCachedObjects(f informers.SharedInformerFactory) error {
	if err := f.Core().V1().Pods().Informer().SetTransform(informertransform.NewPodSharer().Transform); err != nil {
		return fmt.Errorf("sharing the scheduler's cached pods: %w", err)
	}
	if err := f.Core().V1().Nodes().Informer().SetTransform(informertransform.NewNodeSharer().Transform); err != nil {
		return fmt.Errorf("trimming the scheduler's cached nodes: %w", err)
	}
	return nil
}
