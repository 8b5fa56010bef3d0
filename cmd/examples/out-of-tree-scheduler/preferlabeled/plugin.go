// Package preferlabeled is the example plugin of the scheduler's "Build your own scheduler" guide
// (pkg/scheduler/README.md): a Score plugin that prefers nodes labelled
// example.accord.dev/preferred=true. It has no args; its factory has kube-scheduler's signature.
package preferlabeled

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
)

// Name is the plugin's name in KubeSchedulerConfiguration profiles.
const Name = "PreferLabeled"

// Label marks the preferred nodes (value "true").
const Label = "example.accord.dev/preferred"

// Plugin scores a node labelled Label=true fwk.MaxNodeScore and every other node 0.
type Plugin struct{}

var _ fwk.ScorePlugin = Plugin{}

// New is the plugin's factory.
func New(_ context.Context, _ runtime.Object, _ fwk.Handle) (fwk.Plugin, error) {
	return Plugin{}, nil
}

// Name returns the plugin's name.
func (Plugin) Name() string { return Name }

// Score reads the node's label from the scheduler's snapshot (no API call).
func (Plugin) Score(_ context.Context, _ fwk.CycleState, _ *corev1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	if nodeInfo.Node().Labels[Label] == "true" {
		return fwk.MaxNodeScore, nil
	}
	return 0, nil
}

// ScoreExtensions returns nil: the scores need no normalising.
func (Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }
