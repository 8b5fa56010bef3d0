package schedulersimulation

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/cache"
	compmetrics "k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/accord-sched/accord/pkg/crdcheck"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/decision"
	deschedmetrics "github.com/accord-sched/accord/pkg/descheduler/metrics"
	"github.com/accord-sched/accord/pkg/descheduler/simulator"
	schedplugins "github.com/accord-sched/accord/pkg/scheduler/plugins"
)

// Name is the plugin's name in the registry and in policies.
const Name = "SchedulerSimulation"

// cycleGap: without the runtime calling BeginCycle/EndCycle, a preEvictionFilter call after this
// long without one starts a new cycle (the moves admitted in the previous one are reverted).
const cycleGap = time.Second

// pendingTTL bounds how long an evicted pod whose replacement has not been bound yet is counted on
// its predicted node at the start of a cycle.
const pendingTTL = time.Minute

// Verdicts.
const (
	VerdictEvict   = "evict"
	VerdictBlocked = "blocked"
)

// NodeVerdicter is implemented by a deschedule or balance plugin that can tell whether a pod, once
// placed on node, would itself be flagged by it (and evicted again). SchedulerSimulation refuses an
// eviction whose predicted node a registered NodeVerdicter flags. The runtime registers every
// enabled deschedule/balance plugin of the profile that implements it (SetNominators).
type NodeVerdicter = framework.NodeVerdicter

// CycleHook is implemented by SchedulerSimulation; the runtime calls it at the start and end of
// every descheduling cycle. Outside a runtime cycle (event-triggered controllers, or a runtime
// without hooks), a cycle is taken to start at the first preEvictionFilter call after a pause of a
// second.
type CycleHook = framework.CycleHook

// PodIntrinsicNominator is implemented by the plugins that nominate pods for what they are, not for
// where they run (PodLifeTime, RemoveFailedPods, RemovePodsHavingTooManyRestarts): their evictions
// are not placement decisions, a replacement on the same node is no loop, so SchedulerSimulation
// only records its prediction (and composes it) but never blocks them. The runtime registers them
// (SetNominators).
type PodIntrinsicNominator = framework.PodIntrinsicNominator

// Decision is the plugin's verdict on one eviction candidate, for logs, Events and explain.
type Decision struct {
	Namespace, Pod string
	Node           string
	Profile        string
	// Plugin is the plugin that nominated the pod ("" when unknown).
	Plugin     string
	Verdict    string
	Reason     string
	Message    string
	Prediction simulator.Prediction
	// Simulation is how long the prediction took (0 when none ran).
	Simulation time.Duration
}

// Plugin is the SchedulerSimulation plugin.
type Plugin struct {
	handle  framework.Handle
	args    *SchedulerSimulationArgs
	sim     *simulator.Simulator
	flaps   *flapMemory
	metrics *Metrics
	clock   clock.PassiveClock
	ctx     context.Context
	cancel  context.CancelFunc

	mu sync.Mutex
	// runtimeCycle: the runtime opened the current cycle (BeginCycle) and has not closed it.
	runtimeCycle bool
	open         bool
	lastCall     time.Time
	verdicts     []namedVerdicter
	intrinsic    map[string]bool // the pod-intrinsic nominators, by plugin name
	decisions    map[types.UID]Decision
	// podReg is the registration of the plugin's own pod handler (the flap memory's).
	podReg cache.ResourceEventHandlerRegistration
}

type namedVerdicter struct {
	name string
	v    NodeVerdicter
}

var (
	_ framework.PlacementJudge = (*Plugin)(nil)
	_ framework.CycleHook      = (*Plugin)(nil)
)

// New builds the plugin from its args (defaulted and validated by the policy decoder) and the
// profile's Handle. It builds kube-scheduler's framework for every profile of the scheduler
// configuration over the Handle's informers; they must be started (the runtime does) before the
// first simulation.
func New(ctx context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	return NewFactory(nil)(ctx, obj, h)
}

