package descheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	"github.com/accord-sched/accord/pkg/descheduler/explain"
	"github.com/accord-sched/accord/test/harness"
)

// simulatedRule is one run of a descheduler binary, as its documentation tells a user to run it
// (--kubeconfig, --policy-config-file, --scheduler-config-file naming the scheduler's
// configuration; SchedulerSimulation left to its default, on), on a namespace's two nodes: a pod
// on node a that breaks the rule, and node b with no room under it. The binary must evict nothing
// (explain: blocked by SchedulerSimulation) until free makes room on b, and then evict the pod with
// b as the predicted node (explain and the pod's Descheduled Event).
type simulatedRule struct {
	// bin and subcommand ("" or "descheduler") are the binary and the descheduler command in it.
	bin, subcommand string
	// plugin is the rule's descheduler plugin, which nominates the pod.
	plugin string
	// schedulerPlugins is the YAML of the scheduler profile's plugins and pluginConfig.
	schedulerPlugins string
	// setUp creates the pods; it returns the pod the rule nominates (on node a).
	setUp func(t *testing.T, ns, schedulerName, a, b string) *corev1.Pod
	// free makes room on node b under the rule.
	free func(t *testing.T, b string)
}

func (r simulatedRule) run(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns := env.CreateNamespace(t, "simrule")
	a, b := ns+"-a", ns+"-b"
	for _, n := range []string{a, b} {
		if _, err := env.Nodes.CreateNode(ctx, harness.NodeSpec{Name: n, Labels: map[string]string{"test.accord.dev/ns": ns}}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.CoreV1().Nodes().Delete(context.Background(), n, metav1.DeleteOptions{}) })
	}
	if err := env.Nodes.WaitForNodesReady(ctx, a, b); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	schedulerName := ns + "-scheduler"
	schedCfg := write("scheduler.yaml", fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
profiles:
- schedulerName: %s
%s`, schedulerName, r.schedulerPlugins))
	policy := write("policy.yaml", fmt.Sprintf(`apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: "test.accord.dev/ns=%s"
profiles:
- name: rule
  pluginConfig:
  - name: DefaultEvictor
    args: {podProtections: {defaultDisabled: [BarePods]}}
  plugins:
    deschedule: {enabled: [%s]}
`, ns, r.plugin))
	pod := r.setUp(t, ns, schedulerName, a, b)

	command := func(args ...string) []string {
		args = append(args, "--kubeconfig", kubeconfig, "--policy-config-file", policy, "--scheduler-config-file", schedCfg)
		if r.subcommand != "" {
			args = append([]string{r.subcommand}, args...)
		}
		return args
	}
	explainRow := func() explain.Row {
		t.Helper()
		out, err := exec(t, r.bin, command("explain", "-o", "json")...).Output()
		if err != nil {
			t.Fatalf("explain: %v\n%s", err, errOutput(err))
		}
		var rows []explain.Row
		if err := json.Unmarshal(out, &rows); err != nil {
			t.Fatalf("explain's output: %v\n%s", err, out)
		}
		for _, row := range rows {
			if row.Namespace == ns && row.Pod == pod.Name && row.Plugin == r.plugin {
				return row
			}
		}
		t.Fatalf("explain has no row for %s by %s: %+v", pod.Name, r.plugin, rows)
		return explain.Row{}
	}
	cycle := func() string {
		t.Helper()
		out, err := exec(t, r.bin, command("--descheduling-interval", "0", "--secure-port", "0", "-v", "2")...).CombinedOutput()
		if err != nil {
			t.Fatalf("descheduler: %v\n%s", err, out)
		}
		return string(out)
	}

	// No room anywhere under the rule: the simulation blocks the eviction.
	if row := explainRow(); row.Verdict != "blocked" || row.BlockedBy != "SchedulerSimulation" {
		t.Fatalf("with no room on %s, explain says %+v, want blocked by SchedulerSimulation", b, row)
	}
	if out := cycle(); len(present(t, []*corev1.Pod{pod})) != 1 {
		t.Fatalf("the pod was evicted while no node had room for it:\n%s", out)
	}

	// Room on b: the pod is evicted, its replacement predicted on b.
	r.free(t, b)
	if row := explainRow(); row.Verdict != "evict" || row.PredictedNode != b {
		t.Fatalf("with room on %s, explain says %+v, want evict with predicted node %s", b, row, b)
	}
	// Periodic this time (the first cycle runs at start): a one-cycle run exits as soon as its
	// cycle ends, before its Events are posted.
	// StartBinary logs the binary's output if the test fails.
	harness.StartBinary(t, ctx, r.bin, command("--descheduling-interval", "10m", "--secure-port", "0", "-v", "2")...)
	err := harness.WaitFor(ctx, 90*time.Second, func(context.Context) (bool, error) {
		return len(present(t, []*corev1.Pod{pod})) == 0, nil
	})
	if err != nil {
		t.Fatalf("the pod was not evicted once %s had room: %v", b, err)
	}
	var note string
	err = harness.WaitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		evs, err := env.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, ev := range evs.Items {
			if ev.Reason == evictions.ReasonDescheduled && ev.Regarding.UID == pod.UID {
				note = ev.Note
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s Event for %s: %v", evictions.ReasonDescheduled, pod.Name, err)
	}
	// b appears in the note only as the replacement's predicted node.
	if !strings.Contains(note, r.plugin) || !strings.Contains(note, b) {
		t.Errorf("Event %q: want the plugin %s and the predicted node %s", note, r.plugin, b)
	}
}

// errOutput is the standard error of a failed command run with Output.
func errOutput(err error) string {
	if ee, ok := err.(interface{ Stderr() []byte }); ok {
		return string(ee.Stderr())
	}
	return ""
}

// simPod is a bare pod of the test's scheduler profile requesting 100m of CPU, bound to node and
// kept on the namespace's nodes by its nodeSelector.
func simPod(t *testing.T, ns, name, schedulerName, node string, labels map[string]string) *corev1.Pod {
	t.Helper()
	p, err := env.Client.CoreV1().Pods(ns).Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PodSpec{SchedulerName: schedulerName, NodeName: node, TerminationGracePeriodSeconds: ptr.To[int64](0),
			NodeSelector: map[string]string{"test.accord.dev/ns": ns},
			Containers: []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSharedRuleExampleSimulated runs cmd/examples/shared-rule's descheduler exactly as its doc
// comment says (the scheduler's configuration with MaxLabeledPerNode, maxPerNode 1): its
// SchedulerSimulation builds the scheduler's profile with the rule's own Filter plugin, so the
// younger of two labelled pods on a node is not evicted while the other node holds a labelled pod
// too, and is evicted, predicted on that node, once it no longer does.
func TestSharedRuleExampleSimulated(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	const label = "example.accord.dev/limited"
	var blocker *corev1.Pod
	simulatedRule{
		bin:        harness.BuildBinary(t, "github.com/accord-sched/accord/cmd/examples/shared-rule"),
		subcommand: "descheduler",
		plugin:     "MaxLabeledPerNode",
		schedulerPlugins: `  plugins:
    multiPoint: {enabled: [{name: MaxLabeledPerNode}]}
  pluginConfig:
  - name: MaxLabeledPerNode
    args: {maxPerNode: 1}
`,
		setUp: func(t *testing.T, ns, schedulerName, a, b string) *corev1.Pod {
			labels := map[string]string{label: "true"}
			simPod(t, ns, "older", schedulerName, a, labels)
			// The plugin evicts the youngest first: creation timestamps have a second's resolution.
			time.Sleep(1100 * time.Millisecond)
			younger := simPod(t, ns, "younger", schedulerName, a, labels)
			blocker = simPod(t, ns, "blocker", schedulerName, b, labels)
			return younger
		},
		free: func(t *testing.T, b string) {
			deletePod(t, blocker)
		},
	}.run(t)
}

// TestInTreeRuleSimulated is TestSharedRuleExampleSimulated for a rule of accord-scheduler's own
// plugin list (NodeCRDResourceFit) with accord-descheduler: a pod on a node whose
// ClusterScopedResource stops offering CPU is not evicted while the other node offers none either,
// and is evicted, predicted on that node, once it does.
func TestInTreeRuleSimulated(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	setCPU := func(t *testing.T, node string, offered bool) {
		t.Helper()
		patch := fmt.Sprintf(`{"spec":{"resourcesFilter":{"cpu":%t}}}`, offered)
		if _, err := env.Accord.SchedulingV1alpha1().ClusterScopedResources().Patch(context.Background(), node, types.MergePatchType,
			[]byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	simulatedRule{
		bin:    harness.BuildBinary(t, "github.com/accord-sched/accord/cmd/descheduler"),
		plugin: "NodeCRDResourceFit",
		schedulerPlugins: `  plugins:
    multiPoint: {enabled: [{name: NodeCRDResourceFit}]}
  pluginConfig:
  - name: NodeCRDResourceFit
    args: {missingCRPolicy: Reject}
`,
		setUp: func(t *testing.T, ns, schedulerName, a, b string) *corev1.Pod {
			for _, n := range []string{a, b} {
				cr := &schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: n},
					Spec: schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: map[corev1.ResourceName]bool{corev1.ResourceCPU: false}}}
				if _, err := env.Accord.SchedulingV1alpha1().ClusterScopedResources().Create(context.Background(), cr, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					_ = env.Accord.SchedulingV1alpha1().ClusterScopedResources().Delete(context.Background(), n, metav1.DeleteOptions{})
				})
			}
			return simPod(t, ns, "p", schedulerName, a, nil)
		},
		free: func(t *testing.T, b string) { setCPU(t, b, true) },
	}.run(t)
}

// deletePod deletes p and waits until it is gone.
func deletePod(t *testing.T, p *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	err := harness.WaitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		_, err := env.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		t.Fatalf("pod %s not gone: %v", p.Name, err)
	}
}
