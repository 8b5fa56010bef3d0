package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// The upstream descheduler's Deployment arguments parse unchanged.
func TestUpstreamFlagsParse(t *testing.T) {
	cmd := NewDeschedulerCommand()
	args := []string{
		"--policy-config-file=/policy-dir/policy.yaml", "--descheduling-interval=5m", "--dry-run",
		"--kubeconfig=/etc/kubeconfig", "--client-connection-qps=20", "--client-connection-burst=40",
		"--leader-elect=true", "--leader-elect-lease-duration=15s", "--leader-elect-renew-deadline=10s",
		"--leader-elect-retry-period=2s", "--leader-elect-resource-name=descheduler",
		"--leader-elect-resource-namespace=kube-system", "--secure-port=10258", "-v=3", "--event-driven",
	}
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string]string{
		"descheduling-interval": "5m0s", "dry-run": "true", "client-connection-qps": "20", "leader-elect": "true",
		"secure-port": "10258", "v": "3", "event-driven": "true", "leader-elect-resource-name": "descheduler",
	} {
		if got := cmd.Flags().Lookup(flag).Value.String(); got != want {
			t.Errorf("--%s = %s, want %s", flag, got, want)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	o := NewOptions()
	err := o.Validate()
	if err == nil || !strings.Contains(err.Error(), "--policy-config-file is required") {
		t.Errorf("missing policy: %v", err)
	}
	o.PolicyConfigFile, o.DeschedulingInterval = "p.yaml", -time.Second
	o.LeaderElection.LeaderElect = true
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "must not be negative") {
		t.Errorf("negative interval: %v", err)
	}
	o.DeschedulingInterval = 0
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--leader-elect needs") {
		t.Errorf("leader election with one cycle: %v", err)
	}
	o.EventDriven = true
	if err := o.Validate(); err != nil {
		t.Errorf("valid options: %v", err)
	}
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
	if err := NewDeschedulerCommand().ParseFlags([]string{"--scheduler-config-file=" + sched}); err != nil {
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

func TestWriteExplain(t *testing.T) {
	score, here := int64(312), int64(280)
	rows := []ExplainRow{
		{Profile: "p", Plugin: "RemoveDuplicates", Namespace: "ns", Pod: "a", Node: "n1", Reason: "3 pods\nof owner", Verdict: ExplainEvict,
			SimulationReason: "admitted", PredictedNode: "n2", Score: &score, CurrentNodeScore: &here, Message: "predicted on n2"},
		{Profile: "p", Plugin: "LowNodeUtilization", Namespace: "ns", Pod: "b", Node: "n1", Verdict: ExplainBlocked, BlockedBy: "SchedulerSimulation", SimulationReason: "same_node"},
	}
	var b strings.Builder
	if err := WriteExplain(&b, rows, "table"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "VERDICT") || !strings.Contains(lines[1], "312 (here 280)") ||
		!strings.Contains(lines[1], "3 pods of owner") || !strings.Contains(lines[2], "SchedulerSimulation/same_node") {
		t.Errorf("table:\n%s", b.String())
	}
	b.Reset()
	if err := WriteExplain(&b, nil, "json"); err != nil || strings.TrimSpace(b.String()) != "[]" {
		t.Errorf("empty json = %q, %v", b.String(), err)
	}
	if err := WriteExplain(&b, rows, "yaml"); err == nil {
		t.Error("unknown format accepted")
	}
	cmd := NewDeschedulerCommand()
	explain, _, err := cmd.Find([]string{"explain"})
	if err != nil || explain.Name() != "explain" || explain.Flags().Lookup("scheduler-config-file") == nil || explain.Flags().ShorthandLookup("o") == nil {
		t.Errorf("explain subcommand: %v", err)
	}
}
