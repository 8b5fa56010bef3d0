package nodecrdresourcefit

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/apis/config"
	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/constraints"
	"github.com/accord-sched/accord/pkg/crdcheck"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/controller"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
	accordlisters "github.com/accord-sched/accord/pkg/generated/listers/scheduling/v1alpha1"
)

// Name is the plugin's name, the same as the scheduler plugin's.
const Name = constraints.NodeCRDResourceFitName

// evictionsInFlight is how many evictions of one node's violators are under way at once (see
// pluginutil.EvictOverlapped).
const evictionsInFlight = 8

// Plugin is the NodeCRDResourceFit descheduler plugin.
//
// +k8s:deepcopy-gen=false
type Plugin struct {
	h      framework.Handle
	args   *NodeCRDResourceFitArgs
	sel    *pluginutil.PodSelector
	csrs   accordlisters.ClusterScopedResourceLister
	nodes  corelisters.NodeLister
	csrInf cache.SharedIndexInformer
}

var (
	_ framework.DeschedulePlugin = &Plugin{}
	_ framework.Controller       = &Plugin{}
)

// New builds the plugin from its (defaulted, validated) args.
func New(ctx context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	args, ok := obj.(*NodeCRDResourceFitArgs)
	if !ok {
		return nil, fmt.Errorf("%s: want args of type NodeCRDResourceFitArgs, got %T", Name, obj)
	}
	sel, err := pluginutil.NewPodSelector(args.Namespaces, args.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	if err := framework.RequireCRD(h, crdcheck.ClusterScopedResources(), Name); err != nil {
		return nil, err
	}
	inf := h.AccordInformerFactory().Scheduling().V1alpha1().ClusterScopedResources()
	return &Plugin{
		h: h, args: args, sel: sel,
		csrs:   inf.Lister(),
		csrInf: inf.Informer(),
		nodes:  h.SharedInformerFactory().Core().V1().Nodes().Lister(),
	}, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// Violation is the descheduler's verdict for a pod on a node whose ClusterScopedResource is csr (nil
// when the node has none): whether the scheduler plugin's Filter would reject the pair, and why. It
// is the Filter's rule, constraints.FitCR (missingCRPolicy included), in the words of
// constraints.CRFit.Reason. buf is scratch space for the requested resource names (may be nil).
func Violation(csr *schedv1alpha1.ClusterScopedResource, policy config.MissingCRPolicy, pod *corev1.Pod, buf []corev1.ResourceName) (string, bool) {
	v := constraints.FitCR(csr, constraints.AppendRequestedResources(buf[:0], pod), policy == config.MissingCRPolicyIgnore)
	return v.Reason(), v.Rejected
}

func (p *Plugin) schedulerOK(pod *corev1.Pod) bool {
	if len(p.args.SchedulerNames) == 0 {
		return true
	}
	name := pod.Spec.SchedulerName
	if name == "" {
		name = corev1.DefaultSchedulerName
	}
	return slices.Contains(p.args.SchedulerNames, name)
}

func (p *Plugin) csrOf(node string) (*schedv1alpha1.ClusterScopedResource, error) {
	csr, err := p.csrs.Get(node)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return csr, err
}

// Deschedule evicts, node by node, the pods that violate their node's ClusterScopedResource,
// lowest priority first.
func (p *Plugin) Deschedule(ctx context.Context, nodes []*corev1.Node) *framework.Status {
	for _, node := range nodes {
		res, err := p.checkNode(ctx, node)
		if err != nil {
			return framework.NewStatus(err)
		}
		if res == framework.StopEvicting {
			break
		}
	}
	return nil
}

// checkNode evicts the violators on node. It returns StopEvicting when the cycle's limit is reached,
// NotEvicted when violators remain on the node (a limit, a PDB or an evictor filter kept them), Evicted otherwise.
func (p *Plugin) checkNode(ctx context.Context, node *corev1.Node) (framework.EvictOutcome, error) {
	logger := klog.FromContext(ctx)
	csr, err := p.csrOf(node.Name)
	if err != nil {
		return framework.NotEvicted, fmt.Errorf("reading ClusterScopedResource %q: %w", node.Name, err)
	}
	if csr == nil && p.args.MissingCRPolicy == config.MissingCRPolicyIgnore {
		return framework.Evicted, nil
	}
	buf := make([]corev1.ResourceName, 0, 8)
	reasons := map[*corev1.Pod]string{}
	pods, err := p.h.GetPodsAssignedToNode(node.Name, p.sel.Candidates(p.h.Evictor(), false, func(pod *corev1.Pod) bool {
		if !p.schedulerOK(pod) {
			return false
		}
		reason, bad := Violation(csr, p.args.MissingCRPolicy, pod, buf)
		if bad {
			reasons[pod] = reason
		}
		return bad
	}))
	if err != nil {
		return framework.NotEvicted, err
	}
	if len(pods) == 0 {
		return framework.Evicted, nil
	}
	pluginutil.SortByPriorityLowToHigh(pods)
	for _, pod := range pods {
		logger.V(4).Info("Pod violates its node's ClusterScopedResource", "pod", klog.KObj(pod), "node", node.Name, "reason", reasons[pod])
	}
	// Decided one by one, lowest priority first; evicted with several Eviction API calls in
	// flight, so a node's many violators do not wait for each other's round trips.
	return pluginutil.EvictOverlapped(ctx, p.h.Evictor(), pods, Name, func(pod *corev1.Pod) string { return reasons[pod] }, evictionsInFlight), nil
}

// Run is the event-triggered mode: every change of a ClusterScopedResource's resourcesFilter (and,
// with missingCRPolicy Reject, its deletion) queues its node on a controller.Queue, and its worker
// re-checks the pods of the queued nodes only, and only on the nodes the profile's nodeSelector
// (Handle.NodeSelector) matches, as in a periodic cycle. A node whose violators could not all be
// evicted (a limit, a PDB, nowhere to go) is retried with the queue's back-off, and at once when
// one of the profile's eviction windows opens or a ClusterScopedResource starts offering a
// resource (retryHeld). Run returns when ctx is done and the
// worker has finished.
func (p *Plugin) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	queue := controller.NewQueue(Name, p.reconcile)
	reg, err := p.csrInf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			// A CR that appears can only take violations away, except that a node without one was
			// already checked; with isInInitialList the periodic cycle covers the existing state.
			if csr, ok := obj.(*schedv1alpha1.ClusterScopedResource); ok && !isInInitialList {
				queue.Add(csr.Name)
				retryHeld(queue, csr.Name, nil, csr)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*schedv1alpha1.ClusterScopedResource)
			n, ok2 := newObj.(*schedv1alpha1.ClusterScopedResource)
			if ok1 && ok2 && !maps.Equal(o.Spec.ResourcesFilter, n.Spec.ResourcesFilter) {
				queue.Add(n.Name)
				retryHeld(queue, n.Name, o, n)
			}
		},
		DeleteFunc: func(obj any) {
			if p.args.MissingCRPolicy == config.MissingCRPolicyIgnore {
				return
			}
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if csr, ok := obj.(*schedv1alpha1.ClusterScopedResource); ok {
				queue.Add(csr.Name)
			}
		},
	})
	if err != nil {
		logger.Error(err, "Adding the ClusterScopedResource event handler")
		return
	}
	defer func() {
		if err := p.csrInf.RemoveEventHandler(reg); err != nil {
			logger.Error(err, "Removing the ClusterScopedResource event handler")
		}
	}()
	// A node held by a closed eviction window is retried as soon as the window opens.
	defer queue.RetryWhenWindowsOpen(p.h.Evictor())()
	queue.Run(ctx, 1)
}

