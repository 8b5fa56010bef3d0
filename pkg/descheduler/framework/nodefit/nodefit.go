// Package nodefit answers nodeFit's question for every descheduler plugin and evictor that asks it:
// would this pod fit that node (Ready and schedulable, taints tolerated, required node affinity,
// free resources, and the node's ClusterScopedResource as constraints.FitCR judges it)? It lives
// outside any plugin so that DefaultEvictor, the plugins' shared helpers and out-of-tree plugins use
// one implementation.
package nodefit

import (
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"

	"github.com/accord-sched/accord/apis/config"
	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/constraints"
	"github.com/accord-sched/accord/pkg/crdcheck"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	accordlisters "github.com/accord-sched/accord/pkg/generated/listers/scheduling/v1alpha1"
)

// Fitter answers nodeFit's question, "would this pod fit that node", as fits does, but
// builds each node's requested totals (the scheduler's NodeInfo) at most once per pod set: it keeps
// them per node, with the node object and the exact pods (by identity) they were built from. Every
// check re-reads the node's pods from the informer cache (an index lookup) and uses the kept totals
// only when the node object and the set of pods are unchanged, so a pod added, updated, deleted or
// evicted (once the informer has seen it), or a node update, is taken into account at once, between
// cycles (event-driven controllers) as within one. The verdicts are those of fits. Reset drops
// what is kept (the DefaultEvictor does at the end of each cycle, to hold no memory between cycles).
// It is safe for concurrent use.
type Fitter struct {
	h      framework.Handle
	csrs   accordlisters.ClusterScopedResourceLister
	policy config.MissingCRPolicy

	mu    sync.Mutex
	nodes map[string]*nodeUsage
}

// nodeUsage is what a node's pods request, as built from node and pods; never modified once built.
type nodeUsage struct {
	node *corev1.Node
	pods []*corev1.Pod
	// set holds pods when there are many, for the identity check.
	set map[*corev1.Pod]struct{}
	// info is a NodeInfo carrying what noderesources.Fits reads: the node's allocatable, the pods'
	// requested totals and their count.
	info *schedframework.NodeInfo
}

// New returns a Fitter reading pods through h and ClusterScopedResources from csrs
// (nil: every node is without one), treating a node without a ClusterScopedResource as policy says
// (the scheduler's NodeCRDResourceFit missingCRPolicy; empty means Reject).
func New(h framework.Handle, csrs accordlisters.ClusterScopedResourceLister, policy config.MissingCRPolicy) *Fitter {
	if policy == "" {
		policy = config.MissingCRPolicyReject
	}
	return &Fitter{h: h, csrs: csrs, policy: policy, nodes: map[string]*nodeUsage{}}
}

// ForHandle returns the Fitter a plugin of h uses: reading ClusterScopedResources from
// h's Accord informer factory when the cluster serves their CRD, treating a node without one as
// policy says. When the cluster does not serve the CRD, no ClusterScopedResource can exist and no
// scheduler places pods by one, so the ClusterScopedResource rule is vacuous: the fitter checks
// readiness, taints, node affinity and resources only (as upstream's nodeFit does) and requests no
// informer (one for a resource that is not served would never sync). Call it from a plugin factory.
func ForHandle(ctx context.Context, h framework.Handle, policy config.MissingCRPolicy) *Fitter {
	if !h.ServesCRD(crdcheck.ClusterScopedResources()) {
		klog.FromContext(ctx).Info("The cluster does not serve the ClusterScopedResource CRD; nodeFit checks readiness, taints, node affinity and resources only",
			"profile", h.ProfileName(), "crd", crdcheck.ClusterScopedResources().Name())
		return New(h, nil, config.MissingCRPolicyIgnore)
	}
	return New(h, h.AccordInformerFactory().Scheduling().V1alpha1().ClusterScopedResources().Lister(), policy)
}

// Reset drops the kept totals of every node.
func (f *Fitter) Reset() {
	f.mu.Lock()
	clear(f.nodes)
	f.mu.Unlock()
}

// Fits reports whether pod would fit node, and if not, why; see fits. requested are the
// resources the pod requests (constraints.AppendRequestedResources).
func (f *Fitter) Fits(pod *corev1.Pod, node *corev1.Node, requested []corev1.ResourceName) (bool, string) {
	return nodeFits(pod, node, requested, f.csrs, f.policy, nodeaffinity.GetRequiredNodeAffinity(pod), f.usage)
}

// FitsAnyOther reports whether pod fits one of nodes other than the one it runs on, and which.
// keep, when not nil, must also accept the node.
func (f *Fitter) FitsAnyOther(pod *corev1.Pod, nodes []*corev1.Node, keep func(*corev1.Node) bool) (*corev1.Node, bool) {
	requested := constraints.AppendRequestedResources(make([]corev1.ResourceName, 0, 8), pod)
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	for _, n := range nodes {
		if n.Name == pod.Spec.NodeName || (keep != nil && !keep(n)) {
			continue
		}
		if ok, _ := nodeFits(pod, n, requested, f.csrs, f.policy, affinity, f.usage); ok {
			return n, true
		}
	}
	return nil, false
}