// NewFactory is New with the scheduler plugins the simulated scheduler registers besides
// kube-scheduler's in-tree ones: nil means accord-scheduler's own, schedplugins.Descriptors(); an
// out-of-tree scheduler plugin is added to that list (runner.WithSchedulerPlugin does).
func NewFactory(schedulerPlugins []schedplugins.Descriptor) framework.PluginFactory {
	return func(ctx context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
		args, ok := obj.(*SchedulerSimulationArgs)
		if !ok {
			return nil, fmt.Errorf("want args of type SchedulerSimulationArgs, got %T", obj)
		}
		return newPlugin(ctx, args, h, clock.RealClock{}, schedulerPlugins)
	}
}

// NewWithClock is New with a clock for the flap memory and the cycle detection. The simulator's
// informer handlers and logs live under ctx (and stop with it or with the plugin's Close).
func NewWithClock(ctx context.Context, args *SchedulerSimulationArgs, h framework.Handle, c clock.PassiveClock) (*Plugin, error) {
	return newPlugin(ctx, args, h, c, nil)
}

func newPlugin(ctx context.Context, args *SchedulerSimulationArgs, h framework.Handle, c clock.PassiveClock, schedulerPlugins []schedplugins.Descriptor) (*Plugin, error) {
	args = args.DeepCopy()
	args.SetDefaults()
	if errs := args.Validate(field.NewPath(Name + "Args")); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	cfg, err := simulator.LoadConfig(args.SchedulerConfigFile)
	if err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx).WithName(Name)
	ctx, cancel := context.WithCancel(klog.NewContext(ctx, logger))
	opts := simulator.Options{
		Config:          cfg,
		FallbackProfile: args.Profile,
		Client:          h.ClientSet(),
		InformerFactory: h.SharedInformerFactory(),
		Plugins:         schedulerPlugins,
	}
	if af := h.AccordInformerFactory(); af != nil {
		opts.AccordInformerFactory = af
		opts.CRDs = crdAvailability{h}
	}
	sim, err := simulator.New(ctx, opts)
	if err != nil {
		cancel()
		return nil, err
	}
	p := &Plugin{
		handle: h, args: args, sim: sim, metrics: newMetrics(), clock: c, ctx: ctx, cancel: cancel,
		flaps:     newFlapMemory(c, args.FlapWindow.Duration, args.BackoffBase.Duration, args.BackoffMax.Duration),
		decisions: map[types.UID]Decision{},
	}
	if p.podReg, err = h.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.podAdded(obj) },
		UpdateFunc: p.podUpdated,
		DeleteFunc: p.podDeleted,
	}); err != nil {
		cancel()
		return nil, err
	}
	return p, nil
}

// crdAvailability answers for the Handle which CRDs the cluster serves.
type crdAvailability struct{ h framework.Handle }

func (a crdAvailability) Serves(crd crdcheck.CRD) bool { return a.h.ServesCRD(crd) }

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// Metrics returns the plugin's metrics, to register with the descheduler's registry.
func (p *Plugin) Metrics() *Metrics { return p.metrics }

// Simulator returns the plugin's simulator.
func (p *Plugin) Simulator() *simulator.Simulator { return p.sim }

// RegisterMetrics registers the plugin's metrics with reg; every instance registered with the same
// registry (one per profile) shares one set (the profile is a label).
func (p *Plugin) RegisterMetrics(reg compmetrics.KubeRegistry) error {
	m, err := deschedmetrics.RegisterShared(reg, Name, func(reg compmetrics.KubeRegistry) (*Metrics, error) {
		return p.metrics, p.metrics.Register(reg)
	})
	if err != nil {
		return err
	}
	p.metrics = m
	return nil
}

// HasSynced reports whether the simulator's scheduler cache and the plugin's pod handler have been
// delivered the informers' initial lists (framework.PlacementJudge): the runtime waits for it before
// the first cycle, so the cycle does not spend its time filling the cache.
func (p *Plugin) HasSynced() bool { return p.sim.HasSynced() && p.podReg.HasSynced() }

// Warm builds the simulator's snapshot and label index before the first cycle or event
// (framework.Warmer).
func (p *Plugin) Warm(ctx context.Context) error { return p.sim.Warm(ctx) }

