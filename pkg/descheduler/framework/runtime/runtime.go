// Package runtime builds the profiles of a policy and runs descheduling cycles: every profile's
// Deschedule plugins in order, then every profile's Balance plugins in order, with failure isolation,
// and starts the Controller plugins of the event-triggered mode.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	compmetrics "k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/accord-sched/accord/apis/config"
	"github.com/accord-sched/accord/apis/descheduler"
	"github.com/accord-sched/accord/pkg/constraints"
	"github.com/accord-sched/accord/pkg/crdcheck"
	"github.com/accord-sched/accord/pkg/descheduler/cachegate"
	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
	"github.com/accord-sched/accord/pkg/descheduler/policy"
	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
	accordinformers "github.com/accord-sched/accord/pkg/generated/informers/externalversions"
)

// Options are what a Descheduler is built from.
type Options struct {
	Client                clientset.Interface
	InformerFactory       informers.SharedInformerFactory
	AccordInformerFactory accordinformers.SharedInformerFactory
	// AccordClient writes Accord's CRs (the ReservationFirst evict plugin's Reservations); plugins
	// reach it through Handle.AccordClient. Nil: no plugin can write them.
	AccordClient accordclient.Interface
	// MaxConcurrentMigrations is Handle.MaxConcurrentMigrations; below 1: DefaultMaxConcurrentMigrations.
	MaxConcurrentMigrations int
	// EventRecorder records Events on evicted pods; nil records none.
	EventRecorder events.EventRecorder
	Registry      framework.Registry
	// Metrics default to a fresh set.
	Metrics *metrics.Metrics
	// DryRun makes every eviction a logged no-op.
	DryRun bool
	// Observer, when set, observes every profile's evictor (see evictions.ProfileEvictor.Observer).
	Observer func(evictions.Record)
	// Metrics reach the policy's metricsProviders (metrics.k8s.io, Prometheus).
	MetricsSources MetricsOptions
	// TracerProvider, when set, traces every cycle, every Deschedule/Balance call and every
	// eviction a plugin asks for (see tracing.go); nil traces nothing.
	TracerProvider trace.TracerProvider
	// CRDs tells plugins which of Accord's CRDs the cluster serves (Handle.ServesCRD), as API
	// discovery found at start; nil means every CRD is taken to be served.
	CRDs crdcheck.Availability
	// CacheGate, when set, is checked before every cycle and before every eviction: while it names
	// caches that have not re-synced since a broken watch, cycles are skipped and evictions held
	// (see pkg/descheduler/cachegate). OnCachesStale, when set, is told each change: the caches
	// waited for, or nil once they are fresh again (readiness).
	CacheGate     *cachegate.Gate
	OnCachesStale func(waitingFor []string)
	// RunPastTotalCap keeps a cycle calling its plugins once the total eviction cap is reached
	// (explain, which reports every candidate); otherwise the cycle's remaining Deschedule and
	// Balance calls are not made, since nothing they find could be evicted.
	RunPastTotalCap bool
	// Now is the clock of the profiles' eviction windows; time.Now when nil.
	Now func() time.Time
	// EvictionsInBackground is upstream's feature gate: evictions of pods annotated
	// descheduler.alpha.kubernetes.io/request-evict-only answered "in progress" are tracked (see
	// pkg/descheduler/evictions/inprogress.go).
	EvictionsInBackground bool
}

// Profile is a built profile.
type Profile struct {
	Name              string
	nodeSelector      labels.Selector
	deschedulePlugins []framework.DeschedulePlugin
	balancePlugins    []framework.BalancePlugin
	controllers       []framework.Controller
	evictor           *evictions.ProfileEvictor
	handle            *handle
	// plugins are the built plugins, each once, in the order they were first enabled.
	plugins []framework.Plugin
	hooks   []framework.CycleHook
}

// Plugins returns the profile's built plugins, each once, in policy order.
func (p *Profile) Plugins() []framework.Plugin { return p.plugins }

// Evictor returns the profile's evictor.
func (p *Profile) Evictor() framework.Evictor { return p.evictor }

