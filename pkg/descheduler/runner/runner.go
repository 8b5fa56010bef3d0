// Package runner is the descheduler as a library: it loads a policy (with the scheduler's shared
// args, schedulertruth.go), builds the profiles over one set of informers, and runs the periodic and
// event-triggered modes inside the calling process, without serving or leader election (the
// command, pkg/descheduler/app, adds those; explain and the playground call it too).
package runner

import (
	"context"
	"fmt"
	goruntime "runtime"
	"time"

	"go.opentelemetry.io/otel/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/accord-sched/accord/apis/descheduler"
	"github.com/accord-sched/accord/pkg/crdcheck"
	"github.com/accord-sched/accord/pkg/descheduler/cachegate"
	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/decision"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/schedulersimulation"
	fwruntime "github.com/accord-sched/accord/pkg/descheduler/framework/runtime"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
	accordinformers "github.com/accord-sched/accord/pkg/generated/informers/externalversions"
	"github.com/accord-sched/accord/pkg/informertransform"
	"github.com/accord-sched/accord/pkg/metricsource"
	"github.com/accord-sched/accord/pkg/scheduler/crcache"
	"github.com/accord-sched/accord/pkg/scheduler/frameworks"
	schedplugins "github.com/accord-sched/accord/pkg/scheduler/plugins"
)

// DefaultLimitWindow is how often the per-cycle eviction counts reset when controllers run in the
// event-triggered mode without periodic cycles (--descheduling-interval=0): the limits then bound
// the evictions of each window.
const DefaultLimitWindow = time.Minute

// CacheCheckPeriod is how often, in event-only mode, the descheduler checks that its caches have not
// gone stale (a broken watch) and says so; cycles check before they start.
const CacheCheckPeriod = 10 * time.Second

// Registries are what Options add plugins to: the descheduler's plugins and their args types, and
// the scheduler plugins the SchedulerSimulation plugin simulates besides accord-scheduler's own.
type Registries struct {
	Plugins framework.Registry
	Args    framework.ArgsTypes
	// SchedulerPlugins are the out-of-tree scheduler plugins (WithSchedulerPlugin).
	SchedulerPlugins []schedplugins.Descriptor
}

// Option adds plugins to the descheduler's registries.
type Option func(*Registries) error

// WithPlugin registers an out-of-tree plugin, and its args type when given (at most one; a pointer to
// a struct embedding metav1.TypeMeta, implementing runtime.Object and optionally
// framework.ArgsDefaulter and framework.ArgsValidator).
func WithPlugin(name string, factory framework.PluginFactory, argsType ...runtime.Object) Option {
	return func(r *Registries) error {
		if len(argsType) > 1 {
			return fmt.Errorf("plugin %q: at most one args type", name)
		}
		if err := r.Plugins.Register(name, factory); err != nil {
			return err
		}
		if len(argsType) == 1 {
			return r.Args.Register(name, argsType[0])
		}
		return nil
	}
}

// WithSchedulerPlugin registers an out-of-tree scheduler plugin with the SchedulerSimulation plugin:
// its simulated scheduler frameworks are built from kube-scheduler's in-tree plugins,
// accord-scheduler's (schedplugins.Descriptors) and these, so a scheduler configuration
// (--scheduler-config-file) that enables the plugin can be simulated. Give it the name and factory
// the scheduler binary registers with kube-scheduler's app.WithPlugin: the simulation then judges
// with the very plugin the scheduler runs (its args arrive as the scheduler's do, *runtime.Unknown
// decoded by the factory, or nil without a pluginConfig entry).
func WithSchedulerPlugin(name string, factory frameworkruntime.PluginFactory) Option {
	return func(r *Registries) error {
		if factory == nil {
			return fmt.Errorf("scheduler plugin %q: nil factory", name)
		}
		for _, d := range schedplugins.Descriptors() {
			if d.Name == name {
				return fmt.Errorf("scheduler plugin %q: accord-scheduler already has a plugin by that name", name)
			}
		}
		for _, d := range r.SchedulerPlugins {
			if d.Name == name {
				return fmt.Errorf("scheduler plugin %q: registered twice", name)
			}
		}
		r.SchedulerPlugins = append(r.SchedulerPlugins, schedplugins.Descriptor{Name: name,
			Factory: func(*crcache.Cache) frameworkruntime.PluginFactory { return factory }})
		return nil
	}
}