// Close stops the simulator's goroutines.
func (p *Plugin) Close() error {
	p.cancel()
	return nil
}

// SetNominators takes the profile's deschedule and balance plugins (framework.PlacementJudge): the
// NodeVerdicters among them judge predicted nodes, in the order given, and the nominations of the
// pod-intrinsic ones are never blocked.
func (p *Plugin) SetNominators(nominators []framework.Nominator) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.verdicts, p.intrinsic = nil, map[string]bool{}
	for _, n := range nominators {
		if n.Verdicter != nil {
			p.verdicts = append(p.verdicts, namedVerdicter{n.Name, n.Verdicter})
		}
		if n.PodIntrinsic {
			p.intrinsic[n.Name] = true
		}
	}
}

// BeginCycle starts a cycle: the simulation snapshot is brought up to date and the decisions of
// the previous cycle are forgotten.
func (p *Plugin) BeginCycle(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.runtimeCycle = true
	p.beginLocked(ctx)
}

// EndCycle reverts the moves admitted in the cycle.
func (p *Plugin) EndCycle(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.runtimeCycle = false
	p.sim.EndCycle(ctx)
	p.open = false
}

func (p *Plugin) beginLocked(ctx context.Context) {
	if err := p.sim.BeginCycle(ctx); err != nil {
		klog.FromContext(ctx).Error(err, "Starting a simulation cycle")
		p.open = false
		return
	}
	p.open = true
	// Replacements not bound yet take their predicted room in this cycle too.
	for _, m := range p.flaps.Pending(pendingTTL) {
		if err := p.sim.Admit(ctx, m.Pod, m.Predicted); err != nil {
			klog.FromContext(ctx).V(4).Info("Counting a pending replacement on its predicted node", "pod", klog.KObj(m.Pod), "node", m.Predicted, "err", err)
		}
	}
	clear(p.decisions)
	p.metrics.BackoffsActive.WithLabelValues(p.handle.ProfileName()).Set(float64(p.flaps.Active()))
}

// Filter lets a pod through unless evictions of its owner from its node are backing off.
func (p *Plugin) Filter(pod *corev1.Pod) bool {
	_, blocked := p.flaps.BlockedUntil(pod)
	return !blocked
}

// PreEvictionFilter admits the eviction of pod only if kube-scheduler, simulated, would place its
// replacement on another node that no registered NodeVerdicter flags, and evictions of its owner
// from its node are not backing off. An admitted pod moves, in the simulation, to its predicted
// node for the rest of the cycle.
func (p *Plugin) PreEvictionFilter(pod *corev1.Pod) bool {
	ok, _ := p.PreEvictionFilterFor(pod, "")
	return ok
}

// PreEvictionFilterFor is PreEvictionFilter knowing the plugin that nominated the pod: a
// nomination by a registered PodIntrinsicNominator is never blocked. For an admitted pod it returns
// the prediction of the decision it just took (framework.PlacementJudge), taken under the same lock:
// the decision may be forgotten by the time the pod is evicted (a cycle began meanwhile).
func (p *Plugin) PreEvictionFilterFor(pod *corev1.Pod, nominator string) (bool, *decision.Prediction) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ctx := p.ctx
	now := p.clock.Now()
	if !p.runtimeCycle && (!p.open || now.Sub(p.lastCall) > cycleGap) {
		p.beginLocked(ctx)
	}
	p.lastCall = now
	d := p.decide(ctx, pod, nominator)
	p.decisions[pod.UID] = d
	p.metrics.Decisions.WithLabelValues(p.handle.ProfileName(), d.Verdict, d.Reason).Inc()
	logger := klog.FromContext(ctx)
	kv := []any{"pod", klog.KObj(pod), "node", pod.Spec.NodeName, "verdict", d.Verdict, "reason", d.Reason,
		"predictedNode", d.Prediction.Node, "score", d.Prediction.Score, "currentNodeScore", d.Prediction.CurrentNodeScore,
		"schedulerProfile", d.Prediction.Profile, "simulation", d.Simulation}
	if d.Verdict == VerdictEvict {
		logger.V(1).Info("Eviction admitted by the scheduler simulation", kv...)
	} else {
		logger.V(2).Info("Eviction blocked by the scheduler simulation", append(kv, "message", d.Message)...)
	}
	if d.Verdict != VerdictEvict {
		return false, nil
	}
	return true, d.prediction()
}