// Descheduler runs cycles over built profiles. All profiles and controllers share one Limiter.
type Descheduler struct {
	profiles []*Profile
	limiter  *evictions.Limiter
	metrics  *metrics.Metrics
	nodes    corelisters.NodeLister
	// cycle is the cycle's node list every Handle's Nodes reads.
	cycle *cycleNodes
	pods  corelisters.PodLister
	// client and dryRun: soft eviction's clean-up writes with client, never in dry-run mode.
	client  clientset.Interface
	dryRun  bool
	synced  []cache.InformerSynced
	sources *metricsProviders
	tracer  trace.Tracer
	gate    *cachegate.Gate
	onStale func(waitingFor []string)
	// runPastTotalCap: Options.RunPastTotalCap.
	runPastTotalCap bool
}

// New builds every profile of a validated policy: it instantiates each enabled plugin once per
// profile with its args and a Handle, and checks that each implements the extension points it is
// enabled at (errors carry the policy's field paths). Informers the plugins need are requested from
// the factories; start the factories after New and before the first cycle. ctx is handed to every
// plugin factory: it should live as long as the Descheduler.
func New(ctx context.Context, p *descheduler.DeschedulerPolicy, opts Options) (*Descheduler, error) {
	if opts.Metrics == nil {
		opts.Metrics = metrics.New()
	}
	podIndexer, err := AddPodNodeIndex(opts.InformerFactory)
	if err != nil {
		return nil, err
	}
	nodeInformer := opts.InformerFactory.Core().V1().Nodes()
	if opts.TracerProvider == nil {
		opts.TracerProvider = noop.NewTracerProvider()
	}
	d := &Descheduler{
		tracer:          opts.TracerProvider.Tracer(TracerName),
		limiter:         evictions.NewLimiter(evictions.LimitsFromPolicy(p)),
		metrics:         opts.Metrics,
		nodes:           nodeInformer.Lister(),
		cycle:           newCycleNodes(nodeInformer.Lister()),
		pods:            opts.InformerFactory.Core().V1().Pods().Lister(),
		client:          opts.Client,
		dryRun:          opts.DryRun,
		synced:          []cache.InformerSynced{nodeInformer.Informer().HasSynced, opts.InformerFactory.Core().V1().Pods().Informer().HasSynced},
		gate:            opts.CacheGate,
		onStale:         opts.OnCachesStale,
		runPastTotalCap: opts.RunPastTotalCap,
	}
	// Handle.Nodes outside a cycle keeps its list until a Node event.
	if _, err := nodeInformer.Informer().AddEventHandler(d.cycle.handler()); err != nil {
		return nil, err
	}
	if d.sources, err = newMetricsProviders(p, opts.Client, opts.MetricsSources); err != nil {
		return nil, err
	}
	workloads, err := evictions.NewInformerWorkloads(opts.InformerFactory, scaleReader(opts.Client))
	if err != nil {
		return nil, err
	}
	d.limiter.SetBudget(evictions.NewBudget(evictions.BudgetFromPolicy(p), workloads, nil))
	d.synced = append(d.synced, workloads.HasSynced)
	if err := d.trackInProgress(opts); err != nil {
		return nil, err
	}
	if l := d.limiter.Limits(); l.Defaulted {
		klog.FromContext(ctx).Info("The policy sets no eviction limits; safe defaults apply", "maxPodsToEvictPerNode", *l.PerNode, "maxPodsToEvictTotal", *l.Total)
	}
	var errs field.ErrorList
	for i := range p.Profiles {
		prof, perrs, err := d.buildProfile(ctx, i, p, opts, podIndexer)
		if err != nil {
			return nil, err
		}
		errs = append(errs, perrs...)
		d.profiles = append(d.profiles, prof)
	}
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return d, nil
}

