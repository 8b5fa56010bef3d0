package podlifetime

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	h    framework.Handle
	args *PodLifeTimeArgs
	sel  *pluginutil.PodSelector
	// maxAge is maxPodLifeTimeSeconds; hasMaxAge is false when it is not set.
	maxAge    time.Duration
	hasMaxAge bool
	clock     clock.PassiveClock
}

var (
	_ framework.DeschedulePlugin      = &Plugin{}
	_ framework.PodIntrinsicNominator = &Plugin{}
)

// New builds the plugin from its (defaulted, validated) args.
func New(ctx context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	args, ok := obj.(*PodLifeTimeArgs)
	if !ok {
		return nil, fmt.Errorf("%s: want args of type PodLifeTimeArgs, got %T", Name, obj)
	}
	if errs := args.Validate(nil); len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w", Name, errs.ToAggregate())
	}
	sel, err := pluginutil.NewPodSelector(args.Namespaces, args.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	p := &Plugin{h: h, args: args, sel: sel, clock: clock.RealClock{}}
	if args.MaxPodLifeTimeSeconds != nil {
		p.maxAge, p.hasMaxAge = time.Duration(*args.MaxPodLifeTimeSeconds)*time.Second, true
	}
	return p, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// NominatesPodIntrinsically is true: a pod is nominated for its age (and state), not for where it runs, so
// SchedulerSimulation never blocks the eviction (framework.PodIntrinsicNominator).
func (p *Plugin) NominatesPodIntrinsically() bool { return true }

// Deschedule evicts every candidate pod that meets all the criteria the args set
// (maxPodLifeTimeSeconds, states, conditions, exitCodes, ownerKinds), oldest first across all nodes.
func (p *Plugin) Deschedule(ctx context.Context, nodes []*corev1.Node) *framework.Status {
	now := p.clock.Now()
	ev := p.h.Evictor()
	var old []*corev1.Pod
	for _, node := range nodes {
		// Finished pods are candidates too, as upstream's: `states: [Succeeded]`, a terminated reason
		// or an exit code of a pod that has failed must be able to match.
		pods, err := p.h.GetPodsAssignedToNode(node.Name, p.sel.Candidates(ev, true, func(pod *corev1.Pod) bool { return p.matches(pod, now) }))
		if err != nil {
			return framework.NewStatus(err)
		}
		old = append(old, pods...)
	}
	slices.SortStableFunc(old, func(a, b *corev1.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	framework.EvictAll(ctx, ev, old, Name, func(pod *corev1.Pod) string { return p.reason(pod, now) })
	return nil
}

// matches reports whether the pod meets every criterion the args set.
func (p *Plugin) matches(pod *corev1.Pod, now time.Time) bool {
	a := p.args
	if p.hasMaxAge && now.Sub(pod.CreationTimestamp.Time) <= p.maxAge {
		return false
	}
	if len(a.States) > 0 && !p.inStates(pod) {
		return false
	}
	if a.OwnerKinds != nil && !ownerKindsMatch(pod, a.OwnerKinds) {
		return false
	}
	if len(a.Conditions) > 0 && !conditionsMatch(pod, a.Conditions, now) {
		return false
	}
	if len(a.ExitCodes) > 0 && !exitCodesMatch(pod, a.ExitCodes, a.IncludingInitContainers) {
		return false
	}
	return true
}

// inStates: the pod's phase or status reason, or a container's waiting or terminated reason.
func (p *Plugin) inStates(pod *corev1.Pod) bool {
	statuses := pluginutil.ContainerStatuses(pod, p.args.IncludingInitContainers, p.args.IncludingEphemeralContainers)
	if pluginutil.InStates(pod, p.args.States, statuses) {
		return true
	}
	return slices.ContainsFunc(statuses, func(cs corev1.ContainerStatus) bool {
		return cs.State.Terminated != nil && slices.Contains(p.args.States, cs.State.Terminated.Reason)
	})
}

func ownerKindsMatch(pod *corev1.Pod, k *OwnerKinds) bool {
	has := func(kinds []string) bool {
		return slices.ContainsFunc(pod.OwnerReferences, func(o metav1.OwnerReference) bool { return slices.Contains(kinds, o.Kind) })
	}
	switch {
	case len(k.Include) > 0:
		return has(k.Include)
	case len(k.Exclude) > 0:
		return !has(k.Exclude)
	}
	return true
}

// conditionsMatch: one of the pod's conditions matches one of the filters.
func conditionsMatch(pod *corev1.Pod, filters []PodConditionFilter, now time.Time) bool {
	for _, f := range filters {
		for _, c := range pod.Status.Conditions {
			if (f.Type != "" && string(c.Type) != f.Type) || (f.Status != "" && string(c.Status) != f.Status) || (f.Reason != "" && c.Reason != f.Reason) {
				continue
			}
			if f.MinTimeSinceLastTransitionSeconds != nil {
				if c.LastTransitionTime.IsZero() || now.Sub(c.LastTransitionTime.Time) < time.Duration(*f.MinTimeSinceLastTransitionSeconds)*time.Second {
					continue
				}
			}
			return true
		}
	}
	return false
}

// exitCodesMatch: a container (or, with init, an init container) terminated with one of codes.
func exitCodesMatch(pod *corev1.Pod, codes []int32, init bool) bool {
	statuses := pluginutil.ContainerStatuses(pod, init, false)
	return slices.ContainsFunc(statuses, func(cs corev1.ContainerStatus) bool {
		return cs.State.Terminated != nil && slices.Contains(codes, cs.State.Terminated.ExitCode)
	})
}

// reason is the eviction's reason: the criteria the pod met.
func (p *Plugin) reason(pod *corev1.Pod, now time.Time) string {
	var parts []string
	if p.hasMaxAge {
		parts = append(parts, fmt.Sprintf("pod is %s old, more than %s", now.Sub(pod.CreationTimestamp.Time).Round(time.Second), p.maxAge))
	}
	if len(p.args.States) > 0 {
		parts = append(parts, fmt.Sprintf("in one of the states %v", p.args.States))
	}
	if len(p.args.Conditions) > 0 {
		parts = append(parts, "a status condition matches")
	}
	if len(p.args.ExitCodes) > 0 {
		parts = append(parts, fmt.Sprintf("a container exited with one of %v", p.args.ExitCodes))
	}
	if len(parts) == 0 {
		return "owner kind matches"
	}
	return strings.Join(parts, "; ")
}
