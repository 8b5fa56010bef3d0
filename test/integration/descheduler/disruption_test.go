package descheduler

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/utils/ptr"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/descheduler/explain"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
	"github.com/accord-sched/accord/test/harness"
	"github.com/accord-sched/accord/test/harness/inprocess"
)

// disruptionCluster is a namespace with nodes, each with a ClusterScopedResource enabling CPU, and a
// binder standing in for the scheduler: it binds the namespace's pending pods, after bindDelay, to
// the node target names (so a replacement is unavailable for a while, as on a real cluster).
type disruptionCluster struct {
	ns     string
	nodes  []string
	target atomic.Pointer[func() string]
}

const bindDelay = 300 * time.Millisecond

func newDisruptionCluster(t *testing.T, nodes ...string) *disruptionCluster {
	t.Helper()
	ctx := context.Background()
	c := &disruptionCluster{ns: env.CreateNamespace(t, "disrupt")}
	for _, short := range nodes {
		name := c.ns + "-" + short
		if _, err := env.Nodes.CreateNode(ctx, harness.NodeSpec{Name: name, Labels: map[string]string{"test.accord.dev/ns": c.ns}}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		cr := &schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: map[corev1.ResourceName]bool{corev1.ResourceCPU: true}}}
		if _, err := env.Accord.SchedulingV1alpha1().ClusterScopedResources().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = env.Accord.SchedulingV1alpha1().ClusterScopedResources().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
		c.nodes = append(c.nodes, name)
	}
	if err := env.Nodes.WaitForNodesReady(ctx, c.nodes...); err != nil {
		t.Fatal(err)
	}
	c.startBinder(t)
	return c
}

func (c *disruptionCluster) bindTo(f func() string) { c.target.Store(&f) }

func (c *disruptionCluster) startBinder(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	w, err := env.Client.CoreV1().Pods(c.ns).Watch(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName="})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); w.Stop(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type != watch.Added || pod.Spec.NodeName != "" {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				select {
				case <-ctx.Done():
					return
				case <-time.After(bindDelay):
				}
				f := c.target.Load()
				if f == nil {
					return
				}
				node := (*f)()
				err := env.Client.CoreV1().Pods(c.ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, UID: pod.UID},
					Target: corev1.ObjectReference{Kind: "Node", Name: node}}, metav1.CreateOptions{})
				if err != nil && ctx.Err() == nil {
					t.Logf("binding %s to %s: %v", pod.Name, node, err)
				}
			}()
		}
	}()
}

