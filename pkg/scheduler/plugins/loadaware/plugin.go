// Package loadaware is the LoadAware scheduler plugin: it keeps pods off nodes whose measured usage
// (their NodeMetric) is over a threshold, and prefers nodes that are lightly used. The rules live in
// pkg/constraints, shared with the descheduler; see README.md for the args, an example
// configuration and the events that requeue pods.
package loadaware

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	corelisters "k8s.io/client-go/listers/core/v1"
	compmetrics "k8s.io/component-base/metrics"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/clock"

	"github.com/accord-sched/accord/apis/config"
	"github.com/accord-sched/accord/apis/config/validation"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	"github.com/accord-sched/accord/pkg/constraints"
	"github.com/accord-sched/accord/pkg/scheduler/crcache"
	"github.com/accord-sched/accord/pkg/scheduler/plugins/internal/cyclestate"
	"github.com/accord-sched/accord/pkg/scheduler/plugins/internal/rejections"
)

// Name is the plugin's name in the registry and in configurations.
const Name = constraints.LoadAwareName

const stateKey fwk.StateKey = Name

// SignerName is the key of the pod signature fragment this plugin contributes: the pod's computed
// requests for the weighted resources, which is all the plugin reads from a pod.
const SignerName = "accord.dev/v1.Pod.Spec.LoadAwareRequests()"

const reasonOverThreshold = "node(s) are over their %s usage threshold"

// Plugin is the LoadAware plugin.
type Plugin struct {
	// nodes is the scheduler's crcache.NodeIndex: Filter and Score find each node's NodeMetric
	// there by the Node object they are given, with what this plugin compiled from it (compiled).
	nodes      *crcache.NodeIndex
	compiled   crcache.DerivedKey
	lister     corelisters.NodeLister
	thresholds []constraints.ResourceThreshold
	// reasons are the Filter reasons for the thresholds, aligned with them: written once rather
	// than at each node rejected.
	reasons []string
	weights []constraints.ResourceWeight
	maxAge  time.Duration
	clock   clock.PassiveClock
	// est estimates the usage of the pods a node's NodeMetric does not include yet (nil: off).
	est *constraints.UsageEstimator
	// rejected counts Filter's rejections (accord_scheduler_filter_rejections_total).
	rejected compmetrics.CounterMetric
	// last is the state PreFilter wrote last, which Filter and Score read without the CycleState.
	last cyclestate.Last[preFilterState, *preFilterState]
}

// nodeEntry is what the plugin derives in the NodeIndex from a node's NodeMetric and Node
// (compiled): the metric compiled with the plugin's thresholds and weights, and the last estimate of
// the usage the metric does not include yet, reused while the NodeInfo's generation (its pods) is
// unchanged and the estimate still holds. A new NodeMetric or Node makes a new entry, so an estimate
// never outlives the report it was computed for. Filter and Score read a node's entry at every node
// they visit, where it is seldom in the CPU's cache: the index keeps the entry in the allocation of
// the node's data (crcache.Derive), and the estimate inline, before the NodeLoad, so that a visit
// reads the data's own memory and nothing further.
type nodeEntry struct {
	est  estimate
	load constraints.NodeLoad
}

// estimate is the estimate's change to one node's reported usage for one NodeInfo generation, as
// the NodeLoad's deltas (constraints.NodeLoad.Deltas). Filter and Score run on many goroutines, so
// it is a sequence lock: seq is odd while a writer fills the fields, a reader that sees seq change
// computes the estimate itself, and a writer that finds seq odd leaves the fields to the other one.
// Every field is atomic, so that readers never race with the writer.
type estimate struct {
	seq        atomic.Uint64
	generation atomic.Int64
	// until is when the estimate stops holding (constraints.Adjustment.Until; 0: never).
	until  atomic.Int64
	deltas []atomic.Uint64 // math.Float64bits; points into inline when that holds them all
	inline [inlineDeltas]atomic.Uint64
}

// inlineDeltas is how many deltas an entry keeps inline and Filter and Score keep on the stack: a
// profile with two thresholds and two weights, as LoadAware's defaults, has four.
const inlineDeltas = 4

