package removepodshavingtoomanyrestarts

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// Name is the plugin's name.
const Name = "RemovePodsHavingTooManyRestarts"

// Plugin is the RemovePodsHavingTooManyRestarts plugin.
//
// +k8s:deepcopy-gen=false
type Plugin struct {
	h    framework.Handle
	args *RemovePodsHavingTooManyRestartsArgs
	sel  *pluginutil.PodSelector
}

var (
	_ framework.DeschedulePlugin      = &Plugin{}
	_ framework.PodIntrinsicNominator = &Plugin{}
)

// New builds the plugin from its (defaulted, validated) args.
func New(ctx context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	args, ok := obj.(*RemovePodsHavingTooManyRestartsArgs)
	if !ok {
		return nil, fmt.Errorf("%s: want args of type RemovePodsHavingTooManyRestartsArgs, got %T", Name, obj)
	}
	sel, err := pluginutil.NewPodSelector(args.Namespaces, args.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return &Plugin{h: h, args: args, sel: sel}, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// NominatesPodIntrinsically is true: a pod is nominated for its restarts, not for where it runs, so
// SchedulerSimulation never blocks the eviction (framework.PodIntrinsicNominator).
func (p *Plugin) NominatesPodIntrinsically() bool { return true }

// Restarts returns the pod's total container restarts, with its init containers' when asked.
func Restarts(pod *corev1.Pod, init bool) int32 {
	var n int32
	for _, s := range pod.Status.ContainerStatuses {
		n += s.RestartCount
	}
	if init {
		for _, s := range pod.Status.InitContainerStatuses {
			n += s.RestartCount
		}
	}
	return n
}

// Deschedule evicts the pods with at least podRestartThreshold restarts.
func (p *Plugin) Deschedule(ctx context.Context, nodes []*corev1.Node) *framework.Status {
	return pluginutil.EvictViolators(ctx, p.h, nodes, p.sel, false, Name, func(_ *corev1.Node, pod *corev1.Pod) (string, bool) {
		n := Restarts(pod, p.args.IncludingInitContainers)
		if n < p.args.PodRestartThreshold {
			return "", false
		}
		if !pluginutil.InStates(pod, p.args.States, pluginutil.ContainerStatuses(pod, p.args.IncludingInitContainers, false)) {
			return "", false
		}
		return fmt.Sprintf("%d restarts, threshold %d", n, p.args.PodRestartThreshold), true
	})
}