// NewRegistries returns the in-tree registries with opts applied. With scheduler plugins
// registered, the SchedulerSimulation plugin is the one that simulates them too.
func NewRegistries(opts ...Option) (*Registries, error) {
	r := &Registries{Plugins: plugins.NewInTreeRegistry(), Args: plugins.NewInTreeArgs()}
	for _, o := range opts {
		if err := o(r); err != nil {
			return nil, err
		}
	}
	if len(r.SchedulerPlugins) > 0 {
		if _, err := frameworks.Registry(schedplugins.Registry(r.SchedulerPlugins, nil)); err != nil {
			return nil, fmt.Errorf("scheduler plugins: %w", err)
		}
		r.Plugins[schedulersimulation.Name] = schedulersimulation.NewFactory(append(schedplugins.Descriptors(), r.SchedulerPlugins...))
	}
	return r, nil
}

// Config is what Run needs.
type Config struct {
	// RestConfig reaches the cluster; when nil, Kubeconfig is read (and when that is empty too, the
	// in-cluster configuration is used).
	RestConfig *rest.Config
	Kubeconfig string
	// QPS and Burst of the client, when RestConfig is nil. Default 50 and 100.
	QPS   float32
	Burst int

	// PolicyConfigFile is the DeschedulerPolicy (descheduler/v1alpha2) to run.
	PolicyConfigFile string
	// SchedulerConfigFile is the KubeSchedulerConfiguration accord-scheduler runs; it fills in the
	// schedulerConfigFile of every SchedulerSimulation plugin whose args leave it empty.
	SchedulerConfigFile string
	// DeschedulingInterval between periodic cycles; 0 runs one cycle (and, unless EventDriven,
	// returns).
	DeschedulingInterval time.Duration
	// DryRun logs the evictions instead of performing them; nothing is written to the cluster.
	DryRun bool
	// EvictionsInBackground: the feature gate (see fwruntime.Options).
	EvictionsInBackground bool
	// EventDriven starts every enabled Controller plugin and keeps running for them until ctx ends.
	EventDriven bool
	// MaxConcurrentMigrations bounds the PodMigrations moved at once (fwruntime.Options); 0: the
	// default, fwruntime.DefaultMaxConcurrentMigrations.
	MaxConcurrentMigrations int
	// LimitWindow overrides DefaultLimitWindow.
	LimitWindow time.Duration

	// Plugins add out-of-tree plugins.
	Plugins []Option
	// Metrics are recorded here; a fresh set when nil.
	Metrics *metrics.Metrics
	// OnReady is called once the informer caches are synced, before the first cycle.
	OnReady func()
	// OnWaiting, when set, is called while the informer caches sync with the reason the descheduler
	// is not ready yet (which informers have not synced), for /readyz.
	OnWaiting func(reason string)
	// OnCachesStale, when set, is told when the cycles start being skipped because a watch broke and
	// the caches have not re-synced (waitingFor names them), and when they resume (nil), for /readyz.
	OnCachesStale func(waitingFor []string)
	// CacheSyncTimeout bounds the wait for the informer caches at start (crdcheck.DefaultSyncTimeout
	// when zero): past it the descheduler stops with an error naming the informers not synced. While
	// it waits it logs, every 10 s, which have not.
	CacheSyncTimeout time.Duration
	// MetricsCollector tunes the metrics.k8s.io collector of the KubernetesMetrics provider
	// (defaults: pkg/metricsource; tests shorten the interval).
	MetricsCollector metricsource.CollectorOptions
	// TracerProvider traces cycles, plugin calls and evictions; nil traces nothing.
	TracerProvider trace.TracerProvider
	// Observer, when set, observes every decision of every profile's evictor (explain's rows).
	Observer func(evictions.Record)
	// RunPastTotalCap keeps each cycle calling every plugin after the total eviction cap is reached
	// (fwruntime.Options.RunPastTotalCap); explain sets it.
	RunPastTotalCap bool
	// WrapAccordClient, when set, wraps the client of Accord's CRs the descheduler's informers list
	// and watch through (and its plugins write through): `kubectl accord what-if` puts a file's
	// ClusterScopedResources and NodeMetrics in place of the live ones, in a dry run.
	WrapAccordClient func(accordclient.Interface) accordclient.Interface
}

