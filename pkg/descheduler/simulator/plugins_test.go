package simulator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/accord-sched/accord/pkg/scheduler/crcache"
	schedplugins "github.com/accord-sched/accord/pkg/scheduler/plugins"
	"github.com/accord-sched/accord/pkg/scheduler/server"
)

// profileConfig writes a KubeSchedulerConfiguration with one profile, "accord-scheduler", that runs
// kube-scheduler's default plugins plus the named ones at every extension point they implement, and
// loads it as the descheduler does.
func profileConfig(t *testing.T, plugins ...string) string {
	t.Helper()
	doc := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: accord-scheduler\n  plugins:\n    multiPoint:\n      enabled:\n"
	for _, p := range plugins {
		doc += fmt.Sprintf("      - name: %s\n", p)
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// enabledPlugins lists the plugins a framework runs at Filter or Score.
func enabledPlugins(e *testEnv, profile string) []string {
	e.t.Helper()
	fw := e.sim.frameworks[profile]
	if fw == nil {
		e.t.Fatalf("no simulated profile %q (have %v)", profile, e.sim.Profiles())
	}
	var names []string
	plugins := fw.ListPlugins()
	for _, p := range append(plugins.Filter.Enabled, plugins.Score.Enabled...) {
		names = append(names, p.Name)
	}
	return names
}

// TestEverySchedulerPluginIsSimulated: every plugin accord-scheduler registers (server.PluginOptions)
// is in the simulator's registry and builds, with its defaulted args, in a simulated profile that
// enables it; a prediction then runs it. A plugin added to the scheduler but not to the
// simulation fails here.
func TestEverySchedulerPluginIsSimulated(t *testing.T) {
	registered := frameworkruntime.Registry{}
	for _, opt := range server.PluginOptions(crcache.New()) {
		if err := opt(registered); err != nil {
			t.Fatal(err)
		}
	}
	if len(registered) == 0 {
		t.Fatal("accord-scheduler registers no plugins")
	}
	for name := range registered {
		t.Run(name, func(t *testing.T) {
			cfg, err := LoadConfig(profileConfig(t, name))
			if err != nil {
				t.Fatal(err)
			}
			p := pod("p", "n1", "100m", func(p *corev1.Pod) { p.Spec.SchedulerName = "accord-scheduler" })
			// No ClusterScopedResources nor NodeMetrics: whatever the plugin decides, it must run.
			e := newTestEnv(t, envOptions{config: cfg, accord: []runtime.Object{}}, node("n1", "4"), node("n2", "4"), p)
			if got := enabledPlugins(e, "accord-scheduler"); !slices.Contains(got, name) {
				t.Fatalf("the simulated profile runs %v at Filter/Score, not %s", got, name)
			}
			e.beginCycle()
			if _, err := e.sim.Predict(e.ctx, p); err != nil {
				t.Fatalf("Predict: %v", err)
			}
		})
	}
}

// onlyNodePlugin is a test plugin: a pod fits only the node it names.
type onlyNodePlugin struct{ node string }

func (p *onlyNodePlugin) Name() string { return "OnlyNode" }

func (p *onlyNodePlugin) Filter(_ context.Context, _ fwk.CycleState, _ *corev1.Pod, ni fwk.NodeInfo) *fwk.Status {
	if ni.Node().Name != p.node {
		return fwk.NewStatus(fwk.Unschedulable, "not "+p.node)
	}
	return nil
}

// TestAddedDescriptorIsSimulated: a plugin added to the descriptor list is simulated with nothing
// else changed in the descheduler; its Filter decides the prediction.
func TestAddedDescriptorIsSimulated(t *testing.T) {
	e, p := onlyNodeEnv(t, &onlyNodePlugin{node: "n2"})
	e.beginCycle()
	pred := e.expectNode(p, "n2")
	if pred.FeasibleNodes != 1 {
		t.Fatalf("prediction %+v: want only n2 feasible", pred)
	}
}

// warmingPlugin is onlyNodePlugin keeping per-node state (simulator.NodeWarmer): it records the
// nodes Warm hands it.
type warmingPlugin struct {
	onlyNodePlugin
	warmed []string
}

func (p *warmingPlugin) WarmNodes(nodes []fwk.NodeInfo) {
	for _, ni := range nodes {
		p.warmed = append(p.warmed, ni.Node().Name)
	}
}

// TestWarmHandsNodesToNodeWarmers: Warm hands every node of the snapshot to a simulated plugin that
// keeps per-node state (Accord's LoadAware keeps each node's usage estimate), once.
func TestWarmHandsNodesToNodeWarmers(t *testing.T) {
	pl := &warmingPlugin{onlyNodePlugin: onlyNodePlugin{node: "n2"}}
	e, p := onlyNodeEnv(t, pl)
	if err := e.sim.Warm(e.ctx); err != nil {
		t.Fatal(err)
	}
	slices.Sort(pl.warmed)
	if want := []string{"n1", "n2", "n3"}; !slices.Equal(pl.warmed, want) {
		t.Fatalf("Warm handed %v; want every node once, %v", pl.warmed, want)
	}
	e.beginCycle()
	e.expectNode(p, "n2")
}

// onlyNodeEnv is a simulator whose accord-scheduler profile runs pl as the plugin "OnlyNode" (added
// to the descriptor list), over nodes n1 (4 CPU), n2 (2) and n3 (16), with the returned pod on n1.
func onlyNodeEnv(t *testing.T, pl fwk.Plugin) (*testEnv, *corev1.Pod) {
	t.Helper()
	extra := schedplugins.Descriptor{
		Name: "OnlyNode",
		Factory: func(*crcache.Cache) frameworkruntime.PluginFactory {
			return func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return pl, nil }
		},
	}
	cfg, err := LoadConfig(profileConfig(t, "OnlyNode"))
	if err != nil {
		t.Fatal(err)
	}
	p := pod("p", "n1", "100m", func(p *corev1.Pod) { p.Spec.SchedulerName = "accord-scheduler" })
	e := newTestEnv(t, envOptions{config: cfg, accord: []runtime.Object{}, plugins: append(schedplugins.Descriptors(), extra)},
		node("n1", "4"), node("n2", "2"), node("n3", "16"), p)
	return e, p
}
