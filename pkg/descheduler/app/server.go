package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"
	// --logging-format=json and the --log-json-* flags, as upstream's descheduler.
	_ "k8s.io/component-base/logs/json/register"

	"github.com/accord-sched/accord/pkg/component"
	"github.com/accord-sched/accord/pkg/crdcheck"
	fwruntime "github.com/accord-sched/accord/pkg/descheduler/framework/runtime"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
)

// DefaultSecurePort serves /healthz, /readyz and /metrics, as upstream's descheduler.
const DefaultSecurePort = 10258

// DefaultGCPercent is the GOGC accord-descheduler runs with when the GOGC environment variable is not
// set. Nearly all of its heap is the informers' copy of the cluster, live for the whole run: at Go's
// default of 100 the heap peaks at twice that copy between collections, at 50 at one and a half
// times it, for about twice the collections (test/scale/README.md, Memory, has both measured).
const DefaultGCPercent = 50

// Options are the command line of accord-descheduler.
type Options struct {
	PolicyConfigFile     string
	SchedulerConfigFile  string
	DeschedulingInterval time.Duration
	DryRun               bool
	EventDriven          bool
	// MaxConcurrentMigrations is --max-concurrent-migrations.
	MaxConcurrentMigrations int
	// Kubeconfig is --kubeconfig (deprecated upstream) and ClientConnectionKubeconfig is
	// --client-connection-kubeconfig; they name the same setting and may both be given only with
	// the same value (see kubeconfig).
	Kubeconfig                 string
	ClientConnectionKubeconfig string
	QPS                        float32
	Burst                      int
	// CacheSyncTimeout bounds the wait for the informer caches at start (Config.CacheSyncTimeout).
	CacheSyncTimeout time.Duration
	// DisableMetrics stops serving /metrics (health and readiness are still served).
	DisableMetrics bool
	// Profiling serves Go's pprof handlers under /debug/pprof/ on the secure port.
	Profiling bool
	// EnableHTTP2 allows HTTP/2 on the serving endpoint; it is off by default, as upstream, against
	// HTTP/2 stream-reset floods (CVE-2023-44487).
	EnableHTTP2 bool
	Tracing     TracingOptions

	// ServingOptions: --leader-elect*, the secure port and its authentication and authorization.
	component.ServingOptions
	// Base: the logging flags, --feature-gates and --version.
	component.Base
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		QPS:                     50,
		CacheSyncTimeout:        crdcheck.DefaultSyncTimeout,
		Burst:                   100,
		MaxConcurrentMigrations: fwruntime.DefaultMaxConcurrentMigrations,
		ServingOptions:          component.NewServingOptions("accord-descheduler", DefaultSecurePort, component.Lease{Elect: false, Duration: 137 * time.Second, RenewDeadline: 107 * time.Second, RetryPeriod: 26 * time.Second}),
		Tracing:                 TracingOptions{ServiceName: DefaultOtelServiceName, SampleRate: 1},
		Base:                    component.NewBase(deschedulerFeatureGates()),
	}
}

