// Package loadaware is the LoadAware scheduler plugin: it keeps pods off nodes whose measured usage
// (their NodeMetric) is over a threshold, and prefers nodes that are lightly used. The rules live in
// pkg/constraints, shared with the descheduler; see README.md for the args, an example
// configuration and the events that requeue pods.
package loadaware

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
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
)

// Name is the plugin's name in the registry and in configurations.
const Name = "LoadAware"

const stateKey fwk.StateKey = Name

// SignerName is the key of the pod signature fragment this plugin contributes: the pod's computed
// requests for the weighted resources, which is all the plugin reads from a pod.
const SignerName = "accord.dev/v1.Pod.Spec.LoadAwareRequests()"

const reasonOverThreshold = "node(s) are over their %s usage threshold"

// Plugin is the LoadAware plugin.
type Plugin struct {
	metrics    crcache.Store[slov1alpha1.NodeMetric]
	nodes      corelisters.NodeLister
	thresholds []constraints.ResourceThreshold
	weights    []constraints.ResourceWeight
	maxAge     time.Duration
	clock      clock.PassiveClock

	// views maps the name of a node with a NodeMetric to its view. Filter and Score read it under
	// a read lock; the NodeMetric store's watch and the Node informer's handler replace views.
	// nodeObjs holds the Node objects the informer delivered, for views built later; only writers
	// use it, under viewsMu's write lock.
	viewsMu  sync.RWMutex
	views    map[string]*nodeView
	nodeObjs map[string]*corev1.Node

	// cells holds, for each node the Node informer delivered, a cell with the node's current view
	// (nil: no NodeMetric); a NodeMetric change swaps the view in the cell. byNode maps the Node
	// objects themselves to their cells, so Filter and Score find a view by pointer, without a
	// lock or a lookup by node name (which, at thousands of nodes, cost more than the rest of the
	// plugin). byNode is immutable once published and answers only while its gen is current: a Node
	// event bumps gen (a NodeMetric change does not), and the first read after that builds a new
	// one. A Node object it does not hold falls back to views. cells is guarded by viewsMu.
	cells    map[string]*atomic.Pointer[nodeView]
	byNode   atomic.Pointer[viewsByNode]
	gen      atomic.Uint64
	building atomic.Bool
}

// viewsByNode is a by-node map of view cells built when gen was current.
type viewsByNode struct {
	gen uint64
	m   map[*corev1.Node]*atomic.Pointer[nodeView]
}

// nodeView is what Filter and Score need about one node, prepared when its NodeMetric or its Node
// changes rather than once per pod. It is never modified once stored.
type nodeView struct {
	// metric is the node's NodeMetric and load its compiled form.
	metric *slov1alpha1.NodeMetric
	load   *constraints.Load
	// node is the Node object the informer delivered last; nil when none was seen.
	node *corev1.Node
	// compiled is load compiled against node's allocatable and the plugin's thresholds and weights;
	// nil when load or node is. It answers only for that very Node object: the scheduler's snapshot
	// shares Node objects with the informer, so Filter uses it when the node it is given is node,
	// and otherwise (the snapshot and the informer are a moment apart) falls back to load.
	compiled *constraints.NodeLoad
}

var (
	_ fwk.PreFilterPlugin   = (*Plugin)(nil)
	_ fwk.FilterPlugin      = (*Plugin)(nil)
	_ fwk.ScorePlugin       = (*Plugin)(nil)
	_ fwk.EnqueueExtensions = (*Plugin)(nil)
	_ fwk.SignPlugin        = (*Plugin)(nil)
)

// NewFactory returns the plugin factory to register under Name. Every plugin built by it reads
// NodeMetrics from cache, which the scheduler's Accord plugins share; Nodes come from the
// scheduler's own informers.
func NewFactory(cache *crcache.Cache) func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	return func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		args, err := argsFrom(obj)
		if err != nil {
			return nil, err
		}
		store, err := cache.NodeMetrics(ctx, h)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
		nodes := h.SharedInformerFactory().Core().V1().Nodes()
		p := New(args, store, nodes.Lister(), clock.RealClock{})
		if _, err := nodes.Informer().AddEventHandler(p.nodeEventHandler()); err != nil {
			return nil, fmt.Errorf("%s: watching Nodes: %w", Name, err)
		}
		return p, nil
	}
}