// init compiles a node's metric into a zero entry and sizes its estimate's deltas.
func (e *nodeEntry) init(l *constraints.Load, allocatable corev1.ResourceList, thresholds []constraints.ResourceThreshold, weights []constraints.ResourceWeight) {
	e.load.Compile(l, allocatable, thresholds, weights)
	if n := e.load.NumDeltas(); n <= len(e.est.inline) {
		e.est.deltas = e.est.inline[:n]
	} else {
		e.est.deltas = make([]atomic.Uint64, n)
	}
	e.est.generation.Store(-1) // no estimate yet
}

// load appends the kept deltas to out when they are those of generation at now.
func (est *estimate) load(generation int64, now time.Time, out []float64) ([]float64, bool) {
	seq := est.seq.Load()
	if seq&1 != 0 || est.generation.Load() != generation {
		return nil, false
	}
	if !constraints.HoldsUntil(est.until.Load(), now) {
		return nil, false
	}
	out = out[:0]
	for i := range est.deltas {
		out = append(out, math.Float64frombits(est.deltas[i].Load()))
	}
	if est.seq.Load() != seq {
		return nil, false
	}
	return out, true
}

// store keeps deltas as the estimate of generation, unless another goroutine is storing one.
func (est *estimate) store(generation, until int64, deltas []float64) {
	seq := est.seq.Load()
	if seq&1 != 0 || len(deltas) != len(est.deltas) || !est.seq.CompareAndSwap(seq, seq+1) {
		return
	}
	est.generation.Store(generation)
	est.until.Store(until)
	for i, d := range deltas {
		est.deltas[i].Store(math.Float64bits(d))
	}
	est.seq.Store(seq + 2)
}

var (
	_ fwk.PreFilterPlugin   = (*Plugin)(nil)
	_ fwk.FilterPlugin      = (*Plugin)(nil)
	_ fwk.ScorePlugin       = (*Plugin)(nil)
	_ fwk.EnqueueExtensions = (*Plugin)(nil)
	_ fwk.SignPlugin        = (*Plugin)(nil)
)

// NewFactory returns the plugin factory to register under Name. Every plugin built by it reads
// NodeMetrics from cache's NodeIndex, which the scheduler's Accord plugins share; Nodes come from the
// scheduler's own informers.
func NewFactory(cache *crcache.Cache) func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	return func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		args, err := argsFrom(obj)
		if err != nil {
			return nil, err
		}
		nodes, err := cache.NodeMetrics(ctx, h)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
		return New(args, nodes, h.SharedInformerFactory().Core().V1().Nodes().Lister(), clock.RealClock{}), nil
	}
}

// New builds the plugin from validated args, a NodeIndex that follows NodeMetrics
// (crcache.Cache.NodeMetrics, or crcache.NodeIndex.NodeMetricHandler) and a Node informer, a Node
// lister (used only by QueueingHints, which must not read the scheduler's snapshot) and a clock.
func New(args *config.LoadAwareArgs, nodes *crcache.NodeIndex, lister corelisters.NodeLister, c clock.PassiveClock) *Plugin {
	p := &Plugin{
		nodes:    nodes,
		lister:   lister,
		maxAge:   time.Duration(args.Expiration()) * time.Second,
		clock:    c,
		rejected: rejections.Counter(Name, rejections.OverThreshold),
	}
	var factors []constraints.ResourceFactor
	for name, pct := range args.EstimatedScalingFactors {
		factors = append(factors, constraints.ResourceFactor{Name: name, Percent: pct})
	}
	slices.SortFunc(factors, func(a, b constraints.ResourceFactor) int { return strings.Compare(string(a.Name), string(b.Name)) })
	p.est = constraints.NewUsageEstimator(factors, time.Duration(args.SecondsAfterScheduled())*time.Second).OnAnnotationClamped(
		func(pod *corev1.Pod, name corev1.ResourceName, annotated, clamp float64) {
			klog.InfoS("Estimated usage annotation above the node's allocatable; counted as the allocatable (logged once per pod and resource)",
				"plugin", Name, "pod", klog.KObj(pod), "annotation", constraints.EstimatedUsageAnnotation, "resource", name, "annotated", annotated, "allocatable", clamp)
		})
	for name, pct := range args.UsageThresholds {
		p.thresholds = append(p.thresholds, constraints.ResourceThreshold{Name: name, Percent: pct})
	}
	for name, w := range args.ResourceWeights {
		p.weights = append(p.weights, constraints.ResourceWeight{Name: name, Weight: w})
	}
	// Sorted, so the resource a rejection names does not depend on map order.
	slices.SortFunc(p.thresholds, func(a, b constraints.ResourceThreshold) int { return strings.Compare(string(a.Name), string(b.Name)) })
	slices.SortFunc(p.weights, func(a, b constraints.ResourceWeight) int { return strings.Compare(string(a.Name), string(b.Name)) })
	for _, t := range p.thresholds {
		p.reasons = append(p.reasons, OverThresholdReason(t.Name))
	}
	// Compiled once per change of a node's NodeMetric or Node, with this plugin's thresholds and
	// weights, rather than once per pod. It answers only for that very Node object (see nodeLoad).
	p.compiled = crcache.Derive(nodes, func(d *crcache.NodeData, e *nodeEntry) bool {
		if d.Load == nil || d.Node == nil {
			return false
		}
		e.init(d.Load, d.Node.Status.Allocatable, p.thresholds, p.weights)
		return true
	})
	return p
}