// Flags returns the named flag sets, with the upstream descheduler's flag names.
func (o *Options) Flags() cliflag.NamedFlagSets {
	var fss cliflag.NamedFlagSets
	fs := fss.FlagSet("descheduler")
	fs.StringVar(&o.PolicyConfigFile, "policy-config-file", o.PolicyConfigFile, "File with the DeschedulerPolicy (descheduler/v1alpha2).")
	fs.StringVar(&o.SchedulerConfigFile, "scheduler-config-file", o.SchedulerConfigFile, "KubeSchedulerConfiguration accord-scheduler runs (e.g. its mounted ConfigMap); the SchedulerSimulation plugin simulates its profiles before every eviction. Fills in the plugin's schedulerConfigFile when its args leave it empty; without either, kube-scheduler's default configuration is simulated.")
	fs.DurationVar(&o.DeschedulingInterval, "descheduling-interval", o.DeschedulingInterval, "Time between descheduling cycles; 0 runs one cycle and exits (unless --event-driven).")
	fs.BoolVar(&o.DryRun, "dry-run", o.DryRun, "Log the evictions instead of performing them; nothing is written to the cluster.")
	fs.BoolVar(&o.EventDriven, "event-driven", o.EventDriven, "Start the enabled Controller plugins, which evict in reaction to cluster events, and keep running for them.")
	fs.IntVar(&o.MaxConcurrentMigrations, "max-concurrent-migrations", o.MaxConcurrentMigrations, "How many PodMigrations the PodMigration controller (with --event-driven) moves at once; each also needs a slot of the policy's eviction limits, and a held one waits with a growing back-off.")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Kubeconfig file; empty uses the in-cluster configuration. Deprecated upstream in favour of --client-connection-kubeconfig, which names the same setting.")
	fs.StringVar(&o.ClientConnectionKubeconfig, "client-connection-kubeconfig", o.ClientConnectionKubeconfig, "Kubeconfig file; empty uses the in-cluster configuration. Same setting as --kubeconfig: give either, or both with the same value.")
	fs.Float32Var(&o.QPS, "client-connection-qps", o.QPS, "QPS of the connection to the apiserver.")
	fs.IntVar(&o.Burst, "client-connection-burst", o.Burst, "Burst of the connection to the apiserver.")
	fs.DurationVar(&o.CacheSyncTimeout, "cache-sync-timeout", o.CacheSyncTimeout, "How long to wait at start for the informer caches before exiting with an error that names the ones not synced. While waiting, the unsynced informers are logged every 10s and /readyz reports them.")
	fs.BoolVar(&o.DisableMetrics, "disable-metrics", o.DisableMetrics, "Do not serve /metrics (by default served with /healthz and /readyz on --bind-address:--secure-port).")
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "Serve Go's CPU and heap profiles under /debug/pprof/ on --bind-address:--secure-port, to callers authorised to get /debug/pprof/* (see --authorization-kubeconfig). Off by default.")
	fs.BoolVar(&o.EnableHTTP2, "enable-http2", o.EnableHTTP2, "Allow HTTP/2 on the /metrics, /healthz and /readyz endpoint. Off by default against HTTP/2 stream-reset floods (CVE-2023-44487).")
	tfs := fss.FlagSet("tracing")
	tfs.StringVar(&o.Tracing.CollectorEndpoint, "otel-collector-endpoint", o.Tracing.CollectorEndpoint, "OpenTelemetry collector (OTLP/gRPC, host:port) to send traces of cycles, plugin calls and evictions to; empty turns tracing off.")
	tfs.StringVar(&o.Tracing.TransportCACert, "otel-transport-ca-cert", o.Tracing.TransportCACert, "PEM file with the CA certificate of the collector; when set the connection uses TLS, otherwise plain gRPC.")
	tfs.StringVar(&o.Tracing.ServiceName, "otel-service-name", o.Tracing.ServiceName, "service.name of the traces.")
	tfs.StringVar(&o.Tracing.ServiceNamespace, "otel-trace-namespace", o.Tracing.ServiceNamespace, "service.namespace of the traces (none when empty).")
	tfs.Float64Var(&o.Tracing.SampleRate, "otel-sample-rate", o.Tracing.SampleRate, "Fraction of traces sampled, 0 to 1.")
	tfs.BoolVar(&o.Tracing.FallbackToNoOp, "otel-fallback-no-op-on-error", o.Tracing.FallbackToNoOp, "When setting up tracing fails (e.g. an unreadable --otel-transport-ca-cert), log it and run without tracing instead of exiting with the error.")
	o.ServingOptions.AddFlags(&fss)
	o.Base.AddFlags(&fss)
	return fss
}

// Validate checks the options.
func (o *Options) Validate() error {
	var errs []error
	if o.PolicyConfigFile == "" {
		errs = append(errs, errors.New("--policy-config-file is required"))
	}
	if o.MaxConcurrentMigrations < 1 {
		errs = append(errs, fmt.Errorf("--max-concurrent-migrations=%d: must be at least 1", o.MaxConcurrentMigrations))
	}
	if o.DeschedulingInterval < 0 {
		errs = append(errs, errors.New("--descheduling-interval must not be negative"))
	}
	if o.LeaderElection.LeaderElect && o.DeschedulingInterval == 0 && !o.EventDriven {
		errs = append(errs, errors.New("--leader-elect needs a --descheduling-interval (or --event-driven): a single cycle has nothing to hand over"))
	}
	if o.Kubeconfig != "" && o.ClientConnectionKubeconfig != "" && o.Kubeconfig != o.ClientConnectionKubeconfig {
		errs = append(errs, fmt.Errorf("--kubeconfig=%s and --client-connection-kubeconfig=%s name the same setting; give one", o.Kubeconfig, o.ClientConnectionKubeconfig))
	}
	errs = append(errs, o.Tracing.validate()...)
	errs = append(errs, o.ServingOptions.Validate()...)
	return errors.Join(errs...)
}

