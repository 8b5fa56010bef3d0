package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

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
	reg, args, err := Registries(WithPlugin("Noop", newNoop))
	if err != nil {
		t.Fatal(err)
	}
	if reg["Noop"] == nil || reg["DefaultEvictor"] == nil || args["DefaultEvictor"] == nil {
		t.Errorf("registries: %v %v", reg, args)
	}
	if _, _, err := Registries(WithPlugin("DefaultEvictor", newNoop)); err == nil {
		t.Error("an out-of-tree plugin replaced an in-tree one")
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
