package noflap

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/pkg/descheduler/explain"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
	"github.com/accord-sched/accord/test/harness"
)

// TestNoFlap runs every scenario with the scheduler simulation (the default) and with it disabled.
func TestNoFlap(t *testing.T) {
	schedCfg := startScheduler(t)
	for _, sc := range []struct {
		name string
		run  func(t *testing.T, schedCfg string, simulation bool) result
		// check asserts the outcome of a run with the simulation; loops asserts that the run
		// without it loops.
		check, loops func(t *testing.T, r result)
	}{
		{"RemoveDuplicates more replicas than nodes", removeDuplicates, checkRemoveDuplicates, checkLoops},
		{"LowNodeUtilization only the current node fits", lowNodeUtilization, checkOnlyCurrentNode, checkLoops},
	} {
		t.Run(sc.name, func(t *testing.T) {
			t.Run("with SchedulerSimulation", func(t *testing.T) {
				r := sc.run(t, schedCfg, true)
				t.Logf("with the simulation: %s", r)
				sc.check(t, r)
				checkNoRepeats(t, r)
				checkExplain(t, r, schedCfg)
			})
			t.Run("without SchedulerSimulation", func(t *testing.T) {
				r := sc.run(t, schedCfg, false)
				t.Logf("without the simulation: %s", r)
				sc.loops(t, r)
			})
		})
	}
}

// result is what one descheduler run did.
type result struct {
	ns         string
	policy     string // the policy file
	source     string // the node the imbalance is on
	target     string // the node the pods should go to ("" when none can)
	cycles     float64
	duration   time.Duration
	evictions  map[string]float64 // successful evictions by node
	landings   map[string]float64 // replacements by result (predicted, elsewhere)
	flaps      float64
	blocked    map[string]float64 // blocked decisions by reason
	finalPods  map[string]int     // the workload's running pods by node at the end
	eventNotes []string           // the Descheduled Events' notes
}

func (r result) total() float64 {
	var n float64
	for _, v := range r.evictions {
		n += v
	}
	return n
}

func (r result) String() string {
	return fmt.Sprintf("%.0f cycles in %s, evictions by node %v, landings %v, flaps %.0f, blocked %v, final pods by node %v",
		r.cycles, r.duration.Round(10*time.Millisecond), r.evictions, r.landings, r.flaps, r.blocked, r.finalPods)
}

// With the simulation, RemoveDuplicates evicts once: the replacement goes to the node the
// scheduler prefers, which then has no room for another; the duplicates left on the source node
// stay, since the scheduler would put them back.
func checkRemoveDuplicates(t *testing.T, r result) {
	t.Helper()
	if r.total() != 1 || r.evictions[r.source] != 1 {
		t.Errorf("want exactly one eviction, from %s; got %v", r.source, r.evictions)
	}
	if r.landings["predicted"] != r.total() || r.landings["elsewhere"] != 0 {
		t.Errorf("every replacement must land on its predicted node: landings %v for %.0f evictions", r.landings, r.total())
	}
	if r.finalPods[r.target] != 1 {
		t.Errorf("the replacement is not on %s: pods by node %v", r.target, r.finalPods)
	}
	if r.blocked["same_node"] == 0 {
		t.Errorf("the remaining duplicates should be blocked as landing back on %s: %v", r.source, r.blocked)
	}
	if len(r.eventNotes) != 1 || !strings.Contains(r.eventNotes[0], "replacement predicted on "+r.target) {
		t.Errorf("the eviction Event does not carry the prediction: %q", r.eventNotes)
	}
}

// With the simulation, nothing is evicted when the only node that can take the pods is theirs.
func checkOnlyCurrentNode(t *testing.T, r result) {
	t.Helper()
	if r.total() != 0 {
		t.Errorf("want no eviction, got %v", r.evictions)
	}
	if r.blocked["same_node"] == 0 {
		t.Errorf("the overloaded node's pods should be blocked as landing back: %v", r.blocked)
	}
}

// checkExplain runs `accord-descheduler explain` on the settled scenario: the imbalance the
// plugin still sees is explained, row by row, as blocked by SchedulerSimulation because the
// scheduler would place the replacement back on the node it is on.
func checkExplain(t *testing.T, r result, schedCfg string) {
	t.Helper()
	rows, err := explain.Run(context.Background(), runner.Config{RestConfig: env.Config, PolicyConfigFile: r.policy, SchedulerConfigFile: schedCfg})
	if err != nil {
		t.Fatal(err)
	}
	var table, js bytes.Buffer
	if err := explain.Write(&table, rows, "table"); err != nil {
		t.Fatal(err)
	}
	if err := explain.Write(&js, rows, "json"); err != nil {
		t.Fatal(err)
	}
	t.Logf("explain:\n%s", table.String())
	var decoded []explain.Row
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil || len(decoded) != len(rows) {
		t.Errorf("explain -o json: %v, %d rows for %d", err, len(decoded), len(rows))
	}
	if len(rows) == 0 {
		t.Fatal("explain: no candidate")
	}
	for _, row := range rows {
		if row.Verdict != explain.VerdictBlocked || row.BlockedBy != "SchedulerSimulation" || row.SimulationReason != "same_node" ||
			row.PredictedNode != r.source || row.Node != r.source || row.Score == nil || row.Plugin == "" || row.Reason == "" {
			t.Errorf("explain row %+v: want blocked by SchedulerSimulation (same_node, predicted %s) with the plugin and its reason", row, r.source)
		}
	}
}