// WarmNodes computes and keeps the usage estimate of every node with a fresh NodeMetric, for the
// nodes' current generations, as Filter's first visit of each would (the descheduler's simulation
// calls it before its first prediction: simulator.NodeWarmer).
func (p *Plugin) WarmNodes(nodes []fwk.NodeInfo) {
	now := p.clock.Now()
	var buf [inlineDeltas]float64
	for _, ni := range nodes {
		if node := ni.Node(); node != nil {
			p.nodeLoad(ni, node, now, buf[:0])
		}
	}
}

// metric returns the NodeMetric of the node named name (nil: none).
func (p *Plugin) metric(name string) *slov1alpha1.NodeMetric {
	if d := p.nodes.Get(name); d != nil {
		return d.Metric
	}
	return nil
}

// entryFor returns the node's data when it has a NodeMetric (nil: none) and, when the index
// compiled it for this very Node object, the plugin's entry.
func (p *Plugin) entryFor(node *corev1.Node) (*crcache.NodeData, *nodeEntry) {
	d := p.nodes.Lookup(node)
	if d == nil || d.Metric == nil {
		return nil, nil
	}
	if d.Node != node {
		return d, nil
	}
	e, _ := d.Derived(p.compiled).(*nodeEntry)
	return d, e
}

// nodeLoad returns the node's current NodeMetric compiled with this plugin's thresholds and
// weights, and the estimate's change to each usage it reads for the pods of nodeInfo at now
// (constraints.NodeLoad.Deltas, appended to buf; nil when the estimate is off or the metric is not
// fresh). The NodeLoad is nil without a NodeMetric, which NodeLoad's checks treat as a missing
// metric. The entry the index keeps answers only for this very Node object: the scheduler's
// snapshot shares Node objects with the informer, and when the two are a moment apart (a Node
// update on its way) the metric is compiled now for the Node given, and its estimate computed
// without being kept.
func (p *Plugin) nodeLoad(nodeInfo fwk.NodeInfo, node *corev1.Node, now time.Time, buf []float64) (*constraints.NodeLoad, []float64) {
	d, e := p.entryFor(node)
	if d == nil {
		return nil, nil
	}
	var nl *constraints.NodeLoad
	if e != nil {
		nl = &e.load
	} else {
		nl = constraints.NewNodeLoad(d.Load, node.Status.Allocatable, p.thresholds, p.weights)
	}
	if p.est == nil || !nl.Fresh(now, p.maxAge) {
		return nl, nil
	}
	gen := nodeInfo.GetGeneration()
	if e != nil {
		if deltas, ok := e.est.load(gen, now, buf); ok {
			return nl, deltas
		}
	}
	pods := nodeInfo.GetPods()
	adj := p.est.Adjust(d.Load, node.Status.Allocatable, len(pods), func(i int) *corev1.Pod { return pods[i].GetPod() }, now)
	deltas := nl.Deltas(&adj, buf)
	if e != nil {
		e.est.store(gen, adj.Until(), deltas)
	}
	return nl, deltas
}

func argsFrom(obj runtime.Object) (*config.LoadAwareArgs, error) {
	args, ok := obj.(*config.LoadAwareArgs)
	if !ok {
		return nil, fmt.Errorf("%s: want args of type LoadAwareArgs, got %T", Name, obj)
	}
	if errs := validation.ValidateLoadAwareArgs(field.NewPath(Name+"Args"), args); len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w", Name, errs.ToAggregate())
	}
	return args, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// preFilterState is computed once per pod and never modified afterwards, so Clone can share it.