// Run loads the policy and runs the descheduler until ctx ends (or, with DeschedulingInterval 0 and
// without EventDriven, after one cycle).
func Run(ctx context.Context, cfg Config) error {
	d, err := Start(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer d.Stop()
	return d.run(ctx, cfg)
}

// LoadPolicy loads and validates the policy file with the registries opts give. With a
// schedulerConfigFile, the args the descheduler shares with accord-scheduler follow that
// configuration (see schedulertruth.go), and the schedulerConfigFile of SchedulerSimulation args that
// leave it empty is filled in with it.
func LoadPolicy(policyFile, schedulerConfigFile string, opts ...Option) (*descheduler.DeschedulerPolicy, framework.Registry, error) {
	r, err := NewRegistries(opts...)
	if err != nil {
		return nil, nil, err
	}
	reg := r.Plugins
	p, err := loadPolicyFile(policyFile, schedulerConfigFile, reg, r.Args)
	if err != nil {
		return nil, nil, err
	}
	if schedulerConfigFile != "" {
		for i := range p.Profiles {
			for _, pc := range p.Profiles[i].PluginConfigs {
				if a, ok := pc.Args.(*schedulersimulation.SchedulerSimulationArgs); ok && a.SchedulerConfigFile == "" {
					a.SchedulerConfigFile = schedulerConfigFile
				}
			}
		}
	}
	return p, reg, nil
}

// build loads the policy and builds the descheduler and its informer factories; cleanup closes
// the plugins and stops the Event broadcaster.
func build(ctx context.Context, cfg Config) (*fwruntime.Descheduler, *factories, func(), error) {
	p, reg, err := LoadPolicy(cfg.PolicyConfigFile, cfg.SchedulerConfigFile, cfg.Plugins...)
	if err != nil {
		return nil, nil, nil, err
	}
	restCfg := cfg.RestConfig
	if restCfg == nil {
		if restCfg, err = clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig); err != nil {
			return nil, nil, nil, fmt.Errorf("client configuration: %w", err)
		}
		restCfg.QPS, restCfg.Burst = 50, 100
		if cfg.QPS > 0 {
			restCfg.QPS = cfg.QPS
		}
		if cfg.Burst > 0 {
			restCfg.Burst = cfg.Burst
		}
	}
	restCfg = rest.CopyConfig(restCfg)
	restCfg.UserAgent = "accord-descheduler"
	// The probe of the cache gate goes around the tracked transport: its answers must not pass for
	// an informer's watch.
	probeClient, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, nil, nil, err
	}
	tracker := cachegate.NewTracker()
	untracked := restCfg
	restCfg = rest.CopyConfig(restCfg)
	restCfg.Wrap(tracker.WrapTransport)
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, nil, nil, err
	}
	crCfg := rest.CopyConfig(restCfg)
	crCfg.ContentType, crCfg.AcceptContentTypes = "application/json", "application/json"
	accordset, err := accordclient.NewForConfig(crCfg)
	if err != nil {
		return nil, nil, nil, err
	}
	var accord accordclient.Interface = accordset
	if cfg.WrapAccordClient != nil {
		accord = cfg.WrapAccordClient(accord)
	}

	// metrics.k8s.io, for a policy whose plugins read KubernetesMetrics (nothing is sent otherwise).
	metricsCfg := rest.CopyConfig(untracked)
	metricsCfg.ContentType, metricsCfg.AcceptContentTypes = "application/json", "application/json"
	metricsClient, err := metricsclient.NewForConfig(metricsCfg)
	if err != nil {
		return nil, nil, nil, err
	}

	// Which of Accord's CRDs the cluster serves: a plugin that needs one the cluster does not serve
	// fails to build, naming it; one for which it is optional requests no informer for it (an
	// informer of a resource that is not served never syncs).
	crds, err := crdcheck.Discover(client.Discovery())
	if err != nil {
		return nil, nil, nil, err
	}
	for _, c := range crdcheck.All() {
		if !crds.Serves(c) {
			klog.FromContext(ctx).Info("The cluster does not serve an Accord CRD; only plugins that do not need it can run", "crd", c.Name())
		}
	}
	// One copy of the cluster for every plugin, the evictor and the scheduler simulation, without
	// the objects' managedFields and the pod fields no reader needs (informertransform.Trimmed); pods
	// of one template share their common parts. Before managedFields go, a pod loses the
	// descheduler.accord.dev/ annotations the descheduler did not write.
	sharer := informertransform.NewTrimmingPodSharer()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(evictions.VerifyMarks(sharer.Transform)))
	accordFactory := accordinformers.NewSharedInformerFactoryWithOptions(accord, 0, accordinformers.WithTransform(informertransform.StripManagedFields))
	var recorder events.EventRecorder
	stopEvents := func() {}
	if !cfg.DryRun {
		// Events through the events.k8s.io API, each eviction decision written on its Event
		// (decision.Annotation) for the console.
		sink := evictions.NewDecisionSink(&events.EventSinkImpl{Interface: client.EventsV1()})
		broadcaster := events.NewBroadcaster(sink)
		broadcaster.StartRecordingToSink(ctx.Done())
		stopEvents = broadcaster.Shutdown
		recorder = sink.Recorder(broadcaster.NewRecorder(scheme.Scheme, decision.ReportingController))
	}
	d, err := fwruntime.New(ctx, p, fwruntime.Options{
		Client: client, InformerFactory: factory, AccordInformerFactory: accordFactory, AccordClient: accord,
		EventRecorder: recorder, Registry: reg, Metrics: cfg.Metrics, DryRun: cfg.DryRun, Observer: cfg.Observer, RunPastTotalCap: cfg.RunPastTotalCap,
		EvictionsInBackground: cfg.EvictionsInBackground, MaxConcurrentMigrations: cfg.MaxConcurrentMigrations,
		MetricsSources: fwruntime.MetricsOptions{Client: metricsClient, Collector: cfg.MetricsCollector},
		TracerProvider: cfg.TracerProvider, CRDs: crds,
		CacheGate: cachegate.NewGate(tracker, func(ctx context.Context) error {
			// The cheapest read that needs a working apiserver and etcd (a quorum read).
			_, err := probeClient.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1})
			return err
		}),
		OnCachesStale: cfg.OnCachesStale,
	})
	if err != nil {
		stopEvents()
		return nil, nil, nil, fmt.Errorf("policy %s: %w", cfg.PolicyConfigFile, err)
	}
	cleanup := func() {
		if err := d.Close(); err != nil {
			klog.FromContext(ctx).Error(err, "Closing plugins")
		}
		stopEvents()
	}
	return d, &factories{core: factory, accord: accordFactory}, cleanup, nil
}