func checkNoRepeats(t *testing.T, r result) {
	t.Helper()
	// Each scenario has one evictable owner, so evictions per node are evictions per owner and node.
	for node, n := range r.evictions {
		if n > 1 {
			t.Errorf("owner evicted %.0f times from %s", n, node)
		}
	}
	if r.flaps != 0 {
		t.Errorf("%.0f replacements landed back on the node their predecessor was evicted from", r.flaps)
	}
}

// Without the simulation the same owner is evicted from the same node again and again.
func checkLoops(t *testing.T, r result) {
	t.Helper()
	if r.evictions[r.source] < 3 {
		t.Errorf("without the simulation the descheduler should loop on %s; evictions %v", r.source, r.evictions)
	}
}

// removeDuplicates: a Deployment of four pods (1 CPU each) that prefer node b runs on node a
// while b does not exist yet; then b joins with room for one pod. RemoveDuplicates wants at most
// two per node. Without the simulation it evicts two pods of a, one replacement lands on b and the
// other back on a; every later cycle evicts one of a's three pods, whose replacement lands back on a
// (b is full) — forever.
func removeDuplicates(t *testing.T, schedCfg string, simulation bool) result {
	ctx := context.Background()
	ns := env.CreateNamespace(t, "noflap-dup")
	a, b := ns+"-a", ns+"-b"
	createNode(t, ns, a, "8", "16Gi")
	dep := deployment(ns, "web", 4, "1", func(s *corev1.PodSpec) {
		s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 100,
				Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{b}}}}}},
		}}
	})
	create(t, dep)
	waitRunning(t, ns, "web", map[string]int{a: 4})
	createNode(t, ns, b, "1500m", "16Gi")
	policy := fmt.Sprintf(`apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: "%s=%s"
maxNoOfPodsToEvictPerNode: 10
maxNoOfPodsToEvictTotal: 10
profiles:
- name: noflap
  plugins:
    balance: {enabled: [RemoveDuplicates]}
%s`, nsLabel, ns, disabled(simulation))
	r := runDescheduler(t, ctx, ns, schedCfg, policy)
	r.source, r.target = a, b
	r.finalPods = runningByNode(t, ns, "web")
	return r
}

// lowNodeUtilization: node a runs three 1-CPU pods of a Deployment (75% of its CPU, over the 60%
// target); node b is nearly idle (under 30%) but runs a guard pod the Deployment's pods must not
// share a node with (required pod anti-affinity), which LowNodeUtilization does not check. Without
// the simulation it evicts from a every cycle and the replacement lands back on a, the only node
// that can take it.
func lowNodeUtilization(t *testing.T, schedCfg string, simulation bool) result {
	ctx := context.Background()
	ns := env.CreateNamespace(t, "noflap-lnu")
	a, b := ns+"-a", ns+"-b"
	createNode(t, ns, a, "4", "16Gi")
	createNode(t, ns, b, "4", "16Gi")
	guard := deployment(ns, "guard", 1, "100m", func(s *corev1.PodSpec) {
		s.NodeSelector[corev1.LabelHostname] = b
	})
	create(t, guard)
	waitRunning(t, ns, "guard", map[string]int{b: 1})
	busy := deployment(ns, "busy", 3, "1", func(s *corev1.PodSpec) {
		s.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guard"}},
				TopologyKey:   corev1.LabelHostname,
			}},
		}}
	})
	create(t, busy)
	waitRunning(t, ns, "busy", map[string]int{a: 3})
	policy := fmt.Sprintf(`apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: "%s=%s"
maxNoOfPodsToEvictPerNode: 10
maxNoOfPodsToEvictTotal: 10
profiles:
- name: noflap
  pluginConfig:
  - name: LowNodeUtilization
    args:
      thresholds: {cpu: 30, memory: 30, pods: 30}
      targetThresholds: {cpu: 60, memory: 60, pods: 60}
  plugins:
    balance: {enabled: [LowNodeUtilization]}
%s`, nsLabel, ns, upstreamStyle(simulation))
	r := runDescheduler(t, ctx, ns, schedCfg, policy)
	r.source = a
	r.finalPods = runningByNode(t, ns, "busy")
	return r
}

func disabled(simulation bool) string {
	if simulation {
		return ""
	}
	return "    preEvictionFilter: {disabled: [SchedulerSimulation]}\n"
}