type preFilterState struct {
	// now is the cycle's reference time for metric expiry, read once rather than once per node.
	now time.Time
	// requests are the pod's computed requests, aligned with the plugin's weights.
	requests []float64
}

func (s *preFilterState) Clone() fwk.StateData { return s }

// podRequests returns the pod's requests, as Kubernetes computes them, for the weighted resources.
func (p *Plugin) podRequests(pod *corev1.Pod) corev1.ResourceList {
	all := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	out := make(corev1.ResourceList, len(p.weights))
	for _, w := range p.weights {
		if q, ok := all[w.Name]; ok {
			out[w.Name] = q
		}
	}
	return out
}

// PreFilter computes the pod's requests and fixes the cycle's reference time.
func (p *Plugin) PreFilter(_ context.Context, state fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	p.last.Write(state, stateKey, p.newState(pod))
	return nil, nil
}

// PreFilterExtensions returns nil: Filter reads the pods of the NodeInfo it is given, so the pods
// the scheduler pretends to add or remove (preemption) are already counted there.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

func (p *Plugin) newState(pod *corev1.Pod) *preFilterState {
	return &preFilterState{now: p.clock.Now(), requests: constraints.AlignRequests(p.podRequests(pod), p.weights)}
}

// stateFrom returns what PreFilter computed, or computes it when the profile does not run this
// plugin's PreFilter (enabled at filter and score only).
func (p *Plugin) stateFrom(state fwk.CycleState, pod *corev1.Pod) (*preFilterState, *fwk.Status) {
	return p.last.ReadOrInit(state, stateKey, Name, func() *preFilterState { return p.newState(pod) })
}

// Filter rejects a node whose estimated usage (its fresh NodeMetric's, adjusted for the pods of the
// NodeInfo by constraints.UsageEstimator) is over a resource's threshold. A node without a
// NodeMetric, or with an expired one, always passes. The rejection is
// UnschedulableAndUnresolvable: preempting pods does not lower measured usage at once.
func (p *Plugin) Filter(_ context.Context, state fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, st := p.stateFrom(state, pod)
	if st != nil {
		return st
	}
	node := nodeInfo.Node()
	if node == nil {
		return fwk.NewStatus(fwk.Error, "node not found")
	}
	var buf [inlineDeltas]float64
	nl, deltas := p.nodeLoad(nodeInfo, node, s.now, buf[:0])
	if c := nl.CheckDeltas(deltas, s.now, p.maxAge); c.Overloaded {
		p.rejected.Inc()
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, p.reason(c.Resource))
	}
	return nil
}

// reason is Filter's reason for a node over its threshold for the resource.
func (p *Plugin) reason(name corev1.ResourceName) string {
	for i, t := range p.thresholds {
		if t.Name == name {
			return p.reasons[i]
		}
	}
	return OverThresholdReason(name)
}

// OverThresholdReason is the Filter reason for a node over its threshold for the resource.
func OverThresholdReason(name corev1.ResourceName) string {
	return fmt.Sprintf(reasonOverThreshold, name)
}

// Score prefers lightly used nodes: the weighted mean of each resource's free share once the pod's
// requests are added to the estimated usage, 0-100; a node without a fresh NodeMetric scores 50.
func (p *Plugin) Score(_ context.Context, state fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s, st := p.stateFrom(state, pod)
	if st != nil {
		return 0, st
	}
	node := nodeInfo.Node()
	if node == nil {
		return 0, fwk.NewStatus(fwk.Error, "node not found")
	}
	var buf [inlineDeltas]float64
	nl, deltas := p.nodeLoad(nodeInfo, node, s.now, buf[:0])
	return nl.ScoreDeltas(deltas, s.requests, s.now, p.maxAge), nil
}

// ScoreExtensions returns nil: scores are already on the framework's 0-100 scale.
func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }

// SignPod contributes the pod's requests for the weighted resources, in milli-units.
func (p *Plugin) SignPod(_ context.Context, pod *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	reqs := p.podRequests(pod)
	value := make(map[string]int64, len(reqs))
	for name, q := range reqs {
		value[string(name)] = q.MilliValue()
	}
	return []fwk.SignFragment{{Key: SignerName, Value: value}}, nil
}

