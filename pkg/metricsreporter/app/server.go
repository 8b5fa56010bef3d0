package app

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	cliflag "k8s.io/component-base/cli/flag"

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

	// ServingOptions: --leader-elect*, the secure port and its authentication and authorization.
	component.ServingOptions
	// Base: the logging flags, --feature-gates and --version.
	component.Base
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		QPS: 100, Burst: 200,
		ServingOptions: component.NewServingOptions("accord-metrics-reporter", DefaultSecurePort, component.Lease{Elect: true, Duration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}),
		Base:           component.NewBase(nil),
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
	o.ServingOptions.AddFlags(&fss)
	o.Base.AddFlags(&fss)
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
	errs = append(errs, o.ServingOptions.Validate()...)
	return errors.Join(errs...)
}

// NewCommand returns the accord-metrics-reporter command.
func NewCommand() *cobra.Command {
	o := NewOptions()
	return component.NewCommand(component.Command{
		Use:   "accord-metrics-reporter",
		Short: "Writes every node's measured usage into its NodeMetric",
		Long: `accord-metrics-reporter keeps one NodeMetric per node and writes its status (node and pod usage)
every report interval from metrics.k8s.io or Prometheus, aggregated over the interval. LoadAware
(accord-scheduler) and LowNodeLoad (accord-descheduler) decide on these NodeMetrics.`,
		Base:     o.Base,
		Flags:    o.Flags(),
		Validate: o.Validate,
		Run:      o.Run,
	})
}

// Run loads the configuration, serves /healthz, /readyz and /metrics, takes the Lease when leader
// election is on, and reports until ctx ends.
func (o *Options) Run(ctx context.Context) error {
	ctx, _ = component.Starting(ctx, "accord-metrics-reporter")
	cfg, err := metricsreporter.DecodeConfig([]byte("apiVersion: metricsreporter/v1alpha1\nkind: MetricsReporterConfiguration\n"))
	if o.ConfigFile != "" {
		cfg, err = metricsreporter.LoadConfigFile(o.ConfigFile)
	}
	if err != nil {
		return err
	}
	restCfg, err := component.RestConfig(o.Kubeconfig, o.QPS, o.Burst)
	if err != nil {
		return err
	}
	m := metricsreporter.NewMetrics()
	leaderStatus := component.NewLeaderStatus()
	m.Registry.MustRegister(leaderStatus)
	var ready, leading atomic.Bool
	rc := Config{RestConfig: restCfg, Config: cfg, Metrics: m, OnReady: func() { ready.Store(true) }}

	// A standby replica (not leading) is ready: it serves /metrics and waits for the Lease. The
	// reporting replica is ready once its informers have synced.
	readyCheck := func() error {
		if (!o.LeaderElection.LeaderElect || leading.Load()) && !ready.Load() {
			return errors.New("informer caches not synced yet")
		}
		return nil
	}
	return o.ServingOptions.Run(ctx, restCfg, component.Serving{Name: "accord-metrics-reporter", Ready: readyCheck, Metrics: m.Handler(), LeaderStatus: leaderStatus},
		func(ctx context.Context) error {
			leading.Store(true)
			return Run(ctx, rc)
		})
}