// prediction is an admitted decision's prediction for the pod's decision record: the node and
// score when the simulation found the replacement a place.
func (d Decision) prediction() *decision.Prediction {
	out := &decision.Prediction{Judge: Name, SchedulerProfile: d.Prediction.Profile, CurrentNode: d.Node, Message: d.Message}
	if pred := d.Prediction; pred.Feasible {
		score := pred.Score
		out.Node, out.Score = pred.Node, &score
		if pred.CurrentNodeFeasible {
			cur := pred.CurrentNodeScore
			out.CurrentNodeScore = &cur
		}
	}
	return out
}

func (p *Plugin) decide(ctx context.Context, pod *corev1.Pod, nominator string) Decision {
	d := Decision{Namespace: pod.Namespace, Pod: pod.Name, Node: pod.Spec.NodeName, Profile: p.handle.ProfileName(), Plugin: nominator, Verdict: VerdictBlocked}
	if !p.open {
		d.Reason, d.Message = ReasonError, "the simulation snapshot could not be brought up to date"
		return d
	}
	if p.intrinsic[nominator] {
		return p.decideIntrinsic(ctx, pod, d)
	}
	if until, blocked := p.flaps.BlockedUntil(pod); blocked {
		d.Reason = ReasonFlapBackoff
		d.Message = fmt.Sprintf("a replacement of its owner landed back on %s; evictions from it back off until %s", pod.Spec.NodeName, until.UTC().Format(time.RFC3339))
		return d
	}
	pred, err := p.predict(ctx, pod, &d)
	switch {
	case err != nil:
		d.Reason, d.Message = ReasonError, err.Error()
		return d
	case !pred.Feasible:
		d.Reason, d.Message = ReasonInfeasible, pred.Reason
		return d
	case !pred.Moves():
		d.Reason = ReasonSameNode
		d.Message = fmt.Sprintf("the scheduler would place the replacement back on %s (score %d)", pred.Node, pred.Score)
		if pred.Reason != "" {
			d.Message += ": " + pred.Reason
		}
		return d
	}
	if len(p.verdicts) > 0 {
		node, err := p.handle.SharedInformerFactory().Core().V1().Nodes().Lister().Get(pred.Node)
		if err != nil {
			d.Reason, d.Message = ReasonError, err.Error()
			return d
		}
		// The nominating plugin first, then the profile's others: a predicted node any of them
		// flags would only start a ping-pong between plugins.
		verdicts := slices.Clone(p.verdicts)
		slices.SortStableFunc(verdicts, func(a, b namedVerdicter) int {
			switch {
			case a.name == nominator && b.name != nominator:
				return -1
			case b.name == nominator && a.name != nominator:
				return 1
			}
			return 0
		})
		for _, v := range verdicts {
			if flagged, why := v.v.NodeVerdict(pod, node); flagged {
				d.Reason = ReasonFlagged
				d.Message = fmt.Sprintf("%s would flag the pod on its predicted node %s: %s", v.name, pred.Node, why)
				return d
			}
		}
	}
	if err := p.sim.Admit(ctx, pod, pred.Node); err != nil {
		d.Reason, d.Message = ReasonError, err.Error()
		return d
	}
	p.flaps.Evicting(pod, pred.Node)
	d.Verdict, d.Reason = VerdictEvict, ReasonAdmitted
	d.Message = EvictionMessage(pred)
	return d
}

// predict runs the simulation for pod, recording the prediction and its duration in d and in the
// duration metric.
func (p *Plugin) predict(ctx context.Context, pod *corev1.Pod, d *Decision) (simulator.Prediction, error) {
	start := time.Now()
	pred, err := p.sim.Predict(ctx, pod)
	d.Simulation = time.Since(start)
	p.metrics.Duration.WithLabelValues(p.handle.ProfileName()).Observe(d.Simulation.Seconds())
	d.Prediction = pred
	return pred, err
}

