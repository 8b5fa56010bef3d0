package removepodsviolatinginterpodantiaffinity

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// Name is the plugin's name.
const Name = "RemovePodsViolatingInterPodAntiAffinity"

// Plugin is the RemovePodsViolatingInterPodAntiAffinity plugin.
//
// +k8s:deepcopy-gen=false
type Plugin struct {
	h          framework.Handle
	sel        *pluginutil.PodSelector
	namespaces corelisters.NamespaceLister
}

var _ framework.DeschedulePlugin = &Plugin{}

// New builds the plugin from its (defaulted, validated) args.
func New(ctx context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	args, ok := obj.(*RemovePodsViolatingInterPodAntiAffinityArgs)
	if !ok {
		return nil, fmt.Errorf("%s: want args of type RemovePodsViolatingInterPodAntiAffinityArgs, got %T", Name, obj)
	}
	sel, err := pluginutil.NewPodSelector(args.Namespaces, args.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return &Plugin{h: h, sel: sel, namespaces: h.SharedInformerFactory().Core().V1().Namespaces().Lister()}, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// cycle is one Deschedule call's view: the nodes by name and domain, and the pods by node.
type cycle struct {
	nodes   map[string]*corev1.Node
	domains map[string]map[string][]string // topology key -> value -> node names
	all     []*corev1.Node
	pods    map[string][]*corev1.Pod
	evicted map[*corev1.Pod]bool
	nsLabel map[string]labels.Set
}

func (c *cycle) nodesIn(key, value string) []string {
	byValue, ok := c.domains[key]
	if !ok {
		byValue = map[string][]string{}
		for _, n := range c.all {
			if v, ok := n.Labels[key]; ok {
				byValue[v] = append(byValue[v], n.Name)
			}
		}
		c.domains[key] = byValue
	}
	return byValue[value]
}

func (p *Plugin) nsLabels(c *cycle, ns string) labels.Set {
	if l, ok := c.nsLabel[ns]; ok {
		return l
	}
	var l labels.Set
	if n, err := p.namespaces.Get(ns); err == nil {
		l = labels.Set(n.Labels)
	}
	c.nsLabel[ns] = l
	return l
}

// violation returns the pod of the topology domain that breaks one of pod's required anti-affinity
// terms, if any. Pods already evicted this cycle do not count.
func (p *Plugin) violation(c *cycle, pod *corev1.Pod, node *corev1.Node, terms []fwk.AffinityTerm) *corev1.Pod {
	for i := range terms {
		t := &terms[i]
		value, ok := node.Labels[t.TopologyKey]
		if !ok {
			continue
		}
		for _, name := range c.nodesIn(t.TopologyKey, value) {
			for _, other := range c.pods[name] {
				if other == pod || c.evicted[other] {
					continue
				}
				if t.Matches(other, p.nsLabels(c, other.Namespace)) {
					return other
				}
			}
		}
	}
	return nil
}

// Deschedule evicts, node by node and lowest priority first, the pods whose required anti-affinity
// another (not yet evicted) pod of the same topology domain breaks; once a pod is evicted, the pods
// it conflicted with are no longer in violation because of it.
func (p *Plugin) Deschedule(ctx context.Context, nodes []*corev1.Node) *framework.Status {
	logger := klog.FromContext(ctx)
	ev := p.h.Evictor()
	c := &cycle{nodes: map[string]*corev1.Node{}, domains: map[string]map[string][]string{}, all: nodes,
		pods: make(map[string][]*corev1.Pod, len(nodes)), evicted: map[*corev1.Pod]bool{}, nsLabel: map[string]labels.Set{}}
	anyTerms := false
	for _, n := range nodes {
		c.nodes[n.Name] = n
		pods, err := p.h.GetPodsAssignedToNode(n.Name, func(pod *corev1.Pod) bool { return !pluginutil.IsFinished(pod) })
		if err != nil {
			return framework.NewStatus(err)
		}
		c.pods[n.Name] = pods
		for _, pod := range pods {
			if a := pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
				anyTerms = true
			}
		}
	}
	if !anyTerms {
		return nil
	}
	for _, node := range nodes {
		var cands []*corev1.Pod
		for _, pod := range c.pods[node.Name] {
			if a := pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 && p.sel.Matches(pod) {
				cands = append(cands, pod)
			}
		}
		pluginutil.SortByPriorityLowToHigh(cands)
		for _, pod := range cands {
			terms, err := fwk.GetAffinityTerms(pod, fwk.GetPodAntiAffinityTerms(pod.Spec.Affinity))
			if err != nil {
				logger.V(3).Info("Pod has invalid anti-affinity terms", "pod", klog.KObj(pod), "err", err)
				continue
			}
			other := p.violation(c, pod, node, terms)
			if other == nil || !ev.Filter(pod) {
				continue
			}
			switch framework.Evict(ctx, ev, pod, Name, fmt.Sprintf("pod %s breaks its required anti-affinity", klog.KObj(other))) {
			case framework.Evicted:
				c.evicted[pod] = true
			case framework.StopEvicting:
				return nil
			case framework.NodeFull:
				goto nextNode
			}
		}
	nextNode:
	}
	return nil
}
