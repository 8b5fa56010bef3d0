package removepodsviolatingnodetaints

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// Name is the plugin's name.
const Name = "RemovePodsViolatingNodeTaints"

// Plugin is the RemovePodsViolatingNodeTaints plugin.
//
// +k8s:deepcopy-gen=false
type Plugin struct {
	h    framework.Handle
	args *RemovePodsViolatingNodeTaintsArgs
	sel  *pluginutil.PodSelector
}

var _ framework.DeschedulePlugin = &Plugin{}

// New builds the plugin from its (defaulted, validated) args.
func New(ctx context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	args, ok := obj.(*RemovePodsViolatingNodeTaintsArgs)
	if !ok {
		return nil, fmt.Errorf("%s: want args of type RemovePodsViolatingNodeTaintsArgs, got %T", Name, obj)
	}
	sel, err := pluginutil.NewPodSelector(args.Namespaces, args.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return &Plugin{h: h, args: args, sel: sel}, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

func matches(list []string, t *corev1.Taint) bool {
	return slices.Contains(list, t.Key) || slices.Contains(list, t.Key+"="+t.Value)
}

// relevant says whether a taint can make the plugin evict.
func (p *Plugin) relevant(t *corev1.Taint) bool {
	if t.Effect != corev1.TaintEffectNoSchedule && (!p.args.IncludePreferNoSchedule || t.Effect != corev1.TaintEffectPreferNoSchedule) {
		return false
	}
	if matches(p.args.ExcludedTaints, t) {
		return false
	}
	return len(p.args.IncludedTaints) == 0 || matches(p.args.IncludedTaints, t)
}

// Deschedule evicts the pods that do not tolerate a relevant taint of their node.
func (p *Plugin) Deschedule(ctx context.Context, nodes []*corev1.Node) *framework.Status {
	logger := klog.FromContext(ctx)
	return pluginutil.EvictViolators(ctx, p.h, nodes, p.sel, false, Name, func(node *corev1.Node, pod *corev1.Pod) (string, bool) {
		if len(node.Spec.Taints) == 0 {
			return "", false
		}
		taint, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logger, node.Spec.Taints, pod.Spec.Tolerations, p.relevant, true)
		if !untolerated {
			return "", false
		}
		return fmt.Sprintf("pod does not tolerate taint %s of node %s", taint.ToString(), node.Name), true
	})
}