// kubeconfig is the kubeconfig file --kubeconfig or --client-connection-kubeconfig names (Validate
// rejects two different ones); empty means the in-cluster configuration.
func (o *Options) kubeconfig() string {
	if o.ClientConnectionKubeconfig != "" {
		return o.ClientConnectionKubeconfig
	}
	return o.Kubeconfig
}

// NewDeschedulerCommand returns the accord-descheduler command with the in-tree plugins and the
// plugins opts add.
func NewDeschedulerCommand(opts ...Option) *cobra.Command {
	o := NewOptions()
	return component.NewCommand(component.Command{
		Use:   "accord-descheduler",
		Short: "Evicts pods that should run elsewhere, driven by a DeschedulerPolicy",
		Long: `accord-descheduler runs descheduling profiles (descheduler/v1alpha2 DeschedulerPolicy) periodically
and/or in reaction to cluster events, evicting pods through the Eviction API within per-cycle limits.`,
		Base:        o.Base,
		Flags:       o.Flags(),
		Validate:    o.Validate,
		Run:         func(ctx context.Context) error { return o.Run(ctx, opts...) },
		Subcommands: []*cobra.Command{newExplainCommand(opts...), newVersionCommand()},
	})
}

// Run serves /healthz, /readyz and /metrics, takes the leader Lease when asked to, and runs the
// descheduler until ctx ends.
func (o *Options) Run(ctx context.Context, opts ...Option) error {
	ctx, logger := component.Starting(ctx, "accord-descheduler")
	tuneMemory(logger)

	restCfg, err := component.RestConfig(o.kubeconfig(), o.QPS, o.Burst)
	if err != nil {
		return err
	}
	// Fail fast on a bad policy, before serving or electing.
	if _, _, err := runner.LoadPolicy(o.PolicyConfigFile, o.SchedulerConfigFile, opts...); err != nil {
		return err
	}
	tp, err := o.Tracing.newTracerProvider(ctx)
	if err != nil {
		return err
	}
	defer func() {
		// The run's context is done by now; give the last batch of spans its own deadline.
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		if err := tp.Shutdown(sctx); err != nil {
			logger.Error(err, "Flushing traces")
		}
	}()
	m := metrics.New()
	leaderStatus := component.NewLeaderStatus()
	m.Registry.MustRegister(leaderStatus)
	ready := newReadiness()
	cfg := runner.Config{
		RestConfig: restCfg, PolicyConfigFile: o.PolicyConfigFile, SchedulerConfigFile: o.SchedulerConfigFile, DeschedulingInterval: o.DeschedulingInterval,
		DryRun: o.DryRun, EventDriven: o.EventDriven, Plugins: opts, Metrics: m, MaxConcurrentMigrations: o.MaxConcurrentMigrations,
		EvictionsInBackground: o.FeatureGate.Enabled(EvictionsInBackground),
		OnReady:               ready.setReady, OnWaiting: ready.setWaiting, OnCachesStale: ready.setStale, CacheSyncTimeout: o.CacheSyncTimeout, TracerProvider: tp,
	}

	var metricsHandler http.Handler
	if !o.DisableMetrics {
		metricsHandler = m.Handler()
	}
	// HTTP/2 only with --enable-http2 (upstream's switch), and never with --disable-http2-serving.
	return o.ServingOptions.Run(ctx, restCfg, component.Serving{Name: "accord-descheduler", Ready: ready.check, Metrics: metricsHandler,
		LeaderStatus: leaderStatus, Profiling: o.Profiling, DisableHTTP2: !o.EnableHTTP2}, func(ctx context.Context) error { return runner.Run(ctx, cfg) })
}

// tuneMemory sets the Go runtime's memory settings for a process holding the cluster's pods (the
// descheduler, and explain, which builds the same informers): in a container with a memory limit
// and no GOMEMLIMIT, the runtime collects harder near the limit instead of being OOM-killed at twice
// the live heap; and the heap between collections, which grows by GOGC percent of the live heap
// (the cluster's pods), is half of it unless GOGC says otherwise.
func tuneMemory(logger klog.Logger) {
	if limit, from, err := component.SetMemoryLimitFromCgroup(); err != nil {
		logger.Error(err, "Reading the cgroup's memory limit; the Go runtime keeps no soft memory limit")
	} else if limit > 0 {
		logger.Info("Soft memory limit from the cgroup's", "limit", limit, "cgroupFile", from, "fraction", component.CgroupMemoryLimitFraction)
	}
	if component.SetGCPercentIfUnset(DefaultGCPercent) {
		logger.Info("GOGC is not set; the garbage collector's target percentage is the descheduler's default", "gcPercent", DefaultGCPercent)
	}
}