// EventsToRegister lists the events that can make a pod this plugin rejected schedulable:
//   - a NodeMetric added or updated that brings an overloaded node under its thresholds, or
//     deleted from an overloaded node (a node without a metric is never rejected);
//   - a Node added, or its allocatable changed, so that it is not over its thresholds;
//   - with the estimate on, an assigned pod deleted: the node's estimated usage drops at once.
//
// A metric that merely expires produces no event; such pods are retried by the scheduler's
// periodic flush of unschedulable pods.
func (p *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	events := []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: crcache.NodeMetricResource, ActionType: fwk.Add | fwk.Update | fwk.Delete}, QueueingHintFn: p.isSchedulableAfterMetricChange},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable}, QueueingHintFn: p.isSchedulableAfterNodeChange},
	}
	if p.est != nil {
		events = append(events, fwk.ClusterEventWithHint{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}, QueueingHintFn: isSchedulableAfterPodDelete})
	}
	return events, nil
}

func (p *Plugin) overloaded(m *slov1alpha1.NodeMetric, node *corev1.Node, now time.Time) bool {
	return constraints.CheckLoad(m, node.Status.Allocatable, p.thresholds, now, p.maxAge).Overloaded
}

func (p *Plugin) isSchedulableAfterMetricChange(logger klog.Logger, pod *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	oldM, err := crcache.ToNodeMetric(oldObj)
	if err != nil {
		return fwk.Queue, err
	}
	newM, err := crcache.ToNodeMetric(newObj)
	if err != nil {
		return fwk.Queue, err
	}
	name := ""
	switch {
	case newM != nil:
		name = newM.Name
	case oldM != nil:
		name = oldM.Name
	default:
		return fwk.QueueSkip, nil
	}
	node, err := p.lister.Get(name)
	if apierrors.IsNotFound(err) {
		logger.V(5).Info("NodeMetric of a node that does not exist", "pod", klog.KObj(pod), "nodeMetric", name)
		return fwk.QueueSkip, nil
	}
	if err != nil {
		return fwk.Queue, err
	}
	now := p.clock.Now()
	if newM != nil && p.overloaded(newM, node, now) {
		logger.V(5).Info("Node is still over its usage thresholds", "pod", klog.KObj(pod), "node", name)
		return fwk.QueueSkip, nil
	}
	// The old metric is judged on its values alone (no expiry): it may have been fresh, and have
	// rejected the pod, when the pod was last tried.
	if oldM != nil && !constraints.CheckLoad(oldM, node.Status.Allocatable, p.thresholds, now, 0).Overloaded {
		// The node was not over its thresholds before either: this plugin did not reject it.
		logger.V(5).Info("Node was not over its usage thresholds", "pod", klog.KObj(pod), "node", name)
		return fwk.QueueSkip, nil
	}
	if newM != nil {
		// Wait for what Filter reads: the NodeIndex, which follows the Cache's informer.
		crcache.AwaitResourceVersion(newM.ResourceVersion, crcache.CatchUpTimeout, func() (string, bool) {
			cur := p.metric(name)
			if cur == nil {
				return "", false
			}
			return cur.ResourceVersion, true
		})
	}
	logger.V(4).Info("Node is now under its usage thresholds", "pod", klog.KObj(pod), "node", name)
	return fwk.Queue, nil
}

func (p *Plugin) isSchedulableAfterNodeChange(logger klog.Logger, pod *corev1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	node, ok := newObj.(*corev1.Node)
	if !ok {
		return fwk.Queue, fmt.Errorf("%s: expected a Node, got %T", Name, newObj)
	}
	if p.overloaded(p.metric(node.Name), node, p.clock.Now()) {
		logger.V(5).Info("Node is over its usage thresholds", "pod", klog.KObj(pod), "node", node.Name)
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}

// isSchedulableAfterPodDelete queues the pod when an assigned pod is deleted: its node's estimated
// usage no longer counts it.
func isSchedulableAfterPodDelete(logger klog.Logger, pod *corev1.Pod, oldObj, _ any) (fwk.QueueingHint, error) {
	deleted, ok := oldObj.(*corev1.Pod)
	if !ok || deleted.Spec.NodeName == "" {
		return fwk.QueueSkip, nil
	}
	logger.V(5).Info("Assigned pod deleted: its node's estimated usage dropped", "pod", klog.KObj(pod), "deletedPod", klog.KObj(deleted), "node", deleted.Spec.NodeName)
	return fwk.Queue, nil
}