// usage returns the NodeInfo of node's non-terminal pods, reusing the kept one when node and its
// pods are the very objects it was built from.
func (f *Fitter) usage(node *corev1.Node) (*schedframework.NodeInfo, error) {
	pods, err := f.h.GetPodsAssignedToNode(node.Name, nonTerminal)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	u := f.nodes[node.Name]
	f.mu.Unlock()
	if u != nil && u.node == node && u.samePods(pods) {
		return u.info, nil
	}
	u = newNodeUsage(node, pods)
	f.mu.Lock()
	f.nodes[node.Name] = u
	f.mu.Unlock()
	return u.info, nil
}

// setThreshold is the pod count above which nodeUsage keeps a set for the identity check.
const setThreshold = 32

func newNodeUsage(node *corev1.Node, pods []*corev1.Pod) *nodeUsage {
	full := schedframework.NewNodeInfo(pods...)
	// Keep only what noderesources.Fits reads (allocatable, requested totals, the number of pods),
	// not the parsed PodInfos: the pods' slots stay empty.
	info := &schedframework.NodeInfo{Requested: full.Requested, NonZeroRequested: full.NonZeroRequested,
		Pods: make([]fwk.PodInfo, len(full.Pods))}
	info.SetNode(node)
	u := &nodeUsage{node: node, pods: pods, info: info}
	if len(pods) > setThreshold {
		u.set = make(map[*corev1.Pod]struct{}, len(pods))
		for _, p := range pods {
			u.set[p] = struct{}{}
		}
	}
	return u
}

// samePods reports whether pods are the pods u was built from, in any order (the informer index
// returns them in no particular order; a pod appears at most once).
func (u *nodeUsage) samePods(pods []*corev1.Pod) bool {
	if len(pods) != len(u.pods) {
		return false
	}
	if u.set != nil {
		for _, p := range pods {
			if _, ok := u.set[p]; !ok {
				return false
			}
		}
		return true
	}
	for _, p := range pods {
		if !slices.Contains(u.pods, p) {
			return false
		}
	}
	return true
}

func nonTerminal(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// fits reports whether pod would fit node, and if not, why: the node must be Ready and
// schedulable, its taints tolerated, the pod's required node affinity and nodeSelector matched, its
// free resources (allocatable minus the requests of the non-terminal pods bound to it, from h)
// enough, and its ClusterScopedResource (from csrs) must enable every resource in requested; a node
// without one fits no pod that requests a resource (missingCRPolicy Reject, constraints.FitCR). It builds the node's requested totals on
// every call; use a Fitter (which also takes the policy) to check many pods or nodes.
func fits(pod *corev1.Pod, node *corev1.Node, requested []corev1.ResourceName, h framework.Handle, csrs accordlisters.ClusterScopedResourceLister) (bool, string) {
	return nodeFits(pod, node, requested, csrs, config.MissingCRPolicyReject, nodeaffinity.GetRequiredNodeAffinity(pod), func(node *corev1.Node) (*schedframework.NodeInfo, error) {
		pods, err := h.GetPodsAssignedToNode(node.Name, nonTerminal)
		if err != nil {
			return nil, err
		}
		ni := schedframework.NewNodeInfo(pods...)
		ni.SetNode(node)
		return ni, nil
	})
}

func nodeFits(pod *corev1.Pod, node *corev1.Node, requested []corev1.ResourceName, csrs accordlisters.ClusterScopedResourceLister,
	policy config.MissingCRPolicy, affinity nodeaffinity.RequiredNodeAffinity, usage func(*corev1.Node) (*schedframework.NodeInfo, error)) (bool, string) {
	if !constraints.NodeReady(node) {
		return false, "node is not Ready"
	}
	taints := node.Spec.Taints
	if node.Spec.Unschedulable {
		taints = append(slices.Clip(taints), corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
	}
	if taint, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, true); untolerated {
		return false, fmt.Sprintf("untolerated taint %s", taint.ToString())
	}
	if match, err := affinity.Match(node); err != nil || !match {
		return false, "node affinity or nodeSelector does not match"
	}
	if reason, bad := crViolation(csrs, policy, node.Name, requested); bad {
		return false, reason
	}
	ni, err := usage(node)
	if err != nil {
		return false, err.Error()
	}
	if insufficient := noderesources.Fits(pod, ni, nil, noderesources.ResourceRequestsOptions{}); len(insufficient) > 0 {
		return false, fmt.Sprintf("insufficient %s", insufficient[0].ResourceName)
	}
	return true, ""
}

// crViolation is nodeFit's ClusterScopedResource verdict, constraints.FitCRAnyScheduler (the
// scheduler's rule with the node's CR and missingCRPolicy, except that a pod requesting nothing fits
// a node without a CR), in its one wording (constraints.CRFit.Reason).
func crViolation(csrs accordlisters.ClusterScopedResourceLister, policy config.MissingCRPolicy, node string, requested []corev1.ResourceName) (string, bool) {
	var csr *schedv1alpha1.ClusterScopedResource
	if csrs != nil {
		got, err := csrs.Get(node)
		switch {
		case err == nil:
			csr = got
		case !apierrors.IsNotFound(err):
			return fmt.Sprintf("reading the node's ClusterScopedResource: %v", err), true
		}
	}
	v := constraints.FitCRAnyScheduler(csr, requested, policy == config.MissingCRPolicyIgnore)
	return v.Reason(), v.Rejected
}
