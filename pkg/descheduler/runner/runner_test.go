package runner

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	goruntime "runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/schedulersimulation"
)

type noop struct{}

func (noop) Name() string                                                 { return "Noop" }
func (noop) Deschedule(context.Context, []*corev1.Node) *framework.Status { return nil }

func newNoop(context.Context, runtime.Object, framework.Handle) (framework.Plugin, error) {
	return noop{}, nil
}

func TestWithPlugin(t *testing.T) {
	r, err := NewRegistries(WithPlugin("Noop", newNoop))
	if err != nil {
		t.Fatal(err)
	}
	if r.Plugins["Noop"] == nil || r.Plugins["DefaultEvictor"] == nil || r.Args["DefaultEvictor"] == nil {
		t.Errorf("registries: %v %v", r.Plugins, r.Args)
	}
	if _, err := NewRegistries(WithPlugin("DefaultEvictor", newNoop)); err == nil {
		t.Error("an out-of-tree plugin replaced an in-tree one")
	}
}

// WithSchedulerPlugin gives SchedulerSimulation a factory of its own, and refuses a name the
// simulated scheduler already has (accord-scheduler's or kube-scheduler's in-tree plugins) or
// registered twice.
func TestWithSchedulerPlugin(t *testing.T) {
	var oot frameworkruntime.PluginFactory = func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return nil, nil }
	plain, err := NewRegistries()
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRegistries(WithSchedulerPlugin("OutOfTree", oot))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.SchedulerPlugins) != 1 || r.SchedulerPlugins[0].Name != "OutOfTree" {
		t.Errorf("scheduler plugins %+v, want OutOfTree", r.SchedulerPlugins)
	}
	if reflect.ValueOf(r.Plugins[schedulersimulation.Name]).Pointer() == reflect.ValueOf(plain.Plugins[schedulersimulation.Name]).Pointer() {
		t.Error("SchedulerSimulation's factory is the in-tree one: it would not simulate OutOfTree")
	}
	for _, opts := range [][]Option{
		{WithSchedulerPlugin("LoadAware", oot)},
		{WithSchedulerPlugin("NodeResourcesFit", oot)},
		{WithSchedulerPlugin("OutOfTree", oot), WithSchedulerPlugin("OutOfTree", oot)},
		{WithSchedulerPlugin("OutOfTree", nil)},
	} {
		if _, err := NewRegistries(opts...); err == nil {
			t.Errorf("%d options: no error", len(opts))
		}
	}
}

// Run fails on a bad policy before touching any cluster, and names the field.
func TestRunRejectsBadPolicy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(path, []byte("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n  plugins:\n    deschedule: {enabled: [Missing]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Run(context.Background(), Config{PolicyConfigFile: path, Kubeconfig: "/nonexistent"})
	if err == nil || !strings.Contains(err.Error(), "profiles[0].plugins.deschedule.enabled[0]") {
		t.Errorf("got %v", err)
	}
}

// --scheduler-config-file fills in the schedulerConfigFile of the SchedulerSimulation plugin that
// policy defaulting enables, and leaves one set in the policy alone.
func TestSchedulerConfigFileFillsSimulationArgs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	doc := `apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: defaulted
  plugins:
    balance: {enabled: [RemoveDuplicates]}
- name: explicit
  pluginConfig:
  - name: SchedulerSimulation
    args: {schedulerConfigFile: OWN}
  plugins:
    balance: {enabled: [RemoveDuplicates]}
    filter: {enabled: [DefaultEvictor]}
    preEvictionFilter: {enabled: [DefaultEvictor, SchedulerSimulation]}
`
	sched, own := filepath.Join(dir, "sched.yaml"), filepath.Join(dir, "own.yaml")
	for _, f := range []string{sched, own} {
		if err := os.WriteFile(f, []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, []byte(strings.Replace(doc, "OWN", own, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	p, _, err := LoadPolicy(path, sched)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{sched, own}
	for i, prof := range p.Profiles {
		found := false
		for _, pc := range prof.PluginConfigs {
			if a, ok := pc.Args.(*schedulersimulation.SchedulerSimulationArgs); ok {
				found = true
				if a.SchedulerConfigFile != want[i] {
					t.Errorf("profile %s: schedulerConfigFile = %q, want %q", prof.Name, a.SchedulerConfigFile, want[i])
				}
			}
		}
		if !found {
			t.Errorf("profile %s has no SchedulerSimulation args", prof.Name)
		}
	}
}

// The start-up's collection completes before Start goes on to report ready.
func TestCollectStartupGarbage(t *testing.T) {
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	collectStartupGarbage(t.Context())
	goruntime.ReadMemStats(&after)
	if after.NumGC <= before.NumGC {
		t.Fatalf("collections: %d before, %d after; want one more", before.NumGC, after.NumGC)
	}
}
