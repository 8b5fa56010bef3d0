package removepodsviolatingtopologyspreadconstraint

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// Name is the plugin's name.
const Name = "RemovePodsViolatingTopologySpreadConstraint"

// Plugin is the RemovePodsViolatingTopologySpreadConstraint plugin.
//
// +k8s:deepcopy-gen=false
type Plugin struct {
	h      framework.Handle
	args   *RemovePodsViolatingTopologySpreadConstraintArgs
	sel    *pluginutil.PodSelector
	fitter *pluginutil.Fitter
}

var _ framework.BalancePlugin = &Plugin{}

// New builds the plugin from its (defaulted, validated) args.
func New(obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	args, ok := obj.(*RemovePodsViolatingTopologySpreadConstraintArgs)
	if !ok {
		return nil, fmt.Errorf("%s: want args of type RemovePodsViolatingTopologySpreadConstraintArgs, got %T", Name, obj)
	}
	sel, err := pluginutil.NewPodSelector(args.Namespaces, args.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return &Plugin{h: h, args: args, sel: sel, fitter: pluginutil.NewFitter(h)}, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// constraint is one distinct spread constraint of a namespace, with a pod that declares it.
type constraint struct {
	c        corev1.TopologySpreadConstraint
	selector labels.Selector
	owner    *corev1.Pod
	// eligibility identifies the set of eligible nodes: the topology key, and the owner's node
	// affinity or tolerations when the policies honour them.
	eligibility string
}

// eligibleNodes are the nodes a constraint counts, by domain value.
type eligibleNodes struct {
	byValue map[string][]*corev1.Node
	node    map[string]string // node name -> domain value
}

type domain struct {
	value string
	nodes []*corev1.Node
	pods  []*corev1.Pod
	size  int
	done  bool
}

// selectorFor is the constraint's selector with its matchLabelKeys bound to the owner's labels, as
// the scheduler reads it.
func selectorFor(c *corev1.TopologySpreadConstraint, owner *corev1.Pod) (labels.Selector, error) {
	sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
	if err != nil {
		return nil, err
	}
	for _, key := range c.MatchLabelKeys {
		if v, ok := owner.Labels[key]; ok {
			r, err := labels.NewRequirement(key, selection.Equals, []string{v})
			if err != nil {
				return nil, err
			}
			sel = sel.Add(*r)
		}
	}
	return sel, nil
}

// Balance evicts, per namespace and constraint, pods from the most crowded domains until every
// domain is within maxSkew of the least crowded one (counting domains of eligible nodes without pods).
func (p *Plugin) Balance(ctx context.Context, nodes []*corev1.Node) *framework.Status {
	logger := klog.FromContext(ctx)
	ev := p.h.Evictor()
	byNS := map[string][]*corev1.Pod{}
	nodeOf := make(map[string]*corev1.Node, len(nodes))
	for _, n := range nodes {
		nodeOf[n.Name] = n
		pods, err := p.h.GetPodsAssignedToNode(n.Name, func(pod *corev1.Pod) bool {
			return !pluginutil.IsFinished(pod) && p.sel.NamespaceOK(pod.Namespace)
		})
		if err != nil {
			return framework.NewStatus(err)
		}
		for _, pod := range pods {
			byNS[pod.Namespace] = append(byNS[pod.Namespace], pod)
		}
	}
	chosen := map[*corev1.Pod]bool{}
	namespaces := make([]string, 0, len(byNS))
	for ns := range byNS {
		namespaces = append(namespaces, ns)
	}
	slices.Sort(namespaces)
	moved := 0
	eligible := map[string]*eligibleNodes{}
	for _, ns := range namespaces {
		for _, c := range p.constraints(byNS[ns]) {
			e := eligible[c.eligibility]
			if e == nil {
				e = eligibleFor(c, nodes)
				eligible[c.eligibility] = e
			}
			n, stop := p.balance(ctx, c, e, byNS[ns], nodeOf, chosen, ev)
			moved += n
			if stop {
				logger.V(3).Info("Eviction limit reached", "evicted", moved)
				return nil
			}
		}
	}
	if moved > 0 {
		logger.V(3).Info("Pods evicted to balance topology spread", "evicted", moved)
	}
	return nil
}

// constraints returns the distinct constraints the namespace's pods declare, of the kinds the args
// select.
func (p *Plugin) constraints(pods []*corev1.Pod) []constraint {
	seen := map[string]bool{}
	var out []constraint
	for _, pod := range pods {
		for i := range pod.Spec.TopologySpreadConstraints {
			c := pod.Spec.TopologySpreadConstraints[i]
			if !slices.Contains(p.args.Constraints, c.WhenUnsatisfiable) {
				continue
			}
			sel, err := selectorFor(&c, pod)
			if err != nil {
				continue
			}
			eligibility := c.TopologyKey
			if c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor {
				// Eligible nodes depend on the owner's affinity.
				if len(pod.Spec.NodeSelector) > 0 {
					eligibility += "|selector:" + fmt.Sprint(pod.Spec.NodeSelector)
				}
				if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
					eligibility += "|affinity:" + a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.String()
				}
			}
			if c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor {
				eligibility += "|tolerations:" + fmt.Sprint(pod.Spec.Tolerations)
			}
			key := fmt.Sprintf("%s|%d|%s|%d", eligibility, c.MaxSkew, sel.String(), ptr.Deref(c.MinDomains, 0))
			if seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, constraint{c: c, selector: sel, owner: pod, eligibility: eligibility})
		}
	}
	return out
}

