package removefailedpods

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// Name is the plugin's name.
const Name = "RemoveFailedPods"

// Plugin is the RemoveFailedPods plugin.
//
// +k8s:deepcopy-gen=false
type Plugin struct {
	h     framework.Handle
	args  *RemoveFailedPodsArgs
	sel   *pluginutil.PodSelector
	clock clock.PassiveClock
}

var (
	_ framework.DeschedulePlugin      = &Plugin{}
	_ framework.PodIntrinsicNominator = &Plugin{}
)

// New builds the plugin from its (defaulted, validated) args.
func New(ctx context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	args, ok := obj.(*RemoveFailedPodsArgs)
	if !ok {
		return nil, fmt.Errorf("%s: want args of type RemoveFailedPodsArgs, got %T", Name, obj)
	}
	sel, err := pluginutil.NewPodSelector(args.Namespaces, args.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return &Plugin{h: h, args: args, sel: sel, clock: clock.RealClock{}}, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// NominatesPodIntrinsically is true: a pod is nominated for having failed, not for where it runs, so
// SchedulerSimulation never blocks the eviction (framework.PodIntrinsicNominator).
func (p *Plugin) NominatesPodIntrinsically() bool { return true }

func (p *Plugin) failed(pod *corev1.Pod, now time.Time) (string, bool) {
	if pod.Status.Phase != corev1.PodFailed {
		return "", false
	}
	for _, o := range pod.OwnerReferences {
		if slices.Contains(p.args.ExcludeOwnerKinds, o.Kind) {
			return "", false
		}
	}
	if m := p.args.MinPodLifetimeSeconds; m != nil && now.Sub(pod.CreationTimestamp.Time) < time.Duration(*m)*time.Second {
		return "", false
	}
	statuses := pluginutil.ContainerStatuses(pod, p.args.IncludingInitContainers, false)
	if len(p.args.Reasons) > 0 && !p.reasonMatches(pod, statuses) {
		return "", false
	}
	if len(p.args.ExitCodes) > 0 && !slices.ContainsFunc(statuses, func(s corev1.ContainerStatus) bool {
		return s.State.Terminated != nil && slices.Contains(p.args.ExitCodes, s.State.Terminated.ExitCode)
	}) {
		return "", false
	}
	reason := pod.Status.Reason
	if reason == "" {
		reason = "Failed"
	}
	return "failed pod: " + reason, true
}

func (p *Plugin) reasonMatches(pod *corev1.Pod, statuses []corev1.ContainerStatus) bool {
	if slices.Contains(p.args.Reasons, pod.Status.Reason) {
		return true
	}
	for _, s := range statuses {
		if t := s.State.Terminated; t != nil && slices.Contains(p.args.Reasons, t.Reason) {
			return true
		}
		if w := s.State.Waiting; w != nil && slices.Contains(p.args.Reasons, w.Reason) {
			return true
		}
	}
	return false
}

// Deschedule evicts the failed pods that match the args.
func (p *Plugin) Deschedule(ctx context.Context, nodes []*corev1.Node) *framework.Status {
	now := p.clock.Now()
	return pluginutil.EvictViolators(ctx, p.h, nodes, p.sel, true, Name, func(_ *corev1.Node, pod *corev1.Pod) (string, bool) {
		return p.failed(pod, now)
	})
}
