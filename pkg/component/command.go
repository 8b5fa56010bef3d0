package component

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiserveroptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	cliflag "k8s.io/component-base/cli/flag"
	componentbaseconfig "k8s.io/component-base/config"
	componentbaseoptions "k8s.io/component-base/config/options"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/term"
	"k8s.io/component-base/version"
	"k8s.io/component-base/version/verflag"
	"k8s.io/klog/v2"
)

// Base is the part of the command line every Accord component (accord-descheduler,
// accord-metrics-reporter, accord-console) shares: the logging flags, --feature-gates and --version.
type Base struct {
	Logs        *logsapi.LoggingConfiguration
	FeatureGate featuregate.MutableFeatureGate
}

// NewBase returns the defaults: component-base's logging gates and the component's own gates (nil:
// none) behind --feature-gates.
func NewBase(gates map[featuregate.Feature]featuregate.FeatureSpec) Base {
	fg := featuregate.NewFeatureGate()
	if err := logsapi.AddFeatureGates(fg); err != nil {
		panic(err) // only on a programming error: the gates are static
	}
	if gates != nil {
		if err := fg.Add(gates); err != nil {
			panic(err) // as above
		}
	}
	return Base{Logs: logsapi.NewLoggingConfiguration(), FeatureGate: fg}
}

// AddFlags adds the flag sets "logs", "feature gates" and "global" (--version) to fss, after the
// component's own.
func (b Base) AddFlags(fss *cliflag.NamedFlagSets) {
	logsapi.AddFlags(b.Logs, fss.FlagSet("logs"))
	b.FeatureGate.AddFlag(fss.FlagSet("feature gates"))
	verflag.AddFlags(fss.FlagSet("global"))
}

// ServingOptions is the command line of a component that serves /healthz, /readyz and /metrics on a
// secure port, as kube-scheduler does, and may run as one of several replicas behind a leader Lease.
type ServingOptions struct {
	LeaderElection componentbaseconfig.LeaderElectionConfiguration
	SecureServing  *apiserveroptions.SecureServingOptions
	// Auth authenticates and authorises the callers of the secure port, as kube-scheduler's.
	Auth Auth
}

// Lease is a component's default leader election (--leader-elect, --leader-elect-lease-duration,
// --leader-elect-renew-deadline, --leader-elect-retry-period).
type Lease struct {
	Elect                                bool
	Duration, RenewDeadline, RetryPeriod time.Duration
}

// NewServingOptions returns the defaults of the component name: its secure port (a self-signed
// certificate kept in memory unless one is given) and its leader election (lease), on a Lease
// object named name in kube-system.
func NewServingOptions(name string, port int, lease Lease) ServingOptions {
	ss := apiserveroptions.NewSecureServingOptions()
	ss.BindPort = port
	ss.ServerCert.PairName = name
	ss.ServerCert.CertDirectory = "" // self-signed certificates are kept in memory
	le := componentbaseconfig.LeaderElectionConfiguration{
		LeaderElect:       lease.Elect,
		LeaseDuration:     metav1.Duration{Duration: lease.Duration},
		RenewDeadline:     metav1.Duration{Duration: lease.RenewDeadline},
		RetryPeriod:       metav1.Duration{Duration: lease.RetryPeriod},
		ResourceLock:      resourcelock.LeasesResourceLock,
		ResourceName:      name,
		ResourceNamespace: "kube-system",
	}
	return ServingOptions{LeaderElection: le, SecureServing: ss, Auth: NewAuth()}
}

// AddFlags adds the flag sets "leader election", "secure serving", "authentication" and
// "authorization" to fss (kube-scheduler's flag names).
func (o *ServingOptions) AddFlags(fss *cliflag.NamedFlagSets) {
	componentbaseoptions.BindLeaderElectionFlags(&o.LeaderElection, fss.FlagSet("leader election"))
	o.SecureServing.AddFlags(fss.FlagSet("secure serving"))
	o.Auth.AddFlags(fss.FlagSet("authentication"), fss.FlagSet("authorization"))
}

// Validate checks the secure serving and authentication flags.
func (o *ServingOptions) Validate() []error {
	return append(o.SecureServing.Validate(), o.Auth.Validate()...)
}

// Run serves s on the secure port (unless --secure-port is 0 and no listener is set), takes the
// Lease s.Name when leader election is on (then /healthz fails once renewals stop), and runs work
// until ctx ends or, leading, until leadership is lost. The server has stopped when Run returns;
// its error is work's.
func (o *ServingOptions) Run(ctx context.Context, restCfg *rest.Config, s Serving, work func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if o.LeaderElection.LeaderElect {
		s.Leader = leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
	}
	if o.SecureServing.BindPort != 0 || o.SecureServing.Listener != nil {
		stopped, err := Serve(ctx, o.SecureServing, o.Auth, s)
		if err != nil {
			return err
		}
		defer func() { cancel(); <-stopped }()
	}
	if !o.LeaderElection.LeaderElect {
		return work(ctx)
	}
	return RunLeading(ctx, restCfg, o.LeaderElection, s.Name, s.Leader, s.LeaderStatus, work)
}

// Command is what makes a component's command (NewCommand).
type Command struct {
	Use, Short, Long string
	// Base is the component's logging and feature gate options; Flags holds every flag set of the
	// component, Base's included (Base.AddFlags).
	Base  Base
	Flags cliflag.NamedFlagSets
	// Validate checks the flags once they are parsed; Run runs the component until ctx ends.
	Validate func() error
	Run      func(ctx context.Context) error
	// Subcommands are added to the command (e.g. `version`).
	Subcommands []*cobra.Command
}

// NewCommand returns the command c describes. It takes no arguments; --version prints the version
// and exits; otherwise it applies the logging flags, logs every flag, validates them and runs c.Run
// with a context that ends on SIGTERM (a pod's shutdown) or Ctrl-C, so the component stops cleanly:
// a Lease released, the last traces flushed, the servers stopped.
func NewCommand(c Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:          c.Use,
		Short:        c.Short,
		Long:         c.Long,
		SilenceUsage: true,
		Args:         cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			verflag.PrintAndExitIfRequested()
			if err := logsapi.ValidateAndApply(c.Base.Logs, c.Base.FeatureGate); err != nil {
				return err
			}
			cliflag.PrintFlags(cmd.Flags())
			if err := c.Validate(); err != nil {
				return err
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
			defer stop()
			return c.Run(ctx)
		},
	}
	for _, f := range c.Flags.FlagSets {
		cmd.Flags().AddFlagSet(f)
	}
	cmd.AddCommand(c.Subcommands...)
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, c.Flags, cols)
	return cmd
}

// RestConfig is the client configuration kubeconfig names (empty: the in-cluster configuration),
// with qps and burst (0: client-go's defaults).
func RestConfig(kubeconfig string, qps float32, burst int) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("client configuration: %w", err)
	}
	cfg.QPS, cfg.Burst = qps, burst
	return cfg, nil
}

// Starting returns ctx (Background when nil) and its logger, having logged that the component name
// starts, with its version.
func Starting(ctx context.Context, name string) (context.Context, klog.Logger) {
	if ctx == nil {
		ctx = context.Background()
	}
	logger := klog.FromContext(ctx)
	logger.Info("Starting "+name, "version", version.Get().String())
	return ctx, logger
}
