package runner

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/accord-sched/accord/apis/config"
	"github.com/accord-sched/accord/apis/descheduler"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/defaultevictor"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/lownodeload"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/nodecrdresourcefit"
)

// truthSchedulerConfig is accord-scheduler's profile with non-default shared args, next to a
// default-scheduler profile that runs none of Accord's plugins.
const truthSchedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
- schedulerName: accord-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: NodeCRDResourceFit
      - name: LoadAware
  pluginConfig:
  - name: NodeCRDResourceFit
    args:
      missingCRPolicy: Ignore
  - name: LoadAware
    args:
      usageThresholds: {cpu: 70, memory: 85}
      resourceWeights: {cpu: 2, memory: 1}
      nodeMetricExpirationSeconds: 120
      estimatedScalingFactors: {cpu: 90}
      estimatedSecondsAfterPodScheduled: 30
`

const truthPolicyHead = `apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: accord
  pluginConfig:
`

const truthPlugins = `  plugins:
    filter:
      enabled: [DefaultEvictor]
    preEvictionFilter:
      enabled: [DefaultEvictor]
    deschedule:
      enabled: [NodeCRDResourceFit]
    balance:
      enabled: [LowNodeLoad]
`

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func args[T any](t *testing.T, p *descheduler.DeschedulerPolicy) T {
	t.Helper()
	for _, pc := range p.Profiles[0].PluginConfigs {
		if a, ok := pc.Args.(T); ok {
			return a
		}
	}
	var zero T
	t.Fatalf("no args of type %T", zero)
	return zero
}

// With none of the shared args in the policy, the scheduler's values are used.
func TestSchedulerTruthFillsIn(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"sched.yaml":  truthSchedulerConfig,
		"policy.yaml": truthPolicyHead + "  - name: LowNodeLoad\n    args:\n      consecutiveAbnormalities: 1\n" + truthPlugins,
	})
	p, _, err := LoadPolicy(filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "sched.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fit := args[*nodecrdresourcefit.NodeCRDResourceFitArgs](t, p)
	ev := args[*defaultevictor.DefaultEvictorArgs](t, p)
	lnl := args[*lownodeload.LowNodeLoadArgs](t, p)
	if fit.MissingCRPolicy != config.MissingCRPolicyIgnore || ev.MissingCRPolicy != config.MissingCRPolicyIgnore {
		t.Errorf("missingCRPolicy = %s (NodeCRDResourceFit), %s (DefaultEvictor), want the scheduler's Ignore", fit.MissingCRPolicy, ev.MissingCRPolicy)
	}
	if want := map[corev1.ResourceName]int64{"cpu": 70, "memory": 85}; !maps.Equal(lnl.HighThresholds, want) {
		t.Errorf("highThresholds = %v, want the scheduler's usageThresholds %v", lnl.HighThresholds, want)
	}
	if want := map[corev1.ResourceName]int64{"cpu": 45, "memory": 75}; !maps.Equal(lnl.LowThresholds, want) {
		t.Errorf("lowThresholds = %v, want the plugin's defaults %v", lnl.LowThresholds, want)
	}
	if lnl.NodeMetricExpirationSeconds == nil || *lnl.NodeMetricExpirationSeconds != 120 {
		t.Errorf("nodeMetricExpirationSeconds = %v, want the scheduler's 120", lnl.NodeMetricExpirationSeconds)
	}
	if want := map[corev1.ResourceName]int64{"cpu": 2, "memory": 1}; !maps.Equal(lnl.ResourceWeights, want) {
		t.Errorf("resourceWeights = %v, want the scheduler's %v", lnl.ResourceWeights, want)
	}
	if want := map[corev1.ResourceName]int64{"cpu": 90}; !maps.Equal(lnl.EstimatedScalingFactors, want) {
		t.Errorf("estimatedScalingFactors = %v, want the scheduler's %v", lnl.EstimatedScalingFactors, want)
	}
	if lnl.EstimatedSecondsAfterPodScheduled == nil || *lnl.EstimatedSecondsAfterPodScheduled != 30 {
		t.Errorf("estimatedSecondsAfterPodScheduled = %v, want the scheduler's 30", lnl.EstimatedSecondsAfterPodScheduled)
	}
	if lnl.ConsecutiveAbnormalities != 1 {
		t.Errorf("an arg with no scheduler counterpart changed: consecutiveAbnormalities = %d", lnl.ConsecutiveAbnormalities)
	}

	// Without a scheduler configuration the plugins' own defaults apply, as before.
	p, _, err = LoadPolicy(filepath.Join(dir, "policy.yaml"), "")
	if err != nil {
		t.Fatal(err)
	}
	if lnl := args[*lownodeload.LowNodeLoadArgs](t, p); lnl.HighThresholds["cpu"] != 65 {
		t.Errorf("without a scheduler configuration highThresholds = %v, want the plugin's default", lnl.HighThresholds)
	}
}

// Equal explicit values are accepted; contradicting ones are rejected with both field paths.
func TestSchedulerTruthRejectsContradictions(t *testing.T) {
	for _, tc := range []struct {
		name, args string
		want       []string
	}{{
		name: "equal values",
		args: "  - name: NodeCRDResourceFit\n    args: {missingCRPolicy: Ignore}\n  - name: LowNodeLoad\n    args:\n      highThresholds: {cpu: 70, memory: 85}\n      lowThresholds: {cpu: 10, memory: 10}\n      nodeMetricExpirationSeconds: 120\n      resourceWeights: {cpu: 5}\n      estimatedScalingFactors: {cpu: 90, memory: 0}\n      estimatedSecondsAfterPodScheduled: 30\n",
	}, {
		name: "estimatedScalingFactors",
		args: "  - name: LowNodeLoad\n    args:\n      estimatedScalingFactors: {cpu: 85, memory: 70}\n",
		want: []string{"profiles[0].pluginConfig[0].args.estimatedScalingFactors", "profiles[1].pluginConfig[1].args.estimatedScalingFactors"},
	}, {
		name: "estimatedSecondsAfterPodScheduled",
		args: "  - name: LowNodeLoad\n    args:\n      estimatedSecondsAfterPodScheduled: 0\n",
		want: []string{"profiles[0].pluginConfig[0].args.estimatedSecondsAfterPodScheduled", "profiles[1].pluginConfig[1].args.estimatedSecondsAfterPodScheduled"},
	}, {
		name: "highThresholds",
		args: "  - name: LowNodeLoad\n    args:\n      highThresholds: {cpu: 90, memory: 85}\n      lowThresholds: {cpu: 10, memory: 10}\n",
		want: []string{"profiles[0].pluginConfig[0].args.highThresholds", "profiles[1].pluginConfig[1].args.usageThresholds"},
	}, {
		name: "nodeMetricExpirationSeconds",
		args: "  - name: LowNodeLoad\n    args:\n      nodeMetricExpirationSeconds: 60\n",
		want: []string{"profiles[0].pluginConfig[0].args.nodeMetricExpirationSeconds", "profiles[1].pluginConfig[1].args.nodeMetricExpirationSeconds"},
	}, {
		name: "missingCRPolicy",
		args: "  - name: NodeCRDResourceFit\n    args: {missingCRPolicy: Reject}\n  - name: DefaultEvictor\n    args: {missingCRPolicy: Reject}\n",
		want: []string{"profiles[0].pluginConfig[0].args.missingCRPolicy", "profiles[0].pluginConfig[1].args.missingCRPolicy", "profiles[1].pluginConfig[0].args.missingCRPolicy"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{"sched.yaml": truthSchedulerConfig, "policy.yaml": truthPolicyHead + tc.args + truthPlugins})
			_, _, err := LoadPolicy(filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "sched.yaml"))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("contradicting policy accepted")
			}
			t.Logf("rejected: %v", err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not name %s: %v", w, err)
				}
			}
			if !strings.Contains(err.Error(), filepath.Join(dir, "sched.yaml")) {
				t.Errorf("error does not name the scheduler configuration file: %v", err)
			}
		})
	}
}

// A scheduler profile without pluginConfig for a plugin it runs contributes the plugin's defaults;
// NodeCRDResourceFit's schedulerNames picks the profiles it follows.
func TestSchedulerTruthProfiles(t *testing.T) {
	sched := `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: strict
  plugins:
    multiPoint:
      enabled: [{name: NodeCRDResourceFit}, {name: LoadAware}]
