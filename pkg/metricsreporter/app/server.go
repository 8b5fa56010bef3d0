package app

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiserveroptions "k8s.io/apiserver/pkg/server/options"
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

	"github.com/accord-sched/accord/pkg/component"
	"github.com/accord-sched/accord/pkg/metricsreporter"
)

// DefaultSecurePort serves /healthz, /readyz and /metrics.
const DefaultSecurePort = 10260

// Options are accord-metrics-reporter's command line.
type Options struct {
	ConfigFile string
	Kubeconfig string
	// QPS and Burst limit the client; every NodeMetric write counts. 5000 nodes reported every
	// 60 s need 84 writes/s: the default 100 QPS leaves room for the creates.
	QPS   float32
	Burst int

	LeaderElection componentbaseconfig.LeaderElectionConfiguration
	SecureServing  *apiserveroptions.SecureServingOptions
	// Auth authenticates and authorises the callers of the secure port, as kube-scheduler's.
	Auth        component.Auth
	Logs        *logsapi.LoggingConfiguration
	FeatureGate featuregate.MutableFeatureGate
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	ss := apiserveroptions.NewSecureServingOptions()
	ss.BindPort = DefaultSecurePort
	ss.ServerCert.PairName = "accord-metrics-reporter"
	ss.ServerCert.CertDirectory = ""
	fg := featuregate.NewFeatureGate()
	if err := logsapi.AddFeatureGates(fg); err != nil {
		panic(err) // only on a programming error: the gates are static
	}
	return &Options{
		QPS: 100, Burst: 200,
		LeaderElection: componentbaseconfig.LeaderElectionConfiguration{
			LeaderElect:       true,
			LeaseDuration:     metav1.Duration{Duration: 15 * time.Second},
			RenewDeadline:     metav1.Duration{Duration: 10 * time.Second},
			RetryPeriod:       metav1.Duration{Duration: 2 * time.Second},
			ResourceLock:      resourcelock.LeasesResourceLock,
			ResourceName:      "accord-metrics-reporter",
			ResourceNamespace: "kube-system",
		},
		SecureServing: ss,
		Auth:          component.NewAuth(),
		Logs:          logsapi.NewLoggingConfiguration(),
		FeatureGate:   fg,
	}
}

// Flags returns the named flag sets.
func (o *Options) Flags() cliflag.NamedFlagSets {
	var fss cliflag.NamedFlagSets
	fs := fss.FlagSet("reporter")
	fs.StringVar(&o.ConfigFile, "config", o.ConfigFile, "File with the MetricsReporterConfiguration (metricsreporter/v1alpha1); empty uses the defaults (metrics.k8s.io, mean over 60 s sampled every 15 s).")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Kubeconfig file; empty uses the in-cluster configuration.")
	fs.Float32Var(&o.QPS, "kube-api-qps", o.QPS, "QPS of the connection to the apiserver; bounds the rate of NodeMetric writes.")
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "Burst of the connection to the apiserver.")
	componentbaseoptions.BindLeaderElectionFlags(&o.LeaderElection, fss.FlagSet("leader election"))
	o.SecureServing.AddFlags(fss.FlagSet("secure serving"))
	o.Auth.AddFlags(fss.FlagSet("authentication"), fss.FlagSet("authorization"))
	logsapi.AddFlags(o.Logs, fss.FlagSet("logs"))
	o.FeatureGate.AddFlag(fss.FlagSet("feature gates"))
	verflag.AddFlags(fss.FlagSet("global"))
	return fss
}

// Validate checks the options.
func (o *Options) Validate() error {
	var errs []error
	if o.QPS <= 0 {
		errs = append(errs, errors.New("--kube-api-qps must be positive"))
	}
	if o.Burst < 1 {
		errs = append(errs, errors.New("--kube-api-burst must be at least 1"))
	}
	errs = append(errs, o.SecureServing.Validate()...)
	errs = append(errs, o.Auth.Validate()...)
	return errors.Join(errs...)
}

// NewCommand returns the accord-metrics-reporter command.
func NewCommand() *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:   "accord-metrics-reporter",
		Short: "Writes every node's measured usage into its NodeMetric",
		Long: `accord-metrics-reporter keeps one NodeMetric per node and writes its status (node and pod usage)
every report interval from metrics.k8s.io or Prometheus, aggregated over the interval. LoadAware
(accord-scheduler) and LowNodeLoad (accord-descheduler) decide on these NodeMetrics.`,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			verflag.PrintAndExitIfRequested()
			if err := logsapi.ValidateAndApply(o.Logs, o.FeatureGate); err != nil {
				return err
			}
			cliflag.PrintFlags(cmd.Flags())
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
		Args: cobra.NoArgs,
	}
	fss := o.Flags()
	for _, f := range fss.FlagSets {
		cmd.Flags().AddFlagSet(f)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, fss, cols)
	return cmd
}

// Run loads the configuration, serves /healthz, /readyz and /metrics, takes the Lease when leader
// election is on, and reports until ctx ends.
func (o *Options) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logger := klog.FromContext(ctx)
	logger.Info("Starting accord-metrics-reporter", "version", version.Get().String())
	cfg, err := metricsreporter.DecodeConfig([]byte("apiVersion: metricsreporter/v1alpha1\nkind: MetricsReporterConfiguration\n"))
	if o.ConfigFile != "" {
		cfg, err = metricsreporter.LoadConfigFile(o.ConfigFile)
	}
	if err != nil {
		return err
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		return fmt.Errorf("client configuration: %w", err)
	}
	restCfg.QPS, restCfg.Burst = o.QPS, o.Burst
	m := metricsreporter.NewMetrics()
	var ready, leading atomic.Bool
	rc := Config{RestConfig: restCfg, Config: cfg, Metrics: m, OnReady: func() { ready.Store(true) }}

	var leHealth *leaderelection.HealthzAdaptor
	if o.LeaderElection.LeaderElect {
		leHealth = leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
	}
	if o.SecureServing.BindPort != 0 || o.SecureServing.Listener != nil {
		// A standby replica (not leading) is ready: it serves /metrics and waits for the Lease. The
		// reporting replica is ready once its informers have synced.
		readyCheck := func() error {
			if (leHealth == nil || leading.Load()) && !ready.Load() {
				return errors.New("informer caches not synced yet")
			}
			return nil
		}
		stopped, err := component.Serve(ctx, o.SecureServing, o.Auth, component.Serving{Name: "accord-metrics-reporter", Leader: leHealth,
			Ready: readyCheck, Metrics: m.Handler()})
		if err != nil {
			return err
		}
		defer func() { cancel(); <-stopped }()
	}
	if !o.LeaderElection.LeaderElect {
		return Run(ctx, rc)
	}
	return component.RunLeading(ctx, restCfg, o.LeaderElection, "accord-metrics-reporter", leHealth, func(ctx context.Context) error {
		leading.Store(true)
		return Run(ctx, rc)
	})
}