// New builds the plugin from validated args, a NodeMetric store, a Node lister (used only by
// QueueingHints, which must not read the scheduler's snapshot) and a clock.
func New(args *config.LoadAwareArgs, metrics crcache.Store[slov1alpha1.NodeMetric], nodes corelisters.NodeLister, c clock.PassiveClock) *Plugin {
	p := &Plugin{
		metrics:  metrics,
		nodes:    nodes,
		maxAge:   time.Duration(args.NodeMetricExpirationSeconds) * time.Second,
		clock:    c,
		views:    map[string]*nodeView{},
		nodeObjs: map[string]*corev1.Node{},
		cells:    map[string]*atomic.Pointer[nodeView]{},
	}
	for name, pct := range args.UsageThresholds {
		p.thresholds = append(p.thresholds, constraints.ResourceThreshold{Name: name, Percent: pct})
	}
	for name, w := range args.ResourceWeights {
		p.weights = append(p.weights, constraints.ResourceWeight{Name: name, Weight: w})
	}
	// Sorted, so the resource a rejection names does not depend on map order.
	slices.SortFunc(p.thresholds, func(a, b constraints.ResourceThreshold) int { return strings.Compare(string(a.Name), string(b.Name)) })
	slices.SortFunc(p.weights, func(a, b constraints.ResourceWeight) int { return strings.Compare(string(a.Name), string(b.Name)) })
	metrics.Watch(p.metricChanged)
	return p
}

// view returns the node's view, or nil when the node has no NodeMetric.
func (p *Plugin) view(name string) *nodeView {
	p.viewsMu.RLock()
	v := p.views[name]
	p.viewsMu.RUnlock()
	return v
}

// viewOf returns the view of the node (nil when it has no NodeMetric), by Node object when it can.
func (p *Plugin) viewOf(node *corev1.Node) *nodeView {
	if b := p.byNode.Load(); b != nil && b.gen == p.gen.Load() {
		if c, ok := b.m[node]; ok {
			return c.Load()
		}
	} else {
		p.buildByNode()
	}
	return p.view(node.Name)
}

// buildByNode publishes a by-node map for the current gen, unless another goroutine is building
// one (meanwhile, reads fall back to views).
func (p *Plugin) buildByNode() {
	if !p.building.CompareAndSwap(false, true) {
		return
	}
	defer p.building.Store(false)
	gen := p.gen.Load()
	p.viewsMu.RLock()
	m := make(map[*corev1.Node]*atomic.Pointer[nodeView], len(p.nodeObjs))
	for name, n := range p.nodeObjs {
		if c := p.cells[name]; c != nil {
			m[n] = c
		}
	}
	p.viewsMu.RUnlock()
	p.byNode.Store(&viewsByNode{gen: gen, m: m})
}

// setView replaces the node's view; the caller holds viewsMu.
func (p *Plugin) setView(name string, metric *slov1alpha1.NodeMetric, load *constraints.Load, node *corev1.Node) {
	var v *nodeView
	if metric == nil {
		delete(p.views, name)
	} else {
		v = &nodeView{metric: metric, load: load, node: node}
		if load != nil && node != nil {
			v.compiled = constraints.NewNodeLoad(load, node.Status.Allocatable, p.thresholds, p.weights)
		}
		p.views[name] = v
	}
	if c := p.cells[name]; c != nil {
		c.Store(v)
	}
}

// metricChanged follows the NodeMetric store (see crcache.Store.Watch); metric is nil after a
// delete.
func (p *Plugin) metricChanged(name string, metric *slov1alpha1.NodeMetric, derived any) {
	load, _ := derived.(*constraints.Load)
	p.viewsMu.Lock()
	defer p.viewsMu.Unlock()
	p.setView(name, metric, load, p.nodeObjs[name])
}

// nodeChanged follows the Node informer; node is nil after a delete.
func (p *Plugin) nodeChanged(name string, node *corev1.Node) {
	p.viewsMu.Lock()
	defer p.viewsMu.Unlock()
	if node == nil {
		delete(p.nodeObjs, name)
		delete(p.cells, name)
	} else {
		p.nodeObjs[name] = node
		if p.cells[name] == nil {
			c := &atomic.Pointer[nodeView]{}
			c.Store(p.views[name])
			p.cells[name] = c
		}
	}
	if v := p.views[name]; v != nil {
		p.setView(name, v.metric, v.load, node)
	}
	p.gen.Add(1)
}