// upstreamStyle lists the evictor plugins the way upstream policies do (DefaultEvictor at filter and
// preEvictionFilter, SchedulerSimulation not named): the simulation must stay on all the same.
func upstreamStyle(simulation bool) string {
	if simulation {
		return "    filter: {enabled: [DefaultEvictor]}\n    preEvictionFilter: {enabled: [DefaultEvictor]}\n"
	}
	return disabled(false)
}

// runDescheduler runs accord-descheduler in-process with policy for at least minCycles cycles,
// waits for the last replacements to land, stops it and reports what it did.
func runDescheduler(t *testing.T, ctx context.Context, ns, schedCfg, policy string) result {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	start := time.Now()
	wg.Go(func() {
		err := runner.Run(ctx, runner.Config{RestConfig: env.Config, PolicyConfigFile: path, SchedulerConfigFile: schedCfg,
			DeschedulingInterval: interval, Metrics: m})
		if err != nil {
			t.Errorf("accord-descheduler: %v", err)
		}
	})
	err := harness.WaitFor(ctx, 60*time.Second, func(context.Context) (bool, error) {
		return sum(t, m, "accord_descheduler_cycles_total", nil) >= minCycles, nil
	})
	if err != nil {
		cancel()
		wg.Wait()
		t.Fatalf("descheduler cycles: %v", err)
	}
	// Let the last cycle's replacements be created, scheduled and started; then stop.
	time.Sleep(2 * time.Second)
	cancel()
	wg.Wait()
	r := result{ns: ns, policy: path, duration: time.Since(start), cycles: sum(t, m, "accord_descheduler_cycles_total", nil),
		evictions: byLabel(t, m, "accord_descheduler_pods_evicted_total", "node", map[string]string{"result": "success"}),
		landings:  byLabel(t, m, "accord_descheduler_simulation_landings_total", "result", nil),
		flaps:     sum(t, m, "accord_descheduler_flaps_total", nil),
		blocked:   byLabel(t, m, "accord_descheduler_simulation_decisions_total", "reason", map[string]string{"verdict": "blocked"}),
	}
	// Events are written asynchronously; wait for one per eviction.
	_ = harness.WaitFor(context.Background(), 5*time.Second, func(ctx context.Context) (bool, error) {
		list, err := env.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		r.eventNotes = r.eventNotes[:0]
		for _, e := range list.Items {
			if e.Reason == "Descheduled" {
				r.eventNotes = append(r.eventNotes, e.Note)
			}
		}
		return float64(len(r.eventNotes)) >= r.total(), nil
	})
	return r
}

// sum adds the values of a counter's series whose labels include want.
func sum(t *testing.T, m *metrics.Metrics, name string, want map[string]string) float64 {
	var n float64
	for _, v := range byLabel(t, m, name, "", want) {
		n += v
	}
	return n
}

// byLabel sums a counter's series whose labels include want, by the value of label.
func byLabel(t *testing.T, m *metrics.Metrics, name, label string, want map[string]string) map[string]float64 {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, s := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range s.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue series
				}
			}
			out[have[label]] += s.GetCounter().GetValue()
		}
	}
	return out
}

func createNode(t *testing.T, ns, name, cpu, memory string) {
	t.Helper()
	ctx := context.Background()
	_, err := env.Nodes.CreateNode(ctx, harness.NodeSpec{Name: name, Labels: map[string]string{nsLabel: ns},
		Allocatable: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(cpu),
			corev1.ResourceMemory: resource.MustParse(memory),
			corev1.ResourcePods:   resource.MustParse("110"),
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	if err := env.Nodes.WaitForNodesReady(ctx, name); err != nil {
		t.Fatal(err)
	}
}

// deployment is a Deployment of replicas pods requesting cpu, scheduled by accord-scheduler on
// the namespace's nodes.
func deployment(ns, name string, replicas int32, cpu string, mutate func(*corev1.PodSpec)) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	spec := corev1.PodSpec{
		SchedulerName:                 schedulerName,
		NodeSelector:                  map[string]string{nsLabel: ns},
		TerminationGracePeriodSeconds: ptr.To[int64](0),
		Containers: []corev1.Container{{Name: "c", Image: "pause",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}},
	}
	if mutate != nil {
		mutate(&spec)
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
}

func create(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	if _, err := env.Client.AppsV1().Deployments(d.Namespace).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// runningByNode counts the app's running, not terminating pods by node.
func runningByNode(t *testing.T, ns, app string) map[string]int {
	t.Helper()
	list, err := env.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			out[p.Spec.NodeName]++
		}
	}
	return out
}

func waitRunning(t *testing.T, ns, app string, want map[string]int) {
	t.Helper()
	var got map[string]int
	err := harness.WaitFor(context.Background(), 30*time.Second, func(context.Context) (bool, error) {
		got = runningByNode(t, ns, app)
		if len(got) != len(want) {
			return false, nil
		}
		for k, v := range want {
			if got[k] != v {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("%s pods by node %v, want %v: %v", app, got, want, err)
	}
}