// retryHeld retries at once the nodes held for their back-off (violators that a limit, a PDB or
// the scheduler's simulation kept: no node to go to) when node's CR starts offering a resource it
// did not (old nil: a new CR): their violators may fit there now, and would otherwise wait up to
// the back-off's cap (1000 s).
func retryHeld(queue *controller.Queue, node string, old, cur *schedv1alpha1.ClusterScopedResource) {
	for name := range cur.Spec.ResourcesFilter {
		if constraints.Enabled(cur, name) && !constraints.Enabled(old, name) {
			klog.V(3).InfoS("ClusterScopedResource offers a resource it did not; retrying the held nodes now", "node", node, "resource", name)
			queue.RetryNow()
			return
		}
	}
}

// reconcile re-checks the node named name (a ClusterScopedResource is named after its node); an
// error puts the node back on the queue with back-off: the node could not be read, or violators
// remain on it.
func (p *Plugin) reconcile(ctx context.Context, name string) error {
	logger := klog.FromContext(ctx)
	node, err := p.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		logger.Error(err, "Reading node", "node", name)
		return err
	}
	// Periodic cycles only see the profile's nodes; the event mode must not reach further.
	if !p.h.NodeSelector().Matches(labels.Set(node.Labels)) {
		logger.V(4).Info("ClusterScopedResource changed on a node outside the profile's nodeSelector; ignored", "node", name)
		return nil
	}
	logger.V(3).Info("ClusterScopedResource changed; re-checking the node's pods", "node", name)
	res, err := p.checkNode(ctx, node)
	switch {
	case err != nil:
		logger.Error(err, "Checking node", "node", name)
		return err
	case res == framework.StopEvicting || res == framework.NotEvicted:
		return fmt.Errorf("violators remain on node %s", name)
	}
	return nil
}