// decideIntrinsic admits a pod nominated for what it is: the prediction is recorded (and, when
// feasible, composed into the cycle's snapshot), nothing blocks it.
func (p *Plugin) decideIntrinsic(ctx context.Context, pod *corev1.Pod, d Decision) Decision {
	d.Verdict, d.Reason = VerdictEvict, ReasonPodIntrinsic
	pred, err := p.predict(ctx, pod, &d)
	switch {
	case err != nil:
		d.Message = "not a placement decision; no prediction: " + err.Error()
	case !pred.Feasible:
		d.Message = "not a placement decision; the replacement would not fit anywhere now: " + pred.Reason
	default:
		if err := p.sim.Admit(ctx, pod, pred.Node); err != nil {
			d.Message = "not a placement decision; " + err.Error()
			return d
		}
		d.Message = EvictionMessage(pred)
	}
	return d
}

// EvictionMessage describes an admitted eviction's prediction, for the pod's Event.
func EvictionMessage(pred simulator.Prediction) string {
	msg := fmt.Sprintf("scheduler simulation (profile %s): replacement predicted on %s with score %d", pred.Profile, pred.Node, pred.Score)
	if pred.CurrentNodeFeasible {
		msg += fmt.Sprintf(" (current node %s: %d)", pred.CurrentNode, pred.CurrentNodeScore)
	} else {
		msg += fmt.Sprintf(" (current node %s does not fit)", pred.CurrentNode)
	}
	return msg
}

// Decision returns the decision taken on a pod in the current cycle.
func (p *Plugin) Decision(pod *corev1.Pod) (Decision, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d, ok := p.decisions[pod.UID]
	return d, ok
}

// RefusalMessage returns why pod was refused in this cycle (the scheduler's "0/N nodes are
// available: ..." message for a replacement that fits nowhere), "" when it was not refused
// (framework.PlacementJudge).
func (p *Plugin) RefusalMessage(pod *corev1.Pod) string {
	if d, ok := p.Decision(pod); ok && d.Verdict != VerdictEvict {
		if d.Message == "" {
			return d.Reason
		}
		return d.Reason + ": " + d.Message
	}
	return ""
}

// Decisions returns the decisions of the current cycle, sorted by namespace and name.
func (p *Plugin) Decisions() []Decision {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Decision, 0, len(p.decisions))
	for _, d := range p.decisions {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b Decision) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Pod, b.Pod)
	})
	return out
}

func (p *Plugin) podAdded(obj any) {
	if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
		p.landed(pod)
	}
}

func (p *Plugin) podUpdated(oldObj, newObj any) {
	oldPod, ok1 := oldObj.(*corev1.Pod)
	pod, ok2 := newObj.(*corev1.Pod)
	if !ok1 || !ok2 {
		return
	}
	if pod.DeletionTimestamp != nil && oldPod.DeletionTimestamp == nil {
		p.flaps.Gone(pod)
	}
	if oldPod.Spec.NodeName == "" && pod.Spec.NodeName != "" {
		p.landed(pod)
	}
}

func (p *Plugin) podDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		p.flaps.Gone(pod)
	}
}

func (p *Plugin) landed(pod *corev1.Pod) {
	l := p.flaps.Bound(pod)
	if !l.Matched {
		return
	}
	profile := p.handle.ProfileName()
	logger := klog.FromContext(p.ctx)
	result := "predicted"
	if l.Node != l.Predicted {
		result = "elsewhere"
	}
	p.metrics.Landings.WithLabelValues(profile, result).Inc()
	if l.Flap {
		p.metrics.Flaps.WithLabelValues(profile, pod.Namespace).Inc()
		p.metrics.BackoffsActive.WithLabelValues(profile).Set(float64(p.flaps.Active()))
		logger.Info("Replacement landed back on the node its predecessor was evicted from; backing off", "pod", klog.KObj(pod), "node", l.Node, "predictedNode", l.Predicted, "backoff", l.Backoff)
		return
	}
	logger.V(2).Info("Replacement of an evicted pod bound", "pod", klog.KObj(pod), "node", l.Node, "from", l.From, "predictedNode", l.Predicted)
}
