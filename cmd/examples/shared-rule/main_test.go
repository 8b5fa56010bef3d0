package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/accord-sched/accord/cmd/examples/shared-rule/maxlabeled"
	"github.com/accord-sched/accord/cmd/examples/shared-rule/maxlabeled/descheduler"
	"github.com/accord-sched/accord/cmd/examples/shared-rule/maxlabeled/scheduler"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
	"github.com/accord-sched/accord/pkg/descheduler/simulator"
)

// TestChecklistFiles: the whole rule, both sides and both binaries, is this folder; the checklist
// "A rule both binaries enforce" (pkg/descheduler/README.md) promises at most 8 files in at most 4
// packages.
func TestChecklistFiles(t *testing.T) {
	var files []string
	pkgs := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		files = append(files, path)
		pkgs[filepath.Dir(path)] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a rule both binaries enforce: %d files in %d packages: %v", len(files), len(pkgs), files)
	if len(files) > 8 || len(pkgs) > 4 {
		t.Errorf("the example rule takes %d files in %d packages; the checklist promises at most 8 in 4", len(files), len(pkgs))
	}
}

const schedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: accord-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: MaxLabeledPerNode
  pluginConfig:
  - name: MaxLabeledPerNode
    args:
      maxPerNode: 1
`

const policyHead = `apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: limited
  plugins:
    deschedule:
      enabled: [MaxLabeledPerNode]
`

// TestRuleEndToEnd: the scheduler configuration sets maxPerNode 1; the policy, loaded the way
// accord-descheduler loads it with --scheduler-config-file, follows it (and is refused when it
// says otherwise); the scheduler plugin, built from the scheduler's own decoding of the file,
// refuses a second labelled pod on a node, and the descheduler plugin evicts the younger of two.
func TestRuleEndToEnd(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	schedFile := write("scheduler.yaml", schedulerConfig)
	plugin := runner.WithPlugin(maxlabeled.Name, descheduler.New, &descheduler.MaxLabeledPerNodeArgs{})

	// The descheduler follows the scheduler's args.
	p, _, err := runner.LoadPolicy(write("policy.yaml", policyHead), schedFile, plugin)
	if err != nil {
		t.Fatal(err)
	}
	var args *descheduler.MaxLabeledPerNodeArgs
	for _, pc := range p.Profiles[0].PluginConfigs {
		if a, ok := pc.Args.(*descheduler.MaxLabeledPerNodeArgs); ok {
			args = a
		}
	}
	if args == nil || args.MaxPerNode != 1 || args.LabelKey != "example.accord.dev/limited" {
		t.Fatalf("policy args %+v, want the scheduler's maxPerNode 1 and the default labelKey", args)
	}
	_, _, err = runner.LoadPolicy(write("contradicting.yaml", policyHead+"  pluginConfig:\n  - name: MaxLabeledPerNode\n    args: {maxPerNode: 3}\n"), schedFile, plugin)
	if err == nil || !strings.Contains(err.Error(), "profiles[0].pluginConfig[0].args.maxPerNode") || !strings.Contains(err.Error(), "profiles[0].pluginConfig[0].args.maxPerNode: Invalid value: 3: contradicts") {
		t.Fatalf("a contradicting policy: %v, want an error naming both maxPerNode paths", err)
	}

	// The scheduler plugin, with the args kube-scheduler decodes from the same file.
	cfg, err := simulator.LoadConfig(schedFile)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := scheduler.New(ctx, cfg.Profiles[0].PluginConfig[0].Args, nil)
	if err != nil {
		t.Fatal(err)
	}
	node := fake.Node("n1", nil, 4, 8)
	older, younger := labelled("older", time.Hour), labelled("younger", time.Minute)
	ni := schedframework.NewNodeInfo()
	ni.SetNode(node)
	if st := sp.(fwk.FilterPlugin).Filter(ctx, schedframework.NewCycleState(), older, ni); !st.IsSuccess() {
		t.Fatalf("the first labelled pod on an empty node: %v", st)
	}
	ni.AddPod(older)
	if st := sp.(fwk.FilterPlugin).Filter(ctx, schedframework.NewCycleState(), younger, ni); st.Code() != fwk.Unschedulable {
		t.Fatalf("a second labelled pod: %v, want Unschedulable", st)
	}

	// The descheduler plugin, with the followed args, on a node holding both.
	cluster := fake.NewCluster(node, older, younger)
	h, err := fake.NewHandle(cluster)
	if err != nil {
		t.Fatal(err)
	}
	ev := &recordingEvictor{}
	h.Evict = ev
	cluster.Start(t)
	dp, err := descheduler.New(ctx, args, h)
	if err != nil {
		t.Fatal(err)
	}
	if st := dp.(framework.DeschedulePlugin).Deschedule(ctx, []*corev1.Node{node}); st != nil && st.Err != nil {
		t.Fatal(st.Err)
	}
	if len(ev.evicted) != 1 || ev.evicted[0] != "younger" {
		t.Fatalf("evicted %v, want [younger]", ev.evicted)
	}
}

func labelled(name string, age time.Duration) *corev1.Pod {
	p := fake.Pod("ns", name, "n1", 100)
	p.Labels = map[string]string{"example.accord.dev/limited": "true"}
	p.CreationTimestamp = metav1.NewTime(time.Now().Add(-age))
	return p
}

// recordingEvictor lets every pod go and records the evictions.
type recordingEvictor struct{ evicted []string }

func (e *recordingEvictor) Filter(*corev1.Pod) bool            { return true }
func (e *recordingEvictor) PreEvictionFilter(*corev1.Pod) bool { return true }
func (e *recordingEvictor) CheckLimits(*corev1.Pod) error      { return nil }
func (*recordingEvictor) ExplainPreEviction(*corev1.Pod) framework.PreEvictionExplanation {
	return framework.PreEvictionExplanation{}
}
func (e *recordingEvictor) Evict(_ context.Context, pod *corev1.Pod, _ framework.EvictOptions) error {
	e.evicted = append(e.evicted, pod.Name)
	return nil
}
