package descheduler

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/pkg/descheduler/app"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/decision"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
	"github.com/accord-sched/accord/test/harness"
)

var env *harness.Env

func TestMain(m *testing.M) { harness.Main(m, &env, harness.Options{}) }

// fixture is one test's namespace, nodes and pods.
type fixture struct {
	ns      string
	nodes   []string
	victims []*corev1.Pod
	others  []*corev1.Pod
	plugin  *labelEvictor
	metrics *metrics.Metrics
}

func newFixture(t *testing.T, nodes, victimsPerNode, othersPerNode int) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{ns: env.CreateNamespace(t, "desched"), metrics: metrics.New()}
	// Profiles select the test's own nodes by label, so tests never see each other's nodes.
	for i := range nodes {
		name := fmt.Sprintf("%s-n%d", f.ns, i)
		if _, err := env.Nodes.CreateNode(ctx, harness.NodeSpec{Name: name, Labels: map[string]string{"test.accord.dev/ns": f.ns}}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		f.nodes = append(f.nodes, name)
	}
	if err := env.Nodes.WaitForNodesReady(ctx, f.nodes...); err != nil {
		t.Fatal(err)
	}
	for i, node := range f.nodes {
		for j := range victimsPerNode + othersPerNode {
			victim := j < victimsPerNode
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d-%d", i, j), Namespace: f.ns,
					Labels: map[string]string{VictimLabel: fmt.Sprint(victim), "app": "web"}},
				Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0), NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
			}
			created, err := env.Client.CoreV1().Pods(f.ns).Create(ctx, pod, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if victim {
				f.victims = append(f.victims, created)
			} else {
				f.others = append(f.others, created)
			}
		}
	}
	return f
}