- schedulerName: lenient
  plugins:
    multiPoint:
      enabled: [{name: NodeCRDResourceFit}]
  pluginConfig:
  - name: NodeCRDResourceFit
    args: {missingCRPolicy: Ignore}
`
	dir := writeFiles(t, map[string]string{
		"sched.yaml":   sched,
		"lenient.yaml": truthPolicyHead + "  - name: NodeCRDResourceFit\n    args: {schedulerNames: [lenient]}\n" + truthPlugins,
		"both.yaml":    truthPolicyHead + "  - name: NodeCRDResourceFit\n    args: {}\n" + truthPlugins,
	})
	p, _, err := LoadPolicy(filepath.Join(dir, "lenient.yaml"), filepath.Join(dir, "sched.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if a := args[*nodecrdresourcefit.NodeCRDResourceFitArgs](t, p); a.MissingCRPolicy != config.MissingCRPolicyIgnore {
		t.Errorf("schedulerNames [lenient]: missingCRPolicy = %s, want Ignore", a.MissingCRPolicy)
	}
	if a := args[*lownodeload.LowNodeLoadArgs](t, p); a.HighThresholds["cpu"] != 65 || a.HighThresholds["memory"] != 95 {
		t.Errorf("LoadAware without pluginConfig: highThresholds = %v, want LoadAware's defaults", a.HighThresholds)
	}
	_, _, err = LoadPolicy(filepath.Join(dir, "both.yaml"), filepath.Join(dir, "sched.yaml"))
	if err == nil || !strings.Contains(err.Error(), "disagree") || !strings.Contains(err.Error(), "profiles[1].pluginConfig[0].args.missingCRPolicy") {
		t.Errorf("profiles that disagree: %v", err)
	}
}