func (d *Descheduler) buildProfile(ctx context.Context, i int, p *descheduler.DeschedulerPolicy, opts Options, pods cache.Indexer) (*Profile, field.ErrorList, error) {
	cfg := &p.Profiles[i]
	sel := labels.Everything()
	selStr := p.NodeSelector
	if cfg.NodeSelector != nil {
		selStr = cfg.NodeSelector
	}
	if selStr != nil {
		s, err := labels.Parse(*selStr)
		if err != nil {
			return nil, nil, fmt.Errorf("profile %q: node selector: %w", cfg.Name, err)
		}
		sel = s
	}
	ev := &evictions.ProfileEvictor{
		Profile:            cfg.Name,
		Limiter:            d.limiter,
		DryRun:             opts.DryRun,
		Metrics:            d.metrics,
		Recorder:           opts.EventRecorder,
		GracePeriodSeconds: p.GracePeriodSeconds,
		NotifyFailures:     p.EvictionFailureEventNotification != nil && *p.EvictionFailureEventNotification,
		Observer:           opts.Observer,
	}
	if d.gate != nil {
		ev.Fresh = d.gate.Stale
	}
	ws, werrs := evictions.ParseWindows(field.NewPath("profiles").Index(i).Child("evictionWindows"), cfg.EvictionWindows)
	if len(werrs) > 0 {
		return nil, werrs, nil
	}
	ev.Windows, ev.Now = ws, opts.Now
	if cfg.EvictionMode == descheduler.EvictionModeSoft {
		ev.Soft = &evictions.Soft{Profile: cfg.Name, Client: opts.Client, Now: opts.Now}
	}
	crPolicy, err := missingCRPolicy(cfg)
	if err != nil {
		return nil, nil, err
	}
	h := &handle{profile: cfg.Name, client: opts.Client, factory: opts.InformerFactory, accord: opts.AccordInformerFactory,
		evictor: ev, pods: pods, recorder: opts.EventRecorder, nodes: sel, metrics: d.sources, crds: opts.CRDs, crPolicy: crPolicy,
		accordClient: opts.AccordClient, cycle: d.cycle, migrations: opts.MaxConcurrentMigrations, dryRun: opts.DryRun}
	prof := &Profile{Name: cfg.Name, nodeSelector: sel, evictor: ev, handle: h}

	built := map[string]framework.Plugin{}
	get := func(name string) (framework.Plugin, error) {
		if pl, ok := built[name]; ok {
			return pl, nil
		}
		factory := opts.Registry[name]
		if factory == nil {
			return nil, fmt.Errorf("profile %q: plugin %q is not registered", cfg.Name, name)
		}
		// Each plugin gets its own Handle whose Evictor names it as the nominator.
		ph := *h
		ph.evictor = &tracedEvictor{Evictor: ev.ForPlugin(name), tracer: d.tracer, profile: cfg.Name, plugin: name}
		pl, err := factory(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("profile", cfg.Name, "plugin", name)), argsOf(cfg, name), &ph)
		if err != nil {
			return nil, fmt.Errorf("profile %q: building plugin %q: %w", cfg.Name, name, err)
		}
		built[name] = pl
		prof.plugins = append(prof.plugins, pl)
		return pl, nil
	}
	var errs field.ErrorList
	controllers := map[string]bool{}
	for _, point := range policy.ExtensionPoints {
		for _, name := range policy.Enabled(&cfg.Plugins, point) {
			pl, err := get(name)
			if err != nil {
				return nil, nil, err
			}
			path := policy.EnabledPath(i, point, name, &cfg.Plugins)
			ctrl, isCtrl := pl.(framework.Controller)
			if isCtrl && (point == policy.Deschedule || point == policy.Balance) && !controllers[name] {
				controllers[name] = true
				prof.controllers = append(prof.controllers, ctrl)
			}
			switch point {
			case policy.Deschedule:
				if dp, ok := pl.(framework.DeschedulePlugin); ok {
					prof.deschedulePlugins = append(prof.deschedulePlugins, dp)
				} else if !isCtrl {
					errs = append(errs, field.Invalid(path, name, "plugin does not implement the deschedule extension point"))
				}
			case policy.Balance:
				if bp, ok := pl.(framework.BalancePlugin); ok {
					prof.balancePlugins = append(prof.balancePlugins, bp)
				} else if !isCtrl {
					errs = append(errs, field.Invalid(path, name, "plugin does not implement the balance extension point"))
				}
			case policy.Filter, policy.PreEvictionFilter:
				ep, ok := pl.(framework.EvictorPlugin)
				if !ok {
					errs = append(errs, field.Invalid(path, name, fmt.Sprintf("plugin does not implement the %s extension point", point)))
				} else if point == policy.Filter {
					ev.Filters = append(ev.Filters, ep)
				} else {
					ev.PreEvictionFilters = append(ev.PreEvictionFilters, ep)
				}
			case policy.Evict:
				if ep, ok := pl.(framework.EvictPlugin); ok {
					ev.EvictPlugin = ep
				} else {
					errs = append(errs, field.Invalid(path, name, "plugin does not implement the evict extension point"))
				}
			}
		}
	}
	if ev.EvictPlugin == nil && len(errs) == 0 {
		errs = append(errs, field.Required(field.NewPath("profiles").Index(i).Child("plugins", "evict", "enabled"), "a profile needs an evict plugin"))
	}
	if len(errs) == 0 {
		if err := d.wire(prof, cfg, opts); err != nil {
			return nil, nil, err
		}
	}
	return prof, errs, nil
}

