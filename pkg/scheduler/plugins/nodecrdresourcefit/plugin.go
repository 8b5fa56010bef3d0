// Package nodecrdresourcefit is the NodeCRDResourceFit scheduler plugin: a pod fits a node only if
// the node's ClusterScopedResource (the CR named after the node) enables every resource the pod
// requests, and among the nodes that fit, the ones whose CR scores those resources higher are
// preferred. The rules themselves live in pkg/constraints, shared with the descheduler; see
// README.md for the args, an example configuration and the events that requeue pods.
package nodecrdresourcefit

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	compmetrics "k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/accord-sched/accord/apis/config"
	"github.com/accord-sched/accord/apis/config/validation"
	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/constraints"
	"github.com/accord-sched/accord/pkg/scheduler/crcache"
	"github.com/accord-sched/accord/pkg/scheduler/plugins/internal/cyclestate"
	"github.com/accord-sched/accord/pkg/scheduler/plugins/internal/rejections"
)

// Name is the plugin's name in the registry and in configurations.
const Name = constraints.NodeCRDResourceFitName

const stateKey fwk.StateKey = Name

// SignerName is the key of the pod signature fragment this plugin contributes: the sorted names
// of the resources the pod requests, which is all the plugin reads from a pod.
const SignerName = "accord.dev/v1.Pod.Spec.RequestedResourceNames()"

// Reasons reported in Unschedulable statuses; the scheduler counts nodes per reason in its
// FailedScheduling event, e.g. "3 node(s) do not enable resource example.com/memory".
const (
	ReasonNoCR            = "node(s) have no ClusterScopedResource"
	reasonMissingResource = "node(s) do not enable resource %s"
)

// Plugin is the NodeCRDResourceFit plugin.
type Plugin struct {
	// nodes is the scheduler's crcache.NodeIndex: Filter and Score find each node's compiled Offer
	// there by the Node object they are given.
	nodes  *crcache.NodeIndex
	policy config.MissingCRPolicy
	// rejectedNoCR and rejectedMissing count Filter's rejections (accord_scheduler_filter_rejections_total).
	rejectedNoCR, rejectedMissing compmetrics.CounterMetric
	// last is the state PreFilter wrote last, which Filter and Score read without the CycleState.
	last cyclestate.Last[preFilterState, *preFilterState]
}

var (
	_ fwk.PreFilterPlugin   = (*Plugin)(nil)
	_ fwk.FilterPlugin      = (*Plugin)(nil)
	_ fwk.ScorePlugin       = (*Plugin)(nil)
	_ fwk.EnqueueExtensions = (*Plugin)(nil)
	_ fwk.SignPlugin        = (*Plugin)(nil)
)

// NewFactory returns the plugin factory to register under Name. Every plugin built by it reads
// ClusterScopedResources from cache's NodeIndex, which the scheduler's Accord plugins share.
func NewFactory(cache *crcache.Cache) func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	return func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		args, err := argsFrom(obj)
		if err != nil {
			return nil, err
		}
		nodes, err := cache.ClusterScopedResources(ctx, h)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
		return New(args, nodes), nil
	}
}

// New builds the plugin from validated args and a NodeIndex that follows ClusterScopedResources
// (crcache.Cache.ClusterScopedResources, or crcache.NodeIndex.ClusterScopedResourceHandler).
func New(args *config.NodeCRDResourceFitArgs, nodes *crcache.NodeIndex) *Plugin {
	return &Plugin{nodes: nodes, policy: args.MissingCRPolicy,
		rejectedNoCR:    rejections.Counter(Name, rejections.NoClusterScopedResource),
		rejectedMissing: rejections.Counter(Name, rejections.ResourceNotEnabled)}
}

// offer returns the compiled Offer of node's CR (nil: none).
func (p *Plugin) offer(node *corev1.Node) *constraints.Offer {
	if d := p.nodes.Lookup(node); d != nil {
		return d.Offer
	}
	return nil
}