// factories are the informer factories every plugin of every profile shares: one copy of the cluster.
type factories struct {
	core   informers.SharedInformerFactory
	accord accordinformers.SharedInformerFactory
}

// Descheduler is a built descheduler whose informers are started and synced.
type Descheduler struct {
	*fwruntime.Descheduler
	factories *factories
	stop      func()
}

// Start loads the policy, builds every profile, starts the informers the plugins requested and waits,
// at most cfg.CacheSyncTimeout, for them (logging, and telling cfg.OnWaiting, which have not synced),
// then starts the metrics sources and calls cfg.OnReady. Stop releases what it started. Run is Start
// followed by the periodic and/or event-triggered modes; explain is Start and one cycle.
func Start(ctx context.Context, cfg Config) (*Descheduler, error) {
	// The plugins and the Event broadcaster get ctx itself: Stop stops the informers first and then
	// closes them, so that the last Events are flushed.
	d, fs, cleanup, err := build(ctx, cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	fs.core.Start(ctx.Done())
	fs.accord.Start(ctx.Done())
	out := &Descheduler{Descheduler: d, factories: fs, stop: func() {
		cancel()
		fs.core.Shutdown()
		fs.accord.Shutdown()
		cleanup()
	}}
	opts := crdcheck.SyncOptions{Timeout: cfg.CacheSyncTimeout, OnWaiting: cfg.OnWaiting, What: "descheduler"}
	if err := crdcheck.WaitForSync(ctx, opts, []crdcheck.Factory{fs.core, fs.accord},
		crdcheck.Informer{Name: "the descheduler's node and pod handlers", HasSynced: d.HasSynced}); err != nil {
		out.Stop()
		return nil, err
	}
	if err := d.StartMetrics(ctx); err != nil {
		out.Stop()
		return nil, err
	}
	d.Warm(ctx)
	collectStartupGarbage(ctx)
	if cfg.OnReady != nil {
		cfg.OnReady()
	}
	return out, nil
}

// collectStartupGarbage runs one collection once the start-up is done (informers synced, plugins
// warmed). Decoding the initial lists and copying them into the simulator's snapshot leave the heap
// near the collector's goal, so the first collection would otherwise start within the first cycle or
// event and mark under it (0.4-0.5 s of marking at 100k pods on 2 cores). It starts the first cycle
// with the runway of a whole collection (GOGC percent of the live heap: about 140 MiB at 100k pods
// with the default 50), of which a capped cycle there allocates about 55 MiB (heap profile); the
// pacer may still start a collection inside it.
func collectStartupGarbage(ctx context.Context) {
	start := time.Now()
	goruntime.GC()
	klog.FromContext(ctx).V(2).Info("Start-up garbage collected", "duration", time.Since(start))
}

// Stop stops the informers and the metrics sources and closes the plugins.
func (d *Descheduler) Stop() { d.stop() }

// Nodes lists the nodes from the shared informer cache.
func (d *Descheduler) Nodes() corelisters.NodeLister {
	return d.factories.core.Core().V1().Nodes().Lister()
}

// run runs a started descheduler in the periodic and/or event-triggered modes as cfg says.
func (d *Descheduler) run(ctx context.Context, cfg Config) error {
	logger := klog.FromContext(ctx)
	logger.Info("Descheduler started", "interval", cfg.DeschedulingInterval, "dryRun", cfg.DryRun, "eventDriven", cfg.EventDriven,
		"profiles", len(d.Profiles()), "controllers", len(d.Controllers()))

	d.WatchWindows(ctx)
	if cfg.EventDriven {
		waitControllers := d.StartControllers(ctx)
		defer waitControllers()
		if cfg.DeschedulingInterval == 0 {
			window := cfg.LimitWindow
			if window <= 0 {
				window = DefaultLimitWindow
			}
			go wait.Until(d.Limiter().Reset, window, ctx.Done())
			// No cycle runs to check the cache gate first, so it is checked on its own: evictions
			// held on stale caches are logged, counted in caches_stale and reflected in /readyz.
			go wait.UntilWithContext(ctx, func(ctx context.Context) { d.CheckCaches(ctx) }, CacheCheckPeriod)
		}
	}
	if cfg.DeschedulingInterval == 0 {
		d.RunCycle(ctx)
		if cfg.EventDriven {
			<-ctx.Done()
		}
		return nil
	}
	wait.NonSlidingUntilWithContext(ctx, d.RunCycle, cfg.DeschedulingInterval)
	return nil
}