// wire connects the plugins of a built profile: the profile's deschedule and balance plugins are
// handed to its preEvictionFilter plugins that are PlacementJudges (and their HasSynced joins the
// descheduler's), CycleHooks are collected for RunCycle, and plugin metrics are registered with the
// descheduler's registry.
func (d *Descheduler) wire(prof *Profile, cfg *descheduler.DeschedulerProfile, opts Options) error {
	var nominators []framework.Nominator
	seen := map[string]bool{}
	for _, point := range []policy.ExtensionPoint{policy.Deschedule, policy.Balance} {
		for _, name := range policy.Enabled(&cfg.Plugins, point) {
			if seen[name] {
				continue
			}
			seen[name] = true
			for _, pl := range prof.plugins {
				if pl.Name() != name {
					continue
				}
				n := framework.Nominator{Name: name}
				n.Verdicter, _ = pl.(framework.NodeVerdicter)
				if pi, ok := pl.(framework.PodIntrinsicNominator); ok {
					n.PodIntrinsic = pi.NominatesPodIntrinsically()
				}
				nominators = append(nominators, n)
			}
		}
	}
	for _, ep := range prof.evictor.PreEvictionFilters {
		if j, ok := ep.(framework.PlacementJudge); ok {
			j.SetNominators(slices.Clone(nominators))
		}
	}
	for _, pl := range prof.plugins {
		if hk, ok := pl.(framework.CycleHook); ok {
			prof.hooks = append(prof.hooks, hk)
		}
		if j, ok := pl.(framework.PlacementJudge); ok {
			d.synced = append(d.synced, j.HasSynced)
		}
		if mr, ok := pl.(MetricsRegisterer); ok && d.metrics.Registry != nil {
			if err := mr.RegisterMetrics(d.metrics.Registry); err != nil {
				return fmt.Errorf("profile %q: registering the metrics of plugin %q: %w", cfg.Name, pl.Name(), err)
			}
		}
	}
	return nil
}

// MetricsRegisterer is implemented by a plugin with metrics of its own; the runtime registers them
// with the descheduler's registry (served on /metrics). Several instances (one per profile) may be
// registered with the same registry: metrics.RegisterShared (pkg/descheduler/metrics) registers
// one set per registry and hands it to every instance.
type MetricsRegisterer interface {
	RegisterMetrics(reg compmetrics.KubeRegistry) error
}

// StartMetrics runs the metrics providers that some plugin asked for (see
// framework.MetricsProviders) until ctx is done: call it once the informer caches have synced and
// before the first cycle. It waits up to MetricsStartTimeout for each source's first answer; a source
// that is down is logged and makes the plugins that need it skip their cycles, while a token Secret
// that cannot be watched is an error.
func (d *Descheduler) StartMetrics(ctx context.Context) error {
	return d.sources.start(ctx)
}