// cr returns the ClusterScopedResource of the node named name (nil: none).
func (p *Plugin) cr(name string) *schedv1alpha1.ClusterScopedResource {
	if d := p.nodes.Get(name); d != nil {
		return d.CR
	}
	return nil
}

func argsFrom(obj runtime.Object) (*config.NodeCRDResourceFitArgs, error) {
	var args *config.NodeCRDResourceFitArgs
	switch a := obj.(type) {
	case nil:
		args = &config.NodeCRDResourceFitArgs{MissingCRPolicy: config.DefaultMissingCRPolicy}
	case *config.NodeCRDResourceFitArgs:
		args = a
	default:
		return nil, fmt.Errorf("%s: want args of type NodeCRDResourceFitArgs, got %T", Name, obj)
	}
	if errs := validation.ValidateNodeCRDResourceFitArgs(field.NewPath(Name+"Args"), args); len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w", Name, errs.ToAggregate())
	}
	return args, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// preFilterState is what PreFilter computes once per pod. It is never modified after PreFilter,
// so Clone can share it.
type preFilterState struct {
	requested []corev1.ResourceName
}

func (s *preFilterState) Clone() fwk.StateData { return s }

// PreFilter computes the set of resources the pod requests, once per scheduling cycle, for Filter
// and Score.
func (p *Plugin) PreFilter(_ context.Context, state fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	p.last.Write(state, stateKey, newState(pod))
	return nil, nil
}

// PreFilterExtensions returns nil: other pods on a node do not change this plugin's verdict.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

func newState(pod *corev1.Pod) *preFilterState {
	// Interned: Filter and Score compare these names with each node's Offer, whose names are too.
	return &preFilterState{requested: constraints.InternAll(constraints.AppendRequestedResources(make([]corev1.ResourceName, 0, 8), pod))}
}

// stateFrom returns what PreFilter computed, or computes it when the profile does not run this
// plugin's PreFilter (enabled at filter and score only).
func (p *Plugin) stateFrom(state fwk.CycleState, pod *corev1.Pod) (*preFilterState, *fwk.Status) {
	return p.last.ReadOrInit(state, stateKey, Name, func() *preFilterState { return newState(pod) })
}

// Filter rejects a node whose ClusterScopedResource does not enable a resource the pod requests,
// naming the resource, and (with missingCRPolicy Reject) a node without a ClusterScopedResource.
// The rejection is UnschedulableAndUnresolvable: evicting pods cannot change a node's CR.
func (p *Plugin) Filter(_ context.Context, state fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, st := p.stateFrom(state, pod)
	if st != nil {
		return st
	}
	node := nodeInfo.Node()
	if node == nil {
		return fwk.NewStatus(fwk.Error, "node not found")
	}
	switch v := p.verdict(node, s.requested); {
	case !v.Rejected:
		return nil
	case v.NoCR:
		p.rejectedNoCR.Inc()
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, ReasonNoCR)
	default:
		p.rejectedMissing.Inc()
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, MissingResourceReason(v.Missing))
	}
}

// verdict is Filter's verdict on node for the requested resources.
func (p *Plugin) verdict(node *corev1.Node, requested []corev1.ResourceName) constraints.CRFit {
	return p.offer(node).Fit(requested, p.policy == config.MissingCRPolicyIgnore)
}

// MissingResourceReason is the Filter reason for a node that does not enable the resource.
func MissingResourceReason(name corev1.ResourceName) string {
	return fmt.Sprintf(reasonMissingResource, name)
}

// Score is the node's score for the pod from pkg/constraints: the mean of the CR's scores for the
// requested resources, 0-100. A node without a CR (let through by missingCRPolicy Ignore) scores 0.
func (p *Plugin) Score(_ context.Context, state fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s, st := p.stateFrom(state, pod)
	if st != nil {
		return 0, st
	}
	node := nodeInfo.Node()
	if node == nil {
		return 0, fwk.NewStatus(fwk.Error, "node not found")
	}
	return p.score(node, s.requested), nil
}

// score is Score's score of node for the requested resources.
func (p *Plugin) score(node *corev1.Node, requested []corev1.ResourceName) int64 {
	return p.offer(node).NodeScore(requested)
}