// policy writes a policy whose profile runs LabelEvictor on the fixture's nodes. Bare pods are
// allowed by the DefaultEvictor so the test pods need no owner. These tests are about the eviction
// mechanics (limits, PDBs, dry-run, Events), not placement: the scheduler simulation, on by
// default, would rightly block evicting identical pods from identical nodes, so it is disabled.
func (f *fixture) policy(t *testing.T, extra string, plugins string) string {
	t.Helper()
	if plugins == "" {
		plugins = "deschedule: {enabled: [LabelEvictor]}"
	}
	doc := fmt.Sprintf(`apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: "test.accord.dev/ns=%s"
%s
profiles:
- name: test
  pluginConfig:
  - name: DefaultEvictor
    args:
      podProtections: {defaultDisabled: [BarePods]}
  plugins:
    %s
    preEvictionFilter: {disabled: [SchedulerSimulation]}
`, f.ns, extra, plugins)
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func (f *fixture) config(t *testing.T, policyPath string) runner.Config {
	f.plugin = &labelEvictor{results: map[string]error{}}
	return runner.Config{
		RestConfig: env.Config, PolicyConfigFile: policyPath, Metrics: f.metrics,
		Plugins: []app.Option{
			app.WithPlugin("LabelEvictor", func(_ context.Context, _ runtime.Object, h framework.Handle) (framework.Plugin, error) {
				f.plugin.h = h
				return f.plugin, nil
			}),
			app.WithPlugin("VictimController", newVictimController),
		},
	}
}

// present returns which of pods still exist with the same UID and are not terminating.
func present(t *testing.T, pods []*corev1.Pod) []string {
	t.Helper()
	var out []string
	for _, p := range pods {
		got, err := env.Client.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if got.UID == p.UID && got.DeletionTimestamp == nil {
			out = append(out, p.Name)
		}
	}
	return out
}

func counter(t *testing.T, m *metrics.Metrics, result, plugin, ns, node string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(m.PodsEvicted.WithLabelValues(result, plugin, "test", ns, node))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestEvictsExactlyTheExpectedPods(t *testing.T) {
	f := newFixture(t, 2, 2, 2)
	cfg := f.config(t, f.policy(t, "", ""))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := runner.Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if got := present(t, f.victims); len(got) != 0 {
		t.Errorf("victims still running: %v", got)
	}
	if got := present(t, f.others); len(got) != len(f.others) {
		t.Errorf("only %v of the other pods remain", got)
	}
	for name, err := range f.plugin.results {
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if len(f.plugin.results) != len(f.victims) {
		t.Errorf("plugin evicted %d pods, want %d", len(f.plugin.results), len(f.victims))
	}
	for _, node := range f.nodes {
		if v := counter(t, f.metrics, metrics.ResultSuccess, "LabelEvictor", f.ns, node); v != 2 {
			t.Errorf("success metric on %s = %v, want 2", node, v)
		}
	}
	// Every evicted pod has a Descheduled Event naming the plugin, from accord-descheduler, with its
	// decision (the console's source) about that pod.
	var bad string
	err := harness.WaitFor(ctx, 10*time.Second, func(ctx context.Context) (bool, error) {
		evs, err := env.Client.EventsV1().Events(f.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		seen := map[string]bool{}
		for _, e := range evs.Items {
			if e.Reason != "Descheduled" || !strings.Contains(e.Note, "LabelEvictor") {
				continue
			}
			d, err := decision.Unmarshal(e.Annotations[decision.Annotation])
			if err != nil || e.ReportingController != decision.ReportingController || d.Verdict != decision.VerdictEvicted ||
				d.Plugin != "LabelEvictor" || d.Pod.Name != e.Regarding.Name || d.Pod.UID != string(e.Regarding.UID) {
				bad = fmt.Sprintf("Event %s (reportingController %q): decision %+v, %v", e.Name, e.ReportingController, d, err)
				continue
			}
			seen[e.Regarding.Name] = true
		}
		return len(seen) == len(f.victims), nil
	})
	if err != nil {
		t.Errorf("Descheduled events: %v (last refused: %s)", err, bad)
	}
}

func TestPDBBlocksEviction(t *testing.T) {
	f := newFixture(t, 1, 1, 1)
	_, err := env.Client.PolicyV1().PodDisruptionBudgets(f.ns).Create(context.Background(), &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "no-disruption"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Watch the victim to prove it is never deleted.
	w, err := env.Client.CoreV1().Pods(f.ns).Watch(context.Background(), metav1.ListOptions{FieldSelector: "metadata.name=" + f.victims[0].Name, ResourceVersion: f.victims[0].ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	cfg := f.config(t, f.policy(t, "", ""))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := runner.Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if got := present(t, f.victims); len(got) != 1 {
		t.Fatalf("the PDB did not protect the victim")
	}
	if err := f.plugin.results[f.ns+"/"+f.victims[0].Name]; !apierrors.IsTooManyRequests(err) {
		t.Errorf("plugin saw %v, want a 429", err)
	}
	if v := counter(t, f.metrics, metrics.ResultError, "LabelEvictor", f.ns, f.nodes[0]); v != 1 {
		t.Errorf("error metric = %v, want 1", v)
	}
	if v := counter(t, f.metrics, metrics.ResultSuccess, "LabelEvictor", f.ns, f.nodes[0]); v != 0 {
		t.Errorf("success metric = %v, want 0", v)
	}
	timeout := time.After(500 * time.Millisecond)
	for {
		select {
		case ev := <-w.ResultChan():
			if ev.Type == watch.Deleted {
				t.Fatal("victim deleted despite the PDB")
			}
			if p, ok := ev.Object.(*corev1.Pod); ok && p.DeletionTimestamp != nil {
				t.Fatal("victim marked for deletion despite the PDB")
			}
			continue
		case <-timeout:
		}
		break
	}
}

func TestLimitsStopAtN(t *testing.T) {
	f := newFixture(t, 3, 3, 0)
	cfg := f.config(t, f.policy(t, "maxNoOfPodsToEvictTotal: 4\nmaxNoOfPodsToEvictPerNode: 2", ""))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := runner.Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if got := len(f.victims) - len(present(t, f.victims)); got != 4 {
		t.Errorf("evicted %d pods, want the total limit 4", got)
	}
	var limited int
	for _, err := range f.plugin.results {
		if framework.IsNodeLimit(err) || framework.IsTotalLimit(err) {
			limited++
		}
	}
	if limited == 0 {
		t.Error("the plugin never saw a limit error")
	}
}

func TestDryRunLeavesEveryPod(t *testing.T) {
	f := newFixture(t, 2, 2, 1)
	cfg := f.config(t, f.policy(t, "", ""))
	cfg.DryRun = true
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := runner.Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if got := present(t, append(append([]*corev1.Pod{}, f.victims...), f.others...)); len(got) != len(f.victims)+len(f.others) {
		t.Errorf("dry run left only %v", got)
	}
	var dry float64
	for _, node := range f.nodes {
		dry += counter(t, f.metrics, metrics.ResultDryRun, "LabelEvictor", f.ns, node)
	}
	if dry != float64(len(f.victims)) {
		t.Errorf("dry-run metric = %v, want %d", dry, len(f.victims))
	}
	evs, err := env.Client.EventsV1().Events(f.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Reason == "Descheduled" {
			t.Errorf("dry run recorded an event: %v", e.Note)
		}
	}
}

func TestEventTriggeredControllerEvictsWithinOneSecond(t *testing.T) {
	f := newFixture(t, 1, 0, 2)
	cfg := f.config(t, f.policy(t, "", "deschedule: {enabled: [VictimController]}"))
	cfg.EventDriven = true
	ready := make(chan struct{})
	cfg.OnReady = func() { close(ready) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runner.Run(ctx, cfg) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("descheduler stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("descheduler not ready")
	}
	target := f.others[0]
	w, err := env.Client.CoreV1().Pods(f.ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + target.Name})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, VictimLabel)
	start := time.Now()
	if _, err := env.Client.CoreV1().Pods(f.ns).Patch(ctx, target.Name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(5 * time.Second)
	for {
		select {
		case ev := <-w.ResultChan():
			p, _ := ev.Object.(*corev1.Pod)
			if ev.Type == watch.Deleted || (p != nil && p.DeletionTimestamp != nil) {
				if d := time.Since(start); d > time.Second {
					t.Fatalf("evicted %v after the event, want within 1s", d)
				} else {
					t.Logf("evicted %v after the label made it a violator", d)
				}
				if got := present(t, f.others[1:]); len(got) != 1 {
					t.Errorf("the other pod was evicted too")
				}
				return
			}
		case <-deadline:
			t.Fatal("pod not evicted within 5s")
		}
	}
}

// TestOutOfTreeExampleRuns builds the out-of-tree example and runs one cycle of it against the
// control plane, with its EvictMarked plugin evicting the test's labelled pods.
func TestOutOfTreeExampleRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	f := newFixture(t, 1, 2, 1)
	dir := t.TempDir()
	bin := filepath.Join(dir, "out-of-tree")
	build := exec(t, "go", "build", "-o", bin, "github.com/accord-sched/accord/cmd/examples/out-of-tree")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(dir, "policy.yaml")
	doc := fmt.Sprintf(`apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: "test.accord.dev/ns=%s"
maxNoOfPodsToEvictTotal: 1
profiles:
- name: marked
  pluginConfig:
  - name: EvictMarked
    args: {labelKey: %s, namespaces: [%s]}
  - name: DefaultEvictor
    args: {podProtections: {defaultDisabled: [BarePods]}}
  plugins:
    deschedule: {enabled: [EvictMarked]}
    # One node: the scheduler simulation would rightly block every eviction (nowhere else to go).
    preEvictionFilter: {disabled: [SchedulerSimulation]}
`, f.ns, VictimLabel, f.ns)
	if err := os.WriteFile(policy, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	run := exec(t, bin, "--kubeconfig", kubeconfig, "--policy-config-file", policy, "--descheduling-interval", "0", "--secure-port", "0", "-v", "2")
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("out-of-tree descheduler: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "Evicted pod") || !strings.Contains(string(out), "EvictMarked") {
		t.Errorf("no eviction by EvictMarked in the output:\n%s", out)
	}
	if got := present(t, f.victims); len(got) != 1 {
		t.Errorf("want exactly one marked pod evicted (total limit 1), %v remain", got)
	}
	if got := present(t, f.others); len(got) != len(f.others) {
		t.Errorf("unmarked pods were evicted: %v remain of %d", got, len(f.others))
	}
}