// nodeEventHandler keeps the views in step with the scheduler's Node informer.
func (p *Plugin) nodeEventHandler() cache.ResourceEventHandler {
	set := func(obj any) {
		if n, ok := obj.(*corev1.Node); ok {
			p.nodeChanged(n.Name, n)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, obj any) { set(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if n, ok := obj.(*corev1.Node); ok {
				p.nodeChanged(n.Name, nil)
			}
		},
	}
}

// check is constraints.CheckLoad for the node's current NodeMetric, from the compiled view when it
// was built for this very Node object.
func (p *Plugin) check(node *corev1.Node, now time.Time) constraints.LoadCheck {
	v := p.viewOf(node)
	switch {
	case v == nil:
		return constraints.LoadCheck{Stale: true}
	case v.compiled != nil && v.node == node:
		return v.compiled.Check(now, p.maxAge)
	default:
		// The scheduler's snapshot holds a newer Node than the view (its update is on the way):
		// compile for that Node, once.
		return constraints.NewNodeLoad(v.load, node.Status.Allocatable, p.thresholds, nil).Check(now, p.maxAge)
	}
}

// score is constraints.LoadScore for the node's current NodeMetric; see check.
func (p *Plugin) score(node *corev1.Node, requests []float64, now time.Time) int64 {
	v := p.viewOf(node)
	switch {
	case v == nil:
		return constraints.NeutralLoadScore
	case v.compiled != nil && v.node == node:
		return v.compiled.Score(requests, now, p.maxAge)
	default:
		return constraints.NewNodeLoad(v.load, node.Status.Allocatable, nil, p.weights).Score(requests, now, p.maxAge)
	}
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
	state.Write(stateKey, p.newState(pod))
	return nil, nil
}

// PreFilterExtensions returns nil: measured usage does not change with the pods the scheduler
// pretends to add or remove.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

func (p *Plugin) newState(pod *corev1.Pod) *preFilterState {
	return &preFilterState{now: p.clock.Now(), requests: constraints.AlignRequests(p.podRequests(pod), p.weights)}
}

// stateFrom returns what PreFilter computed, or computes it when the profile does not run this
// plugin's PreFilter (enabled at filter and score only).
func (p *Plugin) stateFrom(state fwk.CycleState, pod *corev1.Pod) (*preFilterState, *fwk.Status) {
	return cyclestate.ReadOrInit(state, stateKey, Name, func() *preFilterState { return p.newState(pod) })
}

// Filter rejects a node whose fresh NodeMetric shows a resource's usage over its threshold. A
// node without a NodeMetric, or with an expired one, always passes. The rejection is
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
	if c := p.check(node, s.now); c.Overloaded {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, OverThresholdReason(c.Resource))
	}
	return nil
}

// OverThresholdReason is the Filter reason for a node over its threshold for the resource.
func OverThresholdReason(name corev1.ResourceName) string {
	return fmt.Sprintf(reasonOverThreshold, name)
}

// Score prefers lightly used nodes: the weighted mean of each resource's free share once the pod's
// requests are added to the measured usage, 0-100; a node without a fresh NodeMetric scores 50.
func (p *Plugin) Score(_ context.Context, state fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s, st := p.stateFrom(state, pod)
	if st != nil {
		return 0, st
	}
	node := nodeInfo.Node()
	if node == nil {
		return 0, fwk.NewStatus(fwk.Error, "node not found")
	}
	return p.score(node, s.requests, s.now), nil
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
//   - a Node added, or its allocatable changed, so that it is not over its thresholds.
//
// A metric that merely expires produces no event; such pods are retried by the scheduler's
// periodic flush of unschedulable pods.
func (p *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: crcache.NodeMetricResource, ActionType: fwk.Add | fwk.Update | fwk.Delete}, QueueingHintFn: p.isSchedulableAfterMetricChange},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable}, QueueingHintFn: p.isSchedulableAfterNodeChange},
	}, nil
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
	node, err := p.nodes.Get(name)
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
		// Wait for what Filter reads: the node's view, which follows the store.
		crcache.AwaitResourceVersion(newM.ResourceVersion, crcache.CatchUpTimeout, func() (string, bool) {
			cur := p.view(name)
			if cur == nil || cur.metric == nil {
				return "", false
			}
			return cur.metric.ResourceVersion, true
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
	if p.overloaded(p.metrics.Get(node.Name), node, p.clock.Now()) {
		logger.V(5).Info("Node is over its usage thresholds", "pod", klog.KObj(pod), "node", node.Name)
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}
