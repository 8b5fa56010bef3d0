// Package scheduler is the scheduler side of the maxlabeled example rule: a Filter plugin that
// keeps a counted pod off a node already holding MaxPerNode of them.
package scheduler

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/accord-sched/accord/cmd/examples/shared-rule/maxlabeled"
)

// Plugin filters nodes by the rule.
type Plugin struct{ rule maxlabeled.Rule }

var _ fwk.FilterPlugin = &Plugin{}

// New decodes the args strictly (kube-scheduler hands an out-of-tree plugin its pluginConfig args
// as *runtime.Unknown, or nil without one: maxlabeled.Decode), defaults and validates them.
func New(_ context.Context, obj runtime.Object, _ fwk.Handle) (fwk.Plugin, error) {
	rule, err := maxlabeled.Decode(obj)
	if err != nil {
		return nil, fmt.Errorf("%s args: %w", maxlabeled.Name, err)
	}
	p := &Plugin{rule: *rule}
	if errs := p.rule.Validate(nil); len(errs) > 0 {
		return nil, fmt.Errorf("%s args: %w", maxlabeled.Name, errs.ToAggregate())
	}
	return p, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return maxlabeled.Name }

// Filter refuses a counted pod on a node with no room left under the rule.
func (p *Plugin) Filter(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	if !p.rule.Counts(pod) {
		return nil
	}
	n := 0
	for _, pi := range nodeInfo.GetPods() {
		if p.rule.Counts(pi.GetPod()) {
			n++
		}
	}
	if !p.rule.Fits(n) {
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("node holds %d pods labelled %s=true, the most %s allows", n, p.rule.LabelKey, maxlabeled.Name))
	}
	return nil
}