func (c *disruptionCluster) disableCPU(t *testing.T, nodes ...string) {
	t.Helper()
	for _, n := range nodes {
		if _, err := env.Accord.SchedulingV1alpha1().ClusterScopedResources().Patch(context.Background(), n, types.MergePatchType,
			[]byte(`{"spec":{"resourcesFilter":{"cpu":false}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// deployment creates a Deployment of replicas pods requesting 1m of CPU, labelled app=name.
func (c *disruptionCluster) deployment(t *testing.T, name string, replicas int32) {
	t.Helper()
	c.deploymentAnnotated(t, name, replicas, nil)
}

// deploymentAnnotated is deployment with annotations on the pod template.
func (c *disruptionCluster) deploymentAnnotated(t *testing.T, name string, replicas int32, annotations map[string]string) {
	t.Helper()
	labels := map[string]string{"app": name}
	_, err := env.Client.AppsV1().Deployments(c.ns).Create(context.Background(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
				Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0), Containers: []corev1.Container{{Name: "c", Image: "pause",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m")}}}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// pods returns the pods labelled app=name, by node, counting only Ready ones not terminating.
func (c *disruptionCluster) readyPods(t *testing.T, app string) (byNode map[string]int, uids map[types.UID]bool) {
	t.Helper()
	list, err := env.Client.CoreV1().Pods(c.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	byNode, uids = map[string]int{}, map[types.UID]bool{}
	for i := range list.Items {
		p := &list.Items[i]
		if p.DeletionTimestamp == nil && podIsReady(p) {
			byNode[p.Spec.NodeName]++
			uids[p.UID] = true
		}
	}
	return byNode, uids
}

func podIsReady(p *corev1.Pod) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// unavailability counts, from a watch, a workload's pods that are not available (Ready and not
// terminating) against its replicas, and keeps the most seen at once.
type unavailability struct {
	mu        sync.Mutex
	replicas  int
	available map[types.UID]bool
	// counting starts once the watch's initial events show every replica available.
	counting bool
	most     int
}

func watchUnavailability(t *testing.T, ns, app string, replicas int) *unavailability {
	t.Helper()
	u := &unavailability{replicas: replicas, available: map[types.UID]bool{}}
	w, err := env.Client.CoreV1().Pods(ns).Watch(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { w.Stop(); <-done })
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			u.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(u.available, pod.UID)
			} else {
				u.available[pod.UID] = podIsReady(pod) && pod.DeletionTimestamp == nil
			}
			n := 0
			for _, ok := range u.available {
				if ok {
					n++
				}
			}
			u.counting = u.counting || n >= u.replicas
			if u.counting {
				u.most = max(u.most, u.replicas-n)
			}
			u.mu.Unlock()
		}
	}()
	return u
}

func (u *unavailability) max() (most int, counting bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.most, u.counting
}

// disruptionPolicy is NodeCRDResourceFit (cycles and its event-triggered controller) over the
// namespace's nodes, with per-node and total caps high enough that only the workload budget keeps
// the Deployment's pods from all going at once; extra is more YAML at the top level.
func disruptionPolicy(t *testing.T, ns, extra, profileExtra string) string {
	t.Helper()
	doc := fmt.Sprintf(`apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: "test.accord.dev/ns=%s"
maxNoOfPodsToEvictPerNode: 50
maxNoOfPodsToEvictTotal: 100
%s
profiles:
- name: fit
  pluginConfig:
  - name: DefaultEvictor
  - name: NodeCRDResourceFit
  plugins:
    deschedule: {enabled: [NodeCRDResourceFit]}
    preEvictionFilter: {disabled: [SchedulerSimulation]}
%s`, ns, extra, profileExtra)
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runDescheduler runs the descheduler (cycles every interval and the event-triggered controllers)
// until the test ends.
func runDescheduler(t *testing.T, cfg runner.Config) {
	t.Helper()
	inprocess.Descheduler(t, cfg)
}

// TestWorkloadBudgetDefault: a Deployment of 20 replicas on two nodes that both stop fitting
// (NodeCRDResourceFit), no PDB, caps that would let every pod go in one cycle, cycles every 200 ms
// and the event-triggered controller: with the default budget (10% of 20 = 2) never more than 2 of
// its pods are unavailable at once (counted from a watch), and all 20 move to the third node in the
// end. A single-replica Deployment on the same nodes is left alone.
func TestWorkloadBudgetDefault(t *testing.T) {
	const replicas = 20
	ctx := context.Background()
	c := newDisruptionCluster(t, "bad0", "bad1", "good")
	var next atomic.Int64
	c.bindTo(func() string { return c.nodes[next.Add(1)%2] })
	c.deployment(t, "web", replicas)
	c.deployment(t, "solo", 1)
	var soloUIDs map[types.UID]bool
	if err := harness.WaitFor(ctx, 60*time.Second, func(context.Context) (bool, error) {
		web, _ := c.readyPods(t, "web")
		var solo map[string]int
		solo, soloUIDs = c.readyPods(t, "solo")
		return web[c.nodes[0]]+web[c.nodes[1]] == replicas && len(soloUIDs) == 1 && solo[c.nodes[2]] == 0, nil
	}); err != nil {
		t.Fatalf("the Deployments' pods are not all Ready on the two first nodes: %v", err)
	}
	un := watchUnavailability(t, c.ns, "web", replicas)
	// From now on replacements land on the good node.
	c.bindTo(func() string { return c.nodes[2] })
	m := metrics.New()
	runDescheduler(t, runner.Config{RestConfig: env.Config, PolicyConfigFile: disruptionPolicy(t, c.ns, "", ""), Metrics: m,
		DeschedulingInterval: 200 * time.Millisecond, EventDriven: true})
	start := time.Now()
	c.disableCPU(t, c.nodes[0], c.nodes[1])
	if err := harness.WaitFor(ctx, 120*time.Second, func(context.Context) (bool, error) {
		web, _ := c.readyPods(t, "web")
		return web[c.nodes[2]] == replicas, nil
	}); err != nil {
		web, _ := c.readyPods(t, "web")
		t.Fatalf("not all %d pods moved to %s in 120 s: Ready by node %v", replicas, c.nodes[2], web)
	}
	took := time.Since(start)
	most, counting := un.max()
	if !counting {
		t.Fatal("the watch never saw all the replicas available")
	}
	if most > 2 {
		t.Errorf("%d of the %d pods unavailable at once; the default budget allows 2", most, replicas)
	}
	if most < 1 {
		t.Errorf("no pod ever unavailable: the measure saw no eviction")
	}
	_, solo := c.readyPods(t, "solo")
	for uid := range soloUIDs {
		if !solo[uid] {
			t.Errorf("the single-replica Deployment's pod was evicted (Ready now: %v)", solo)
		}
	}
	// explain names the single-replica Deployment's pod, still violating, as held by its budget.
	rows, err := explain.Run(ctx, runner.Config{RestConfig: env.Config, PolicyConfigFile: disruptionPolicy(t, c.ns, "", "")})
	if err != nil {
		t.Fatal(err)
	}
	var soloRow *explain.Row
	for i := range rows {
		if strings.HasPrefix(rows[i].Pod, "solo-") {
			soloRow = &rows[i]
		}
	}
	if soloRow == nil || soloRow.Verdict != explain.VerdictBlocked || soloRow.BlockedBy != explain.BlockedByWorkloadBudget ||
		!strings.Contains(soloRow.Message, "evictSingleReplicaWorkloads") {
		t.Errorf("explain's row of the single-replica pod: %+v, want blocked by %q", soloRow, explain.BlockedByWorkloadBudget)
	}
	t.Logf("FIGURE workload_budget_max_unavailable: %d of %d pods (default budget 10%% = 2; cycles every 200 ms + event mode; all moved in %s; single-replica Deployment untouched)",
		most, replicas, took.Round(100*time.Millisecond))
}

// TestEvictionWindowOpensDuringTest: a profile whose only eviction window opens 8 s after its
// pods start violating: nothing is evicted before it opens (cycles every 200 ms and the
// event-triggered controller try all along), and evictions start within seconds after.
func TestEvictionWindowOpensDuringTest(t *testing.T) {
	ctx := context.Background()
	c := newDisruptionCluster(t, "bad", "good")
	c.bindTo(func() string { return c.nodes[0] })
	c.deployment(t, "night", 4)
	if err := harness.WaitFor(ctx, 60*time.Second, func(context.Context) (bool, error) {
		pods, _ := c.readyPods(t, "night")
		return pods[c.nodes[0]] == 4, nil
	}); err != nil {
		t.Fatalf("the Deployment's pods are not Ready: %v", err)
	}
	c.bindTo(func() string { return c.nodes[1] })
	c.disableCPU(t, c.nodes[0])
	// Watch for the first eviction (a pod marked for deletion).
	w, err := env.Client.CoreV1().Pods(c.ns).Watch(ctx, metav1.ListOptions{LabelSelector: "app=night"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	violating := time.Now()
	opens := violating.Add(8 * time.Second).UTC().Truncate(time.Second).Add(time.Second)
	closes := opens.Add(10 * time.Minute)
	window := fmt.Sprintf("  evictionWindows:\n  - {start: %q, end: %q, timeZone: UTC}\n", opens.Format("15:04:05"), closes.Format("15:04:05"))
	m := metrics.New()
	runDescheduler(t, runner.Config{RestConfig: env.Config, PolicyConfigFile: disruptionPolicy(t, c.ns, "", window), Metrics: m,
		DeschedulingInterval: 200 * time.Millisecond, EventDriven: true})
	ready := time.Now()
	// Before the window opens, explain lists what the profile would evict and when.
	rows, err := explain.Run(ctx, runner.Config{RestConfig: env.Config, PolicyConfigFile: disruptionPolicy(t, c.ns, "", window)})
	if err != nil {
		t.Fatal(err)
	}
	if time.Now().Before(opens) {
		// Rows come in explain's order; the workload budget may block some of them (two of four
		// replicas at once), so any evict row must say when the window opens.
		said := false
		for _, r := range rows {
			said = said || (r.Verdict == explain.VerdictEvict && strings.Contains(r.Message, "next opens "+opens.Format(time.RFC3339)))
		}
		if !said {
			t.Errorf("explain before the window: %+v, want an evict row saying the window opens at %s", rows, opens.Format(time.RFC3339))
		}
	}
	var first time.Time
	deadline := time.After(time.Until(opens) + 30*time.Second)
	for first.IsZero() {
		select {
		case ev := <-w.ResultChan():
			if p, ok := ev.Object.(*corev1.Pod); ok && (ev.Type == watch.Deleted || p.DeletionTimestamp != nil) {
				first = time.Now()
			}
		case <-deadline:
			t.Fatalf("no eviction within 30 s of the window opening at %s", opens.Format(time.RFC3339))
		}
	}
	if first.Before(opens) {
		t.Fatalf("a pod was evicted at %s, before the window opened at %s", first.Format(time.RFC3339Nano), opens.Format(time.RFC3339))
	}
	held, err := testutil.GetCounterMetricValue(m.EvictionsHeld.WithLabelValues(metrics.HeldWindowClosed, "fit"))
	if err != nil || held == 0 {
		t.Errorf("accord_descheduler_evictions_held_total{reason=window_closed} = %v (%v), want > 0 before the window opened", held, err)
	}
	if v, err := testutil.GetGaugeMetricValue(m.WindowOpen.WithLabelValues("fit")); err != nil || v != 1 {
		t.Errorf("accord_descheduler_eviction_window_open = %v (%v), want 1 once open", v, err)
	}
	t.Logf("FIGURE eviction_window_timeline: pods violating at 0 s; descheduler ready at %.1f s; window opens at %.1f s (%s UTC); %v evictions held before it; first eviction at %.1f s (%.0f ms after the window opened)",
		ready.Sub(violating).Seconds(), opens.Sub(violating).Seconds(), opens.Format("15:04:05"), held,
		first.Sub(violating).Seconds(), float64(first.Sub(opens).Milliseconds()))
}