// ScoreExtensions returns nil: scores are already on the framework's 0-100 scale, and stretching
// them would turn a small difference between CR scores into a large one.
func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }

// SignPod contributes the sorted names of the resources the pod requests: two pods that request
// the same resources get the same verdict and score from this plugin on every node.
func (p *Plugin) SignPod(_ context.Context, pod *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return []fwk.SignFragment{{Key: SignerName, Value: constraints.AppendRequestedResources(nil, pod)}}, nil
}

// EventsToRegister lists the events that can make a pod this plugin rejected schedulable:
//   - a ClusterScopedResource added or updated so that it now enables everything the pod requests;
//   - a Node added whose ClusterScopedResource already enables it (or that needs none, with Ignore);
//   - with missingCRPolicy Ignore, a ClusterScopedResource deleted (its node then needs none).
func (p *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	csrActions := fwk.Add | fwk.Update
	if p.policy == config.MissingCRPolicyIgnore {
		csrActions |= fwk.Delete
	}
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: crcache.ClusterScopedResourceResource, ActionType: csrActions}, QueueingHintFn: p.isSchedulableAfterCRChange},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add}, QueueingHintFn: p.isSchedulableAfterNodeAdd},
	}, nil
}

func (p *Plugin) isSchedulableAfterCRChange(logger klog.Logger, pod *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	oldCR, err := crcache.ToClusterScopedResource(oldObj)
	if err != nil {
		return fwk.Queue, err
	}
	newCR, err := crcache.ToClusterScopedResource(newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if newCR == nil {
		// Deleted: only registered with the Ignore policy, under which a node without a CR fits.
		logger.V(5).Info("ClusterScopedResource deleted; its node no longer needs one", "pod", klog.KObj(pod), "clusterScopedResource", klog.KObj(oldCR))
		return fwk.Queue, nil
	}
	requested := constraints.AppendRequestedResources(nil, pod)
	if !constraints.EnablesAll(newCR, requested) {
		logger.V(5).Info("ClusterScopedResource change does not enable what the pod requests", "pod", klog.KObj(pod), "clusterScopedResource", klog.KObj(newCR))
		return fwk.QueueSkip, nil
	}
	if oldCR != nil && constraints.EnablesAll(oldCR, requested) {
		// The node was already acceptable to this plugin, so its rejection came from elsewhere.
		logger.V(5).Info("ClusterScopedResource already enabled what the pod requests", "pod", klog.KObj(pod), "clusterScopedResource", klog.KObj(newCR))
		return fwk.QueueSkip, nil
	}
	p.awaitLister(newCR)
	logger.V(4).Info("ClusterScopedResource now enables what the pod requests", "pod", klog.KObj(pod), "clusterScopedResource", klog.KObj(newCR))
	return fwk.Queue, nil
}

// awaitLister gives the index Filter reads a moment to catch up with the event the hint is judging.
func (p *Plugin) awaitLister(cr *schedv1alpha1.ClusterScopedResource) {
	crcache.AwaitResourceVersion(cr.ResourceVersion, crcache.CatchUpTimeout, func() (string, bool) {
		cur := p.cr(cr.Name)
		if cur == nil {
			return "", false
		}
		return cur.ResourceVersion, true
	})
}

func (p *Plugin) isSchedulableAfterNodeAdd(logger klog.Logger, pod *corev1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	node, ok := newObj.(*corev1.Node)
	if !ok {
		return fwk.Queue, fmt.Errorf("%s: expected a Node, got %T", Name, newObj)
	}
	csr := p.cr(node.Name)
	if csr == nil {
		if p.policy == config.MissingCRPolicyIgnore {
			return fwk.Queue, nil
		}
		logger.V(5).Info("New node has no ClusterScopedResource", "pod", klog.KObj(pod), "node", klog.KObj(node))
		return fwk.QueueSkip, nil
	}
	if !constraints.EnablesAll(csr, constraints.AppendRequestedResources(nil, pod)) {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}
