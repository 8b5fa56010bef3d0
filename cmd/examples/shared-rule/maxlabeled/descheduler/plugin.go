// Package descheduler is the descheduler side of the maxlabeled example rule: a Deschedule plugin
// that evicts, node by node, the counted pods above MaxPerNode (the youngest first), with args
// that follow the scheduler plugin's.
package descheduler

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/cmd/examples/shared-rule/maxlabeled"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

// MaxLabeledPerNodeArgs are the plugin's policy args: the rule's.
type MaxLabeledPerNodeArgs struct {
	metav1.TypeMeta `json:",inline"`
	maxlabeled.Rule `json:",inline"`
}

var _ framework.SchedulerFollower = &MaxLabeledPerNodeArgs{}

// DeepCopyObject implements runtime.Object.
func (a *MaxLabeledPerNodeArgs) DeepCopyObject() runtime.Object { c := *a; return &c }

// FollowsScheduler implements framework.SchedulerFollower: the args follow the scheduler plugin
// of the same name.
func (a *MaxLabeledPerNodeArgs) FollowsScheduler() []string { return []string{maxlabeled.Name} }

// following declares that labelKey and maxPerNode are the scheduler plugin's.
var following = framework.Following{
	Scheduler: maxlabeled.Name,
	Fields:    []framework.FollowedField{{Scheduler: "labelKey"}, {Scheduler: "maxPerNode"}},
}

// FollowScheduler implements framework.SchedulerFollower with the generic follower: the scheduler's
// args arrive as *runtime.Unknown (its scheme does not know them), so each profile's are decoded
// as the scheduler plugin decodes them (maxlabeled.Decode), then followed as following declares.
func (a *MaxLabeledPerNodeArgs) FollowScheduler(f *framework.Follow) field.ErrorList {
	return framework.FollowDecoded(f, a, following, nil, func(obj runtime.Object) (any, error) { return maxlabeled.Decode(obj) })
}

// Plugin evicts the counted pods above the limit.
type Plugin struct {
	args   *MaxLabeledPerNodeArgs
	handle framework.Handle
}

var _ framework.DeschedulePlugin = &Plugin{}

// New builds the plugin from its defaulted, validated (and, with --scheduler-config-file,
// followed) args.
func New(_ context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	args, ok := obj.(*MaxLabeledPerNodeArgs)
	if !ok {
		return nil, fmt.Errorf("want *MaxLabeledPerNodeArgs, got %T", obj)
	}
	return &Plugin{args: args, handle: h}, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return maxlabeled.Name }

// Deschedule evicts, on each node above the limit, its youngest counted pods down to the limit.
func (p *Plugin) Deschedule(ctx context.Context, nodes []*corev1.Node) *framework.Status {
	ev := p.handle.Evictor()
	for _, node := range nodes {
		pods, err := p.handle.GetPodsAssignedToNode(node.Name, p.args.Counts)
		if err != nil {
			return framework.NewStatus(err)
		}
		excess := p.args.Excess(len(pods))
		slices.SortFunc(pods, func(a, b *corev1.Pod) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) })
		for _, pod := range pods {
			if excess == 0 {
				break
			}
			if !ev.Filter(pod) {
				continue
			}
			// framework.Evict checks the limits, runs the preEvictionFilters, evicts, and says how
			// to go on.
			switch framework.Evict(ctx, ev, pod, maxlabeled.Name,
				fmt.Sprintf("node holds more than %d pods labelled %s=true", p.args.MaxPerNode, p.args.LabelKey)) {
			case framework.Evicted:
				excess--
			case framework.StopEvicting:
				return nil
			case framework.NodeFull:
				excess = 0
			}
		}
	}
	return nil
}