// eligibleFor returns the nodes the constraint counts, by domain: nodes with the topology key and,
// as the policies say, matching the owner's required node affinity and tolerated by it.
func eligibleFor(c constraint, nodes []*corev1.Node) *eligibleNodes {
	honorAffinity := c.c.NodeAffinityPolicy == nil || *c.c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
	honorTaints := c.c.NodeTaintsPolicy != nil && *c.c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
	affinity := nodeaffinity.GetRequiredNodeAffinity(c.owner)
	e := &eligibleNodes{byValue: map[string][]*corev1.Node{}, node: map[string]string{}}
	for _, n := range nodes {
		v, ok := n.Labels[c.c.TopologyKey]
		if !ok {
			continue
		}
		if honorAffinity {
			if m, err := affinity.Match(n); err != nil || !m {
				continue
			}
		}
		if honorTaints && !pluginutil.TaintsTolerated(n, c.owner) {
			continue
		}
		e.byValue[v] = append(e.byValue[v], n)
		e.node[n.Name] = v
	}
	return e
}

// balance evicts pods of the constraint's most crowded domains, one at a time, while the skew is too
// large. It returns how many it evicted and whether the cycle's total limit was reached.
func (p *Plugin) balance(ctx context.Context, c constraint, e *eligibleNodes, pods []*corev1.Pod, nodeOf map[string]*corev1.Node,
	chosen map[*corev1.Pod]bool, ev framework.Evictor) (int, bool) {
	if len(e.byValue) < 2 {
		return 0, false
	}
	domains := make(map[string]*domain, len(e.byValue))
	for v, nodes := range e.byValue {
		domains[v] = &domain{value: v, nodes: nodes}
	}
	for _, pod := range pods {
		v, ok := e.node[pod.Spec.NodeName]
		if !ok || !c.selector.Matches(labels.Set(pod.Labels)) {
			continue
		}
		d := domains[v]
		d.size++
		if !chosen[pod] && p.sel.Matches(pod) && ev.Filter(pod) {
			d.pods = append(d.pods, pod)
		}
	}
	list := make([]*domain, 0, len(domains))
	for _, d := range domains {
		pluginutil.SortByPriorityLowToHigh(d.pods)
		list = append(list, d)
	}
	globalMin := func() int {
		if c.c.MinDomains != nil && len(list) < int(*c.c.MinDomains) {
			return 0
		}
		m := list[0].size
		for _, d := range list {
			m = min(m, d.size)
		}
		return m
	}
	moved := 0
	for {
		slices.SortFunc(list, func(a, b *domain) int {
			if c := cmp.Compare(a.size, b.size); c != 0 {
				return c
			}
			return strings.Compare(a.value, b.value)
		})
		var largest *domain
		for i := len(list) - 1; i >= 0; i-- {
			if !list[i].done {
				largest = list[i]
				break
			}
		}
		smallest := list[0]
		if largest == nil || largest.size-globalMin() <= int(c.c.MaxSkew) || largest == smallest {
			return moved, false
		}
		var pick *corev1.Pod
		for len(largest.pods) > 0 && pick == nil {
			cand := largest.pods[0]
			largest.pods = largest.pods[1:]
			if !*p.args.TopologyBalanceNodeFit {
				pick = cand
				break
			}
			if _, fits := p.fitter.FitsAnyOther(cand, smallest.nodes, nil); fits {
				pick = cand
			}
		}
		if pick == nil {
			largest.done = true
			continue
		}
		chosen[pick] = true
		reason := fmt.Sprintf("topology spread on %s: domain %s has %d pods, %d more than the least crowded (maxSkew %d)",
			c.c.TopologyKey, largest.value, largest.size, largest.size-globalMin(), c.c.MaxSkew)
		switch pluginutil.Evict(ctx, ev, pick, Name, reason) {
		case pluginutil.Evicted:
			klog.FromContext(ctx).V(4).Info("Pod evicted to rebalance topology spread", "pod", klog.KObj(pick), "from", largest.value, "to", smallest.value)
			largest.size--
			smallest.size++
			moved++
		case pluginutil.Stop:
			return moved, true
		case pluginutil.NamespaceFull:
			return moved, false
		}
	}
}
