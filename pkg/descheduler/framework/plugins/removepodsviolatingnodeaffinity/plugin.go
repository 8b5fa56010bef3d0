package removepodsviolatingnodeaffinity

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// Name is the plugin's name.
const Name = "RemovePodsViolatingNodeAffinity"

// Plugin is the RemovePodsViolatingNodeAffinity plugin.
//
// +k8s:deepcopy-gen=false
type Plugin struct {
	h                   framework.Handle
	sel                 *pluginutil.PodSelector
	fitter              *pluginutil.Fitter
	required, preferred bool
}

var _ framework.DeschedulePlugin = &Plugin{}

// New builds the plugin from its (defaulted, validated) args.
func New(ctx context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	args, ok := obj.(*RemovePodsViolatingNodeAffinityArgs)
	if !ok {
		return nil, fmt.Errorf("%s: want args of type RemovePodsViolatingNodeAffinityArgs, got %T", Name, obj)
	}
	sel, err := pluginutil.NewPodSelector(args.Namespaces, args.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return &Plugin{h: h, sel: sel, fitter: pluginutil.NewFitter(ctx, h),
		required: slices.Contains(args.NodeAffinityType, Required), preferred: slices.Contains(args.NodeAffinityType, Preferred)}, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// Deschedule evicts pods whose node violates their required node affinity (when another node fits
// them), and pods for which another node they fit scores higher on their preferred terms. The label
// checks pick the candidates; the costly "fits another node" check runs only before an eviction.
func (p *Plugin) Deschedule(ctx context.Context, nodes []*corev1.Node) *framework.Status {
	return pluginutil.EvictConfirmedViolators(ctx, p.h, nodes, p.sel, false, Name, p.candidate, func(node *corev1.Node, pod *corev1.Pod) (string, bool) {
		return p.confirm(node, pod, nodes)
	})
}

func (p *Plugin) requiredViolated(node *corev1.Node, pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	hasRequired := a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil
	if !p.required || (!hasRequired && len(pod.Spec.NodeSelector) == 0) {
		return false
	}
	ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)
	return err == nil && !ok
}

func (p *Plugin) preferredTerms(pod *corev1.Pod) *nodeaffinity.PreferredSchedulingTerms {
	a := pod.Spec.Affinity
	if !p.preferred || a == nil || a.NodeAffinity == nil || len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		return nil
	}
	terms, err := nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	if err != nil {
		return nil
	}
	return terms
}

// candidate is the cheap check: the required affinity no longer matches, or the pod has preferred
// terms (whether another node scores higher is left to confirm).
func (p *Plugin) candidate(node *corev1.Node, pod *corev1.Pod) (string, bool) {
	if p.requiredViolated(node, pod) {
		return "required node affinity no longer matches", true
	}
	if p.preferredTerms(pod) != nil {
		return "preferred node affinity", true
	}
	return "", false
}

func (p *Plugin) confirm(node *corev1.Node, pod *corev1.Pod, nodes []*corev1.Node) (string, bool) {
	if p.requiredViolated(node, pod) {
		if other, fits := p.fitter.FitsAnyOther(pod, nodes, nil); fits {
			return fmt.Sprintf("node %s does not match the pod's required node affinity (it fits %s)", node.Name, other.Name), true
		}
	}
	if terms := p.preferredTerms(pod); terms != nil {
		current := terms.Score(node)
		if other, fits := p.fitter.FitsAnyOther(pod, nodes, func(n *corev1.Node) bool { return terms.Score(n) > current }); fits {
			return fmt.Sprintf("node %s matches more of the pod's preferred node affinity than %s", other.Name, node.Name), true
		}
	}
	return "", false
}