// Close closes every plugin that implements io.Closer (e.g. SchedulerSimulation's simulator).
func (d *Descheduler) Close() error {
	d.sources.shutdown()
	var errs []error
	for _, p := range d.profiles {
		for _, pl := range p.plugins {
			if c, ok := pl.(io.Closer); ok {
				if err := c.Close(); err != nil {
					errs = append(errs, fmt.Errorf("profile %q plugin %q: %w", p.Name, pl.Name(), err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// missingCRPolicy is the profile's missingCRPolicy: the one its enabled plugins' args set
// (framework.MissingCRPolicyArgs), "" when none does. Two enabled plugins that set different ones
// are an error naming both: a profile has one rule for nodes without a ClusterScopedResource.
func missingCRPolicy(cfg *descheduler.DeschedulerProfile) (config.MissingCRPolicy, error) {
	enabled := map[string]bool{}
	for _, point := range policy.ExtensionPoints {
		for _, name := range policy.Enabled(&cfg.Plugins, point) {
			enabled[name] = true
		}
	}
	var got config.MissingCRPolicy
	var from string
	for _, pc := range cfg.PluginConfigs {
		a, ok := pc.Args.(framework.MissingCRPolicyArgs)
		if !ok || !enabled[pc.Name] || a.MissingCRPolicyArg() == "" {
			continue
		}
		switch p := a.MissingCRPolicyArg(); {
		case got == "":
			got, from = p, pc.Name
		case p != got:
			return "", fmt.Errorf("profile %q: plugin %q has missingCRPolicy %s and plugin %q has %s: a profile has one rule for nodes without a ClusterScopedResource",
				cfg.Name, from, got, pc.Name, p)
		}
	}
	return got, nil
}

func argsOf(cfg *descheduler.DeschedulerProfile, name string) k8sruntime.Object {
	for _, pc := range cfg.PluginConfigs {
		if pc.Name == name {
			return pc.Args
		}
	}
	return nil
}

// Profiles returns the built profiles in policy order.
func (d *Descheduler) Profiles() []*Profile { return d.profiles }

// Limiter returns the limiter shared by every profile and controller.
func (d *Descheduler) Limiter() *evictions.Limiter { return d.limiter }

// Metrics returns the metrics the descheduler records.
func (d *Descheduler) Metrics() *metrics.Metrics { return d.metrics }

// WaitForCacheSync waits for the node and pod informers and the PlacementJudges (see HasSynced).
func (d *Descheduler) WaitForCacheSync(ctx context.Context) bool {
	return cache.WaitForCacheSync(ctx.Done(), d.synced...)
}

// HasSynced reports whether the node and pod informers have synced and every plugin with state of
// its own fed by informer handlers (a framework.PlacementJudge) has been delivered their initial lists;
// WaitForCacheSync waits for it.
func (d *Descheduler) HasSynced() bool {
	for _, s := range d.synced {
		if !s() {
			return false
		}
	}
	return true
}

// Warm calls Warm on every plugin of every profile that is a framework.Warmer, once each, logging
// how long each took; a failure is logged (the plugin then builds its state when first used). The
// runner calls it after the caches synced, before reporting ready.
func (d *Descheduler) Warm(ctx context.Context) {
	logger := klog.FromContext(ctx)
	for _, p := range d.profiles {
		for _, pl := range p.plugins {
			w, ok := pl.(framework.Warmer)
			if !ok {
				continue
			}
			start := time.Now()
			logger.V(2).Info("Warming a plugin's state", "profile", p.Name, "plugin", pl.Name())
			if err := w.Warm(ctx); err != nil {
				logger.Error(err, "Warming a plugin's state; it builds it when first used", "profile", p.Name, "plugin", pl.Name())
				continue
			}
			logger.Info("Plugin state warmed", "profile", p.Name, "plugin", pl.Name(), "duration", time.Since(start))
		}
	}
}

// RunCycle runs one descheduling cycle: it resets the per-cycle limits, lists the nodes from the
// informer cache once (Handle.Nodes answers from that list until the cycle ends), runs every profile's Deschedule plugins, then every profile's Balance plugins. A
// failing (or panicking) plugin is logged and counted and does not stop the others.
func (d *Descheduler) RunCycle(ctx context.Context) {
	start := time.Now()
	logger := klog.FromContext(ctx)
	ctx, span := d.tracer.Start(ctx, SpanCycle)
	defer span.End()
	if !d.cachesFresh(ctx) {
		return
	}
	d.limiter.Reset()
	all, err := d.nodes.List(labels.Everything())
	if err != nil {
		logger.Error(err, "Listing nodes")
		return
	}
	// In name order, not the cache's: what a cycle does (which pods take the caps and budgets
	// shared across nodes) then depends on the cluster alone, and a run can be replayed.
	slices.SortFunc(all, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	d.cycle.begin(all)
	defer d.cycle.end()
	ready := make([]*corev1.Node, 0, len(all))
	for _, n := range all {
		if constraints.NodeReady(n) {
			ready = append(ready, n)
		}
	}
	nodesOf := make([][]*corev1.Node, len(d.profiles))
	for i, p := range d.profiles {
		nodesOf[i] = selectNodes(ready, p.nodeSelector)
	}
	for _, p := range d.profiles {
		for _, hk := range p.hooks {
			hk.BeginCycle(ctx)
		}
	}
	defer func() {
		for _, p := range d.profiles {
			for _, hk := range p.hooks {
				hk.EndCycle(ctx)
			}
		}
	}()
	capped := d.capReached(ctx)
	// complete[i]: every plugin of profile i ran to completion (soft eviction's clean-up needs it).
	complete := d.beginSoftCycles()
	for i, p := range d.profiles {
		for _, pl := range p.deschedulePlugins {
			if ctx.Err() != nil {
				return
			}
			if capped(p.Name, pl.Name(), opDeschedule) {
				complete[i] = false
				continue
			}
			if !d.call(ctx, p.Name, pl.Name(), opDeschedule, func(ctx context.Context) *framework.Status { return pl.Deschedule(ctx, nodesOf[i]) }) {
				complete[i] = false
			}
		}
	}
	for i, p := range d.profiles {
		for _, pl := range p.balancePlugins {
			if ctx.Err() != nil {
				return
			}
			if capped(p.Name, pl.Name(), opBalance) {
				complete[i] = false
				continue
			}
			if !d.call(ctx, p.Name, pl.Name(), opBalance, func(ctx context.Context) *framework.Status { return pl.Balance(ctx, nodesOf[i]) }) {
				complete[i] = false
			}
		}
	}
	d.endSoftCycles(ctx, complete)
	d.metrics.CycleDuration.Observe(time.Since(start).Seconds())
	d.metrics.Cycles.Inc()
	span.SetAttributes(AttrNodes.Int(len(ready)), AttrEvictions.Int(d.limiter.Total()))
	logger.V(1).Info("Descheduling cycle done", "duration", time.Since(start), "nodes", len(ready), "evictions", d.limiter.Total())
}

// CapReachedMessage is logged once per cycle when the cycle's total eviction cap is reached before
// its last plugin call: the remaining calls are not made.
const CapReachedMessage = "Total eviction cap reached; the cycle's remaining plugins are not run"

// capReached returns the check RunCycle makes before each plugin call: true (skip the call) once the
// limiter's total for the cycle has reached the total cap, unless RunPastTotalCap. The first skip of
// the cycle is logged; every skip is counted.
func (d *Descheduler) capReached(ctx context.Context) func(profile, plugin, point string) bool {
	total := d.limiter.Limits().Total
	logged := false
	return func(profile, plugin, point string) bool {
		if d.runPastTotalCap || total == nil || d.limiter.Total() < *total {
			return false
		}
		if !logged {
			logged = true
			klog.FromContext(ctx).Info(CapReachedMessage, "maxPodsToEvictTotal", *total, "nextPlugin", plugin, "profile", profile, "extensionPoint", point)
		}
		d.metrics.CapSkippedPluginCalls.WithLabelValues(plugin, profile, point).Inc()
		return true
	}
}

// SkipMessage is logged, with waitingFor, when a cycle is skipped because the caches have not
// re-synced: at Info level on the first skip of an outage, at V(2) on the next ones.
const SkipMessage = "Skipping descheduling cycle: caches not re-synced"

// HeldMessage is logged, with waitingFor, when the caches are found not re-synced outside a cycle
// (event-only mode): the event-triggered controllers' evictions are held meanwhile.
const HeldMessage = "Caches not re-synced: evictions held"

// cachesFresh asks the CacheGate (when there is one) whether the caches can be decided on; when they
// cannot, the cycle is skipped, counted and logged.
func (d *Descheduler) cachesFresh(ctx context.Context) bool {
	waiting, changed := d.checkCaches(ctx, SkipMessage)
	if ctx.Err() != nil {
		return false
	}
	if len(waiting) == 0 {
		return true
	}
	d.metrics.CyclesSkipped.WithLabelValues(metrics.SkipCachesNotSynced).Inc()
	if !changed {
		klog.FromContext(ctx).V(2).Info(SkipMessage, "waitingFor", waiting)
	}
	return false
}

// CheckCaches asks the CacheGate (when there is one) whether the caches can be decided on, and
// reports a change either way: a log line, the caches_stale metric and OnCachesStale (readiness).
// Cycles do it first thing; in event-only mode, where no cycle runs, the runner calls it every limit
// window so that held evictions are said and seen. It returns the caches waited for (none: fresh).
func (d *Descheduler) CheckCaches(ctx context.Context) []string {
	waiting, _ := d.checkCaches(ctx, HeldMessage)
	return waiting
}

func (d *Descheduler) checkCaches(ctx context.Context, staleMessage string) (waiting []string, changed bool) {
	if d.gate == nil {
		return nil, false
	}
	waiting, changed = d.gate.Check(ctx)
	if ctx.Err() != nil || !changed {
		return waiting, changed
	}
	logger := klog.FromContext(ctx)
	if len(waiting) == 0 {
		waiting = nil
		d.metrics.CachesStale.Set(0)
		logger.Info("Caches re-synced; descheduling cycles resume")
	} else {
		d.metrics.CachesStale.Set(1)
		logger.Info(staleMessage, "waitingFor", waiting)
	}
	if d.onStale != nil {
		d.onStale(waiting)
	}
	return waiting, changed
}

// call runs one plugin call, logging, counting and tracing it; it reports whether it succeeded.
func (d *Descheduler) call(ctx context.Context, profile, plugin, point string, fn func(context.Context) *framework.Status) bool {
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "profile", profile, "plugin", plugin, "extensionPoint", point)
	ctx = klog.NewContext(ctx, logger)
	ctx, span := d.tracer.Start(ctx, spanName(point, plugin), trace.WithAttributes(
		AttrProfile.String(profile), AttrPlugin.String(plugin), AttrOperation.String(point)))
	defer span.End()
	start := time.Now()
	status := func() (st *framework.Status) {
		defer func() {
			if r := recover(); r != nil {
				st = framework.Errorf("panic: %v\n%s", r, debug.Stack())
			}
		}()
		return fn(ctx)
	}()
	result := "success"
	if !status.IsSuccess() {
		result = "error"
		d.metrics.PluginFailures.WithLabelValues(plugin, profile, point).Inc()
		logger.Error(status.AsError(), "Plugin failed; continuing with the others")
		span.SetStatus(codes.Error, status.AsError().Error())
	}
	span.SetAttributes(AttrResult.String(result))
	d.metrics.PluginDuration.WithLabelValues(plugin, profile, point, result).Observe(time.Since(start).Seconds())
	return status.IsSuccess()
}

// Controllers returns the Controller plugins of every profile, in policy order.
func (d *Descheduler) Controllers() []framework.Controller {
	var out []framework.Controller
	for _, p := range d.profiles {
		out = append(out, p.controllers...)
	}
	return out
}

// WatchWindows logs and sets the eviction_window_open gauge at every edge of each profile's
// eviction windows, on time, until ctx is done (evictions check the windows themselves).
func (d *Descheduler) WatchWindows(ctx context.Context) {
	for _, p := range d.profiles {
		if p.evictor.Windows != nil {
			go p.evictor.Windows.WatchEdges(ctx, p.Name, d.metrics, p.evictor.Now)
		}
	}
}

// StartControllers starts every Controller plugin once, each in its own goroutine, and returns a
// function that waits for them to return after ctx is done.
func (d *Descheduler) StartControllers(ctx context.Context) (wait func()) {
	var wg sync.WaitGroup
	for _, p := range d.profiles {
		for _, c := range p.controllers {
			logger := klog.LoggerWithValues(klog.FromContext(ctx), "profile", p.Name, "plugin", c.Name())
			logger.Info("Starting event-triggered controller")
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() {
					if r := recover(); r != nil {
						d.metrics.PluginFailures.WithLabelValues(c.Name(), p.Name, "controller").Inc()
						logger.Error(fmt.Errorf("panic: %v", r), "Controller panicked", "stack", string(debug.Stack()))
					}
				}()
				c.Run(klog.NewContext(ctx, logger))
			}()
		}
	}
	return wg.Wait
}

func selectNodes(nodes []*corev1.Node, sel labels.Selector) []*corev1.Node {
	if sel.Empty() {
		return nodes
	}
	out := make([]*corev1.Node, 0, len(nodes))
	for _, n := range nodes {
		if sel.Matches(labels.Set(n.Labels)) {
			out = append(out, n)
		}
	}
	return out
}

// scaleReader reads workloads' scale subresources with client; nil for a client that does not talk
// to an apiserver (unit tests' fake clientset).
func scaleReader(client clientset.Interface) evictions.ScaleReader {
	if client == nil {
		return nil
	}
	rc, ok := client.CoreV1().RESTClient().(*rest.RESTClient)
	if !ok || rc == nil {
		return nil
	}
	return evictions.NewScaleReader(client.Discovery(), rc)
}
