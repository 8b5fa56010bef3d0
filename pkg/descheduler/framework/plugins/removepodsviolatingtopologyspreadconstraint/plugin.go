package removepodsviolatingtopologyspreadconstraint

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
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
func New(ctx context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	args, ok := obj.(*RemovePodsViolatingTopologySpreadConstraintArgs)
	if !ok {
		return nil, fmt.Errorf("%s: want args of type RemovePodsViolatingTopologySpreadConstraintArgs, got %T", Name, obj)
	}
	sel, err := pluginutil.NewPodSelector(args.Namespaces, args.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return &Plugin{h: h, args: args, sel: sel, fitter: pluginutil.NewFitter(ctx, h)}, nil
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
	// sorted is set once pods are in eviction order; a domain is sorted only when a pod is taken
	// from it, so the QoS classes of pods in domains that are never drained are not computed.
	sorted bool
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
	var matched []*corev1.Pod
	for _, ns := range namespaces {
		idx := &podIndex{pods: byNS[ns]}
		for _, c := range p.constraints(byNS[ns]) {
			e := eligible[c.eligibility]
			if e == nil {
				e = eligibleFor(c, nodes)
				eligible[c.eligibility] = e
			}
			matched = idx.matching(c.selector, matched[:0])
			n, stop := p.balance(ctx, c, e, matched, nodeOf, chosen, ev)
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
// select. Each distinct constraint's selector is converted once: a constraint whose inputs (see
// rawKey) were already seen is skipped before its selector is built.
func (p *Plugin) constraints(pods []*corev1.Pod) []constraint {
	seen := map[string]bool{}
	tried := map[string]bool{}
	var raw []byte
	var out []constraint
	for _, pod := range pods {
		for i := range pod.Spec.TopologySpreadConstraints {
			c := &pod.Spec.TopologySpreadConstraints[i]
			if !slices.Contains(p.args.Constraints, c.WhenUnsatisfiable) {
				continue
			}
			eligibility := eligibilityOf(c, pod)
			raw = rawKey(raw[:0], c, pod, eligibility)
			if tried[string(raw)] {
				continue
			}
			tried[string(raw)] = true
			sel, err := selectorFor(c, pod)
			if err != nil {
				continue
			}
			key := fmt.Sprintf("%s|%d|%s|%d", eligibility, c.MaxSkew, sel.String(), ptr.Deref(c.MinDomains, 0))
			if seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, constraint{c: *c, selector: sel, owner: pod, eligibility: eligibility})
		}
	}
	return out
}

// eligibilityOf identifies the nodes a constraint of pod counts: its topology key, and the pod's
// node affinity or tolerations when the constraint's policies honour them.
func eligibilityOf(c *corev1.TopologySpreadConstraint, pod *corev1.Pod) string {
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
	return eligibility
}

// rawKey appends to dst an unambiguous (length-prefixed) encoding of everything constraints' key
// is derived from: the eligibility, maxSkew, minDomains, the label selector as written and the
// owner's values of the matchLabelKeys. Equal raw keys therefore mean equal keys, without building
// the selector.
func rawKey(dst []byte, c *corev1.TopologySpreadConstraint, owner *corev1.Pod, eligibility string) []byte {
	str := func(s string) {
		dst = strconv.AppendInt(dst, int64(len(s)), 10)
		dst = append(dst, ':')
		dst = append(dst, s...)
	}
	num := func(n int64) {
		dst = strconv.AppendInt(dst, n, 10)
		dst = append(dst, ';')
	}
	str(eligibility)
	num(int64(c.MaxSkew))
	num(int64(ptr.Deref(c.MinDomains, 0)))
	if ls := c.LabelSelector; ls == nil {
		dst = append(dst, 'n')
	} else {
		dst = append(dst, 's')
		num(int64(len(ls.MatchLabels)))
		var buf [4]string
		keys := buf[:0]
		for k := range ls.MatchLabels {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			str(k)
			str(ls.MatchLabels[k])
		}
		num(int64(len(ls.MatchExpressions)))
		for _, e := range ls.MatchExpressions {
			str(e.Key)
			str(string(e.Operator))
			num(int64(len(e.Values)))
			for _, v := range e.Values {
				str(v)
			}
		}
	}
	num(int64(len(c.MatchLabelKeys)))
	for _, k := range c.MatchLabelKeys {
		str(k)
		if v, ok := owner.Labels[k]; ok {
			dst = append(dst, 'y')
			str(v)
		} else {
			dst = append(dst, 'n')
		}
	}
	return dst
}

// podIndex finds a namespace's pods by label value, so that a constraint's selector is matched
// only against the pods carrying a value one of its equality requirements names, not every pod of
// the namespace. The index of a label key is built the first time a selector needs it.
type podIndex struct {
	pods  []*corev1.Pod
	byKey map[string]map[string][]int32 // label key -> value -> positions in pods, ascending
}

// matching appends to dst the pods sel matches, in the order of the namespace's pods.
func (x *podIndex) matching(sel labels.Selector, dst []*corev1.Pod) []*corev1.Pod {
	if reqs, selectable := sel.Requirements(); selectable {
		for i := range reqs {
			r := &reqs[i]
			switch r.Operator() {
			case selection.Equals, selection.DoubleEquals, selection.In:
			default:
				continue
			}
			// A pod the selector matches has label r.Key() with one of r's values.
			byValue := x.index(r.Key())
			var pos []int32
			if values := r.ValuesUnsorted(); len(values) == 1 {
				pos = byValue[values[0]]
			} else {
				for _, v := range slices.Compact(slices.Sorted(slices.Values(values))) {
					pos = append(pos, byValue[v]...)
				}
				slices.Sort(pos)
			}
			for _, i := range pos {
				if pod := x.pods[i]; sel.Matches(labels.Set(pod.Labels)) {
					dst = append(dst, pod)
				}
			}
			return dst
		}
	}
	for _, pod := range x.pods {
		if sel.Matches(labels.Set(pod.Labels)) {
			dst = append(dst, pod)
		}
	}
	return dst
}

func (x *podIndex) index(key string) map[string][]int32 {
	if m, ok := x.byKey[key]; ok {
		return m
	}
	if x.byKey == nil {
		x.byKey = map[string]map[string][]int32{}
	}
	// One map lookup per pod: values are numbered, positions collected per number.
	slot := map[string]int{}
	var lists [][]int32
	for i, pod := range x.pods {
		v, ok := pod.Labels[key]
		if !ok {
			continue
		}
		j, seen := slot[v]
		if !seen {
			j = len(lists)
			slot[v] = j
			lists = append(lists, nil)
		}
		lists[j] = append(lists[j], int32(i))
	}
	m := make(map[string][]int32, len(slot))
	for v, j := range slot {
		m[v] = lists[j]
	}
	x.byKey[key] = m
	return m
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
// large; pods are the namespace's pods that the constraint's selector matches. It returns how many
// it evicted and whether the cycle's total limit was reached.
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
		if !ok {
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
		if !largest.sorted {
			pluginutil.SortByPriorityLowToHigh(largest.pods)
			largest.sorted = true
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
		switch framework.Evict(ctx, ev, pick, Name, reason) {
		case framework.Evicted:
			klog.FromContext(ctx).V(4).Info("Pod evicted to rebalance topology spread", "pod", klog.KObj(pick), "from", largest.value, "to", smallest.value)
			largest.size--
			smallest.size++
			moved++
		case framework.StopEvicting:
			return moved, true
		case framework.NamespaceFull:
			return moved, false
		}
	}
}
