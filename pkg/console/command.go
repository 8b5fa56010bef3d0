package console

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/term"
	"k8s.io/component-base/version"
	"k8s.io/component-base/version/verflag"
	"k8s.io/klog/v2"

	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
)

// DefaultBindAddress is where accord-console serves by default (the Service's target port).
const DefaultBindAddress = "0.0.0.0:8080"

// CommandOptions are accord-console's command line.
type CommandOptions struct {
	Kubeconfig          string
	BindAddress         string
	PolicyConfigFile    string
	SchedulerConfigFile string
	// Playground serves the write controls (ClientControls through --kubeconfig): only for a
	// playground, never in a cluster (the shipped RBAC is read-only and would refuse them anyway).
	Playground  bool
	Logs        *logsapi.LoggingConfiguration
	FeatureGate featuregate.MutableFeatureGate
}

// NewCommandOptions returns the defaults.
func NewCommandOptions() *CommandOptions {
	fg := featuregate.NewFeatureGate()
	if err := logsapi.AddFeatureGates(fg); err != nil {
		panic(err) // only on a programming error: the gates are static
	}
	return &CommandOptions{BindAddress: DefaultBindAddress, Logs: logsapi.NewLoggingConfiguration(), FeatureGate: fg}
}

// Flags returns the named flag sets.
func (o *CommandOptions) Flags() cliflag.NamedFlagSets {
	var fss cliflag.NamedFlagSets
	fs := fss.FlagSet("console")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Kubeconfig file; empty uses the in-cluster configuration.")
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "host:port the page, /healthz and /readyz are served on.")
	fs.StringVar(&o.PolicyConfigFile, "policy-config-file", o.PolicyConfigFile, "DeschedulerPolicy (descheduler/v1alpha2) the explain view runs in dry-run mode, and whose LowNodeLoad highThresholds the node grid shows; empty turns explain off.")
	fs.StringVar(&o.SchedulerConfigFile, "scheduler-config-file", o.SchedulerConfigFile, "KubeSchedulerConfiguration accord-scheduler runs, for explain's SchedulerSimulation.")
	fs.BoolVar(&o.Playground, "playground", o.Playground, "Serve the playground's write controls (toggle a node's CR resource, set a node's simulated load). Only for a playground.")
	logsapi.AddFlags(o.Logs, fss.FlagSet("logs"))
	o.FeatureGate.AddFlag(fss.FlagSet("feature gates"))
	verflag.AddFlags(fss.FlagSet("global"))
	return fss
}

// Validate checks the options.
func (o *CommandOptions) Validate() error {
	if o.BindAddress == "" {
		return errors.New("--bind-address: required")
	}
	if o.SchedulerConfigFile != "" && o.PolicyConfigFile == "" {
		return errors.New("--scheduler-config-file: needs --policy-config-file (it is for explain)")
	}
	return nil
}

// NewCommand returns the accord-console command.
func NewCommand() *cobra.Command {
	o := NewCommandOptions()
	cmd := &cobra.Command{
		Use:   "accord-console",
		Short: "A live web console of an Accord cluster",
		Long: `accord-console serves one page showing the cluster live: the nodes with their ClusterScopedResource
and NodeMetric (against the LoadAware thresholds), pending pods with the scheduler's reason, the
descheduler's evictions and where the replacements landed, and explain (a dry-run descheduling cycle).
It only reads the cluster, unless --playground is given.`,
		SilenceUsage: true,
		Args:         cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			verflag.PrintAndExitIfRequested()
			if err := logsapi.ValidateAndApply(o.Logs, o.FeatureGate); err != nil {
				return err
			}
			cliflag.PrintFlags(cmd.Flags())
			if err := o.Validate(); err != nil {
				return err
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			// SIGTERM (a pod's shutdown) and Ctrl-C stop the server cleanly.
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
			defer stop()
			return o.Run(ctx)
		},
	}
	fss := o.Flags()
	for _, f := range fss.FlagSets {
		cmd.Flags().AddFlagSet(f)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, fss, cols)
	return cmd
}

// Run serves the console until ctx ends.
func (o *CommandOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx = klog.NewContext(ctx, klog.Background())
	klog.FromContext(ctx).Info("Starting accord-console", "version", version.Get().String())
	restCfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		return err
	}
	opts := Options{RestConfig: restCfg, BindAddress: o.BindAddress, PolicyConfigFile: o.PolicyConfigFile, SchedulerConfigFile: o.SchedulerConfigFile}
	if o.Playground {
		if opts.Controls, err = NewClientControls(restCfg); err != nil {
			return err
		}
	}
	s, err := New(ctx, opts)
	if err != nil {
		return err
	}
	return s.Serve(ctx)
}

// NewClientControls returns ClientControls writing with restCfg.
func NewClientControls(restCfg *rest.Config) (ClientControls, error) {
	restCfg = rest.AddUserAgent(rest.CopyConfig(restCfg), "accord-console")
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return ClientControls{}, err
	}
	crCfg := rest.CopyConfig(restCfg)
	crCfg.ContentType, crCfg.AcceptContentTypes = "application/json", "application/json"
	accord, err := accordclient.NewForConfig(crCfg)
	if err != nil {
		return ClientControls{}, err
	}
	return ClientControls{Kube: kube, Accord: accord}, nil
}
