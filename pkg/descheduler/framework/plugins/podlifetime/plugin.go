package podlifetime

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
const Name = "PodLifeTime"

// Plugin is the PodLifeTime plugin.
//
// +k8s:deepcopy-gen=false
type Plugin struct {
	h      framework.Handle
	args   *PodLifeTimeArgs
	sel    *pluginutil.PodSelector
	maxAge time.Duration
	clock  clock.PassiveClock
}

var (
	_ framework.DeschedulePlugin      = &Plugin{}
	_ framework.PodIntrinsicNominator = &Plugin{}
)

// New builds the plugin from its (defaulted, validated) args.
func New(obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	args, ok := obj.(*PodLifeTimeArgs)
	if !ok {
		return nil, fmt.Errorf("%s: want args of type PodLifeTimeArgs, got %T", Name, obj)
	}
	if args.MaxPodLifeTimeSeconds == nil {
		return nil, fmt.Errorf("%s: maxPodLifeTimeSeconds is required", Name)
	}
	sel, err := pluginutil.NewPodSelector(args.Namespaces, args.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return &Plugin{h: h, args: args, sel: sel, maxAge: time.Duration(*args.MaxPodLifeTimeSeconds) * time.Second, clock: clock.RealClock{}}, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// NominatesPodIntrinsically is true: a pod is nominated for its age (and state), not for where it runs, so
// SchedulerSimulation never blocks the eviction (framework.PodIntrinsicNominator).
func (p *Plugin) NominatesPodIntrinsically() bool { return true }

// Deschedule evicts every candidate pod older than maxPodLifeTimeSeconds, oldest first across all
// nodes.
func (p *Plugin) Deschedule(ctx context.Context, nodes []*corev1.Node) *framework.Status {
	now := p.clock.Now()
	ev := p.h.Evictor()
	var old []*corev1.Pod
	for _, node := range nodes {
		pods, err := p.h.GetPodsAssignedToNode(node.Name, p.sel.Candidates(ev, false, func(pod *corev1.Pod) bool {
			return now.Sub(pod.CreationTimestamp.Time) > p.maxAge &&
				pluginutil.InStates(pod, p.args.States, pluginutil.ContainerStatuses(pod, p.args.IncludingInitContainers, p.args.IncludingEphemeralContainers))
		}))
		if err != nil {
			return framework.NewStatus(err)
		}
		old = append(old, pods...)
	}
	slices.SortStableFunc(old, func(a, b *corev1.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	pluginutil.EvictAll(ctx, ev, old, Name, func(pod *corev1.Pod) string {
		return fmt.Sprintf("pod is %s old, more than %s", now.Sub(pod.CreationTimestamp.Time).Round(time.Second), p.maxAge)
	})
	return nil
}
