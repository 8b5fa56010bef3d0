package scheme_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/apis/config"
	_ "github.com/accord-sched/accord/apis/config/scheme"
	"github.com/accord-sched/accord/pkg/constraints"
)

const header = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: accord-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: NodeCRDResourceFit
      - name: LoadAware
`

// load goes through kube-scheduler's own config-file loader: the same decoding, defaulting and
// conversion the scheduler binary runs.
func load(t *testing.T, yaml string) (*schedconfig.KubeSchedulerConfiguration, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return options.LoadConfigFromFile(klog.Background(), path)
}

func argsOf(t *testing.T, cfg *schedconfig.KubeSchedulerConfiguration, profile, plugin string) any {
	t.Helper()
	for _, p := range cfg.Profiles {
		if p.SchedulerName != profile {
			continue
		}
		for _, pc := range p.PluginConfig {
			if pc.Name == plugin {
				return pc.Args
			}
		}
	}
	t.Fatalf("no args for %s in profile %s", plugin, profile)
	return nil
}

func TestLoadArgs(t *testing.T) {
	tests := []struct {
		name        string
		pluginCfg   string
		wantFit     *config.NodeCRDResourceFitArgs
		wantLoad    *config.LoadAwareArgs
		wantErrText string
	}{
		{
			name:    "omitted args get every default",
			wantFit: &config.NodeCRDResourceFitArgs{MissingCRPolicy: config.MissingCRPolicyReject},
			wantLoad: &config.LoadAwareArgs{
				UsageThresholds: config.DefaultUsageThresholds(),
				UsageEstimateArgs: constraints.UsageEstimateArgs{
					ResourceWeights:                   config.DefaultResourceWeights(),
					NodeMetricExpirationSeconds:       ptr.To(config.DefaultNodeMetricExpirationSeconds),
					EstimatedScalingFactors:           config.DefaultEstimatedScalingFactors(),
					EstimatedSecondsAfterPodScheduled: ptr.To(config.DefaultEstimatedSecondsAfterPodScheduled),
				},
			},
		},
		{
			name: "explicit args are kept, unset fields defaulted",
			pluginCfg: `  pluginConfig:
  - name: NodeCRDResourceFit
    args:
      missingCRPolicy: Ignore
  - name: LoadAware
    args:
      usageThresholds:
        cpu: 80
      estimatedScalingFactors: {}
      estimatedSecondsAfterPodScheduled: 30
`,
			wantFit: &config.NodeCRDResourceFitArgs{MissingCRPolicy: config.MissingCRPolicyIgnore},
			wantLoad: &config.LoadAwareArgs{
				UsageThresholds: map[corev1.ResourceName]int64{"cpu": 80},
				UsageEstimateArgs: constraints.UsageEstimateArgs{
					ResourceWeights:                   config.DefaultResourceWeights(),
					NodeMetricExpirationSeconds:       ptr.To(config.DefaultNodeMetricExpirationSeconds),
					EstimatedScalingFactors:           map[corev1.ResourceName]int64{},
					EstimatedSecondsAfterPodScheduled: ptr.To[int64](30),
				},
			},
		},
		{
			name: "unknown field in NodeCRDResourceFit args",
			pluginCfg: `  pluginConfig:
  - name: NodeCRDResourceFit
    args:
      missingCRPolicyy: Ignore
`,
			wantErrText: `unknown field "missingCRPolicyy"`,
		},
		{
			name: "unknown field in LoadAware args",
			pluginCfg: `  pluginConfig:
  - name: LoadAware
    args:
      usageThreshold:
        cpu: 80
`,
			wantErrText: `unknown field "usageThreshold"`,
		},
		{
			name: "wrong type",
			pluginCfg: `  pluginConfig:
  - name: LoadAware
    args:
      nodeMetricExpirationSeconds: soon
`,
			wantErrText: "LoadAware",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := load(t, header+tt.pluginCfg)
			if tt.wantErrText != "" {
				if err == nil {
					t.Fatalf("loading succeeded, want an error containing %q", tt.wantErrText)
				}
				if !strings.Contains(err.Error(), tt.wantErrText) {
					t.Fatalf("error %q does not contain %q", err, tt.wantErrText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.wantFit, argsOf(t, cfg, "accord-scheduler", "NodeCRDResourceFit")); d != "" {
				t.Errorf("NodeCRDResourceFit args (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantLoad, argsOf(t, cfg, "accord-scheduler", "LoadAware")); d != "" {
				t.Errorf("LoadAware args (-want +got):\n%s", d)
			}
		})
	}
}

func TestStrictErrorNamesPluginAndField(t *testing.T) {
	_, err := load(t, header+`  pluginConfig:
  - name: NodeCRDResourceFit
    args:
      bogus: 1
`)
	if err == nil {
		t.Fatal("want a strict decoding error")
	}
	for _, want := range []string{"strict decoding error", "NodeCRDResourceFit", `unknown field "bogus"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}
