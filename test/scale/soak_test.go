package scale

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
	"github.com/accord-sched/accord/test/harness"
)

// soakSize is what TestSoak runs: Nodes nodes, Pods pods of Deployments, until the descheduler has
// run Cycles cycles of Interval or MaxDuration has passed since the test began.
type soakSize struct {
	Nodes, Pods, Cycles int
	Interval            time.Duration
	MaxDuration         time.Duration
}

// soakConfig reads the soak's size from ACCORD_SOAK_NODES (default 500), ACCORD_SOAK_PODS (10000),
// ACCORD_SOAK_CYCLES (1000), ACCORD_SOAK_INTERVAL (1s) and ACCORD_SOAK_MAX_DURATION (25m);
// false without ACCORD_SOAK.
func soakConfig(t *testing.T) (soakSize, bool) {
	t.Helper()
	if os.Getenv("ACCORD_SOAK") == "" {
		return soakSize{}, false
	}
	s := soakSize{Nodes: envInt(t, "ACCORD_SOAK_NODES", 500), Pods: envInt(t, "ACCORD_SOAK_PODS", 10000),
		Cycles:   envInt(t, "ACCORD_SOAK_CYCLES", 1000),
		Interval: envDuration(t, "ACCORD_SOAK_INTERVAL", time.Second), MaxDuration: envDuration(t, "ACCORD_SOAK_MAX_DURATION", 25*time.Minute)}
	if s.Nodes < 10 || s.Pods < 100 {
		t.Fatalf("ACCORD_SOAK_NODES=%d, ACCORD_SOAK_PODS=%d: the churn needs at least 10 nodes and 100 pods", s.Nodes, s.Pods)
	}
	return s, true
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive duration", name, v)
	}
	return d
}

// soakPolicy runs both eviction modes side by side, with the caps shared: profile "soft" only
// annotates (pods on a node tainted with soakTaint), profile "move" evicts reservation-first
// (NodeCRDResourceFit's violators, LowNodeLoad's hot nodes and the PodMigrations). The soft profile
// comes first, so the move profile's evictions do not use up the total cap before it runs. The
// shared args come from the scheduler configuration. SchedulerSimulation remembers each eviction
// (the pod with it) for flapWindow: 3 minutes here instead of the default hour, so that memory
// reaches its steady size within the run and a growth of the descheduler's heap past it shows.
const soakPolicy = `apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
maxNoOfPodsToEvictPerNode: 2
maxNoOfPodsToEvictTotal: 6
profiles:
- name: soft
  evictionMode: Soft
  pluginConfig:
  - name: DefaultEvictor
    args:
      nodeFit: true
  - name: SchedulerSimulation
    args:
      flapWindow: 3m
  plugins:
    filter:
      enabled: [DefaultEvictor]
    preEvictionFilter:
      enabled: [DefaultEvictor, SchedulerSimulation]
    deschedule:
      enabled: [RemovePodsViolatingNodeTaints]
- name: move
  pluginConfig:
  - name: DefaultEvictor
    args:
      nodeFit: true
  - name: SchedulerSimulation
    args:
      flapWindow: 3m
  - name: NodeCRDResourceFit
    args:
      schedulerNames: [accord-scheduler]
  - name: LowNodeLoad
    args:
      lowThresholds: {cpu: 40, memory: 40}
      consecutiveAbnormalities: 2
  - name: ReservationFirst
    args:
      schedulerNames: [accord-scheduler]
      placementTimeout: 10s
      ttlMargin: 30s
  plugins:
    filter:
      enabled: [DefaultEvictor]
    preEvictionFilter:
      enabled: [DefaultEvictor, SchedulerSimulation]
    deschedule:
      enabled: [NodeCRDResourceFit, PodMigration]
    balance:
      enabled: [LowNodeLoad]
    evict:
      enabled: [ReservationFirst]
`

// soakTaint is the NoSchedule taint the churn moves from node to node; the soft profile annotates
// the pods under it.
const soakTaint = "soak.accord.dev/drain"

// The churn's periods, each on its own nodes (see soakChurn).
const (
	soakHotPeriod       = 60 * time.Second // a node reports 87.5% cpu (LowNodeLoad, LoadAware)
	soakCRFlipPeriod    = 30 * time.Second // a node's CR stops enabling memory (NodeCRDResourceFit)
	soakCRScorePeriod   = 5 * time.Second  // a node's CR cpu score changes
	soakTaintPeriod     = 45 * time.Second // the soft profile's taint moves
	soakBurstPeriod     = 60 * time.Second // the burst Deployment scales up, then down half-way
	soakMigrationPeriod = 20 * time.Second // a PodMigration of a random pod
	soakBurstPods       = 200
	// soakReservationRetention is accord-scheduler's --reservation-retention in the soak: finished
	// reservations are deleted a minute after they finish (the default, 10 minutes, would have the
	// live count still rising at the end of a 20-minute run, so "flat" could not be told).
	soakReservationRetention = time.Minute
)

// TestSoak runs the real accord-scheduler and accord-descheduler for many descheduling cycles on a
// control plane with controllers and the node simulator, under churn, and prints the slope per 100
// cycles of what must not grow (see README.md, Soak). It runs only with ACCORD_SOAK=1 (make soak).
func TestSoak(t *testing.T) {
	sz, ok := soakConfig(t)
	if !ok {
		t.Skip("the soak runs with ACCORD_SOAK=1 (make soak)")
	}
	testStart := time.Now()
	deadline := testStart.Add(sz.MaxDuration)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	schedBin := harness.BuildBinary(t, "github.com/accord-sched/accord/cmd/scheduler")
	deschedBin := harness.BuildBinary(t, "github.com/accord-sched/accord/cmd/descheduler")

	env, err := harness.Start(ctx, harness.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Stop)
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 20000, 20000
	crCfg := env.CRConfig()
	crCfg.QPS, crCfg.Burst = 20000, 20000
	client, accord := kubernetes.NewForConfigOrDie(cfg), accordclient.NewForConfigOrDie(crCfg)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	// Nodes of the uniform population (CR score 50, usage under the thresholds): the churn makes
	// the exceptions.
	start := time.Now()
	if err := createNodes(ctx, client, accord, env.Nodes, uniform, sz.Nodes); err != nil {
		t.Fatal(err)
	}
	if err := refreshNodeMetrics(ctx, accord, uniform, sz.Nodes); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d simulated nodes with ClusterScopedResources and NodeMetrics created in %s", sz.Nodes, time.Since(start).Round(time.Millisecond))

	schedConfig := soakSchedulerConfig(t, kubeconfig)
	schedPort, deschedPort := harness.FreePort(t), harness.FreePort(t)
	metricsArgs := func(port int) []string {
		// The scrapers call without credentials (loopback only).
		return []string{"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port), "--profiling",
			"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics,/debug/pprof/*"}
	}
	sched, _ := harness.StartProcess(t, ctx, schedBin, append([]string{"--config=" + schedConfig,
		"--reservation-retention=" + soakReservationRetention.String()}, metricsArgs(schedPort)...)...)

	ns := "soak"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := newPodCounter(t, ctx, client, ns)
	start = time.Now()
	groups := sz.Pods / 10
	if err := parallel(ctx, groups+1, func(ctx context.Context, g int) error {
		d := soakDeployment(ns, g, groups)
		if _, err := client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating Deployment %s/%s: %w", ns, d.Name, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := groups * 10
	if err := harness.WaitFor(ctx, time.Until(deadline), func(context.Context) (bool, error) {
		if procExited(sched.Process.Pid) {
			return false, fmt.Errorf("accord-scheduler exited")
		}
		return pods.running() >= want, nil
	}); err != nil {
		t.Fatalf("%d of %d pods of %d Deployments Running: %v", pods.running(), want, groups, err)
	}
	t.Logf("%d Deployments, %d pods scheduled by accord-scheduler and Running in %s", groups, want, time.Since(start).Round(time.Millisecond))

	policy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policy, []byte(soakPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	desched, _ := harness.StartProcess(t, ctx, deschedBin, append([]string{"--kubeconfig=" + kubeconfig,
		"--policy-config-file=" + policy, "--scheduler-config-file=" + schedConfig,
		"--descheduling-interval=" + sz.Interval.String(), "--event-driven",
		"--client-connection-qps=5000", "--client-connection-burst=5000", "-v=1"}, metricsArgs(deschedPort)...)...)

	schedScrape, deschedScrape := newMetricsScraper(schedPort), newMetricsScraper(deschedPort)
	t.Cleanup(schedScrape.close)
	t.Cleanup(deschedScrape.close)
	var scrapeErr error
	if err := harness.WaitFor(ctx, 5*time.Minute, func(ctx context.Context) (bool, error) {
		if procExited(desched.Process.Pid) {
			return false, fmt.Errorf("accord-descheduler exited")
		}
		m, err := deschedScrape.get(ctx)
		scrapeErr = err
		return err == nil && m.sum("accord_descheduler_cycles_total", "") >= 1, nil
	}); err != nil {
		t.Fatalf("accord-descheduler: no first cycle: %v (last scrape: %v)", err, scrapeErr)
	}
	t.Logf("accord-descheduler ran its first cycle %s after the test began", time.Since(testStart).Round(time.Second))

	// The churn, until the samples are taken.
	stop := make(chan struct{})
	churned := soakChurn(ctx, client, accord, pods, ns, sz.Nodes, stop)

	// A sample every few cycles (about 100 over the run), until Cycles cycles or the time is up
	// (a minute is kept for the figures and the teardown).
	every := max(sz.Cycles/100, 1)
	end := deadline.Add(-time.Minute)
	pids := map[string]int{"accord-scheduler": sched.Process.Pid, "accord-descheduler": desched.Process.Pid}
	scrapers := map[string]*metricsScraper{"accord-scheduler": schedScrape, "accord-descheduler": deschedScrape}
	var series []soakSample
	// Each binary's heap is profiled at the first sample after the warm-up and at the end; the
	// difference says what grew (ACCORD_SOAK_PPROF_DIR keeps the profiles).
	heapDir := os.Getenv("ACCORD_SOAK_PPROF_DIR")
	if heapDir == "" {
		heapDir = t.TempDir()
	}
	heapAt := int(float64(sz.Cycles/every) * soakWarmup)
	heapBase := -1.0
	ports := map[string]int{"accord-scheduler": schedPort, "accord-descheduler": deschedPort}
	var firstCycle float64
	skipped := 0
	reservationsSeen, migrationsSucceeded := map[string]bool{}, map[string]bool{}
	maxAnnotated := 0
	cycleStart := time.Now()
	for next := 0.0; ; {
		if time.Now().After(end) {
			t.Errorf("the wall-clock cap (ACCORD_SOAK_MAX_DURATION=%s) was reached after %d cycles of %d", sz.MaxDuration, lastCycles(series)-int(firstCycle), sz.Cycles)
			break
		}
		for name, pid := range pids {
			if procExited(pid) {
				t.Fatalf("%s exited during the soak", name)
			}
		}
		m, err := deschedScrape.get(ctx)
		if err != nil {
			t.Logf("accord-descheduler /metrics (retried): %v", err)
			time.Sleep(time.Second)
			continue
		}
		cycles := m.sum("accord_descheduler_cycles_total", "")
		if firstCycle == 0 {
			firstCycle = cycles
		}
		if cycles < next {
			time.Sleep(sz.Interval / 4)
			continue
		}
		s, err := takeSoakSample(ctx, env.Client, accord, scrapers, pids, pods, cycles-firstCycle)
		if err != nil {
			// A sample missed now and then (a scrape during a restart of the apiserver's watch) is
			// skipped; ten in a row are a broken scrape, and a soak without samples measures nothing.
			if skipped++; skipped >= 10 {
				t.Fatalf("sample at cycle %.0f: %v (10 samples in a row failed)", cycles, err)
			}
			t.Logf("sample at cycle %.0f (skipped): %v", cycles, err)
			time.Sleep(time.Second)
			continue
		}
		skipped = 0
		series = append(series, s)
		for _, name := range s.reservations {
			reservationsSeen[name] = true
		}
		for _, name := range s.succeeded {
			migrationsSucceeded[name] = true
		}
		maxAnnotated = max(maxAnnotated, int(s.values["soft-eviction annotations"]))
		if len(series)%10 == 1 {
			t.Logf("cycle %.0f (%s): %s", s.cycle, time.Since(cycleStart).Round(time.Second), s)
		}
		if heapBase < 0 && len(series) > heapAt {
			if err := takeHeapProfiles(ctx, ports, heapDir, "warm"); err != nil {
				t.Logf("heap profiles after the warm-up (none compared at the end): %v", err)
			} else {
				heapBase = s.cycle
			}
		}
		if int(s.cycle) >= sz.Cycles {
			break
		}
		next = cycles + float64(every)
	}
	close(stop)
	c := <-churned
	if heapBase >= 0 {
		if err := takeHeapProfiles(ctx, ports, heapDir, "end"); err != nil {
			t.Logf("heap profiles at the end: %v", err)
		} else {
			for _, name := range []string{"accord-scheduler", "accord-descheduler"} {
				logHeapGrowth(t, ctx, heapDir, name, heapBase, lastCycles(series))
			}
		}
	}
	elapsed := time.Since(cycleStart)
	m, err := deschedScrape.get(ctx)
	if err != nil {
		t.Fatalf("accord-descheduler /metrics: %v", err)
	}
	cycles := lastCycles(series)
	figure(t, "soak nodes=%d pods=%d interval=%s: %d cycles in %s (%.2f s per cycle), %d samples; churn: %d NodeMetric reports, %d hot-node moves, %d CR memory flips, %d CR score changes, %d taint moves, %d bursts of %d pods, %d PodMigrations created (%d seen Succeeded); descheduler: %.0f evictions (%.0f failed), %.0f soft, %d Reservations seen, at most %d pods annotated at once",
		sz.Nodes, want, sz.Interval, cycles, elapsed.Round(time.Second), elapsed.Seconds()/math.Max(float64(cycles), 1), len(series),
		c.metrics, c.hot, c.crFlips, c.crScores, c.taints, c.bursts, soakBurstPods, c.migrations, len(migrationsSucceeded),
		m.sum("accord_descheduler_pods_evicted_total", `result="success"`), m.sum("accord_descheduler_pods_evicted_total", `result="error"`),
		m.sum("accord_descheduler_pods_evicted_total", `result="soft"`), len(reservationsSeen), maxAnnotated)
	for _, f := range soakSlopes(series) {
		figure(t, "soak slope %s nodes=%d pods=%d cycles=%d: %s", f.name, sz.Nodes, want, cycles, f)
	}
	if len(series) > 1 {
		for _, name := range []string{"accord-scheduler", "accord-descheduler"} {
			t.Logf("%s metric series added after the warm-up (cycle %.0f to %.0f): %s", name, series[len(series)/10].cycle, series[len(series)-1].cycle,
				familyGrowth(series[len(series)/10].families[name], series[len(series)-1].families[name]))
		}
	}
	if len(series) > 0 {
		last := series[len(series)-1]
		t.Logf("at the end (cycle %.0f): Reservations by phase %s (oldest finished one completed %s ago, retention %s; %d finished without completionTime), PodMigrations by phase %s",
			last.cycle, phaseString(last.reservationPhases), last.oldestFinished.Round(time.Second), soakReservationRetention, last.unstamped, phaseString(last.migrationPhases))
	}
	if c.err != nil {
		t.Errorf("churn: %v", c.err)
	}
	// The churn must have walked every path the slopes are about, given the time: the soft
	// profile's taint first moves soakTaintPeriod after the cycles start.
	if elapsed < 2*soakTaintPeriod {
		t.Logf("the cycles ran %s, under the %s the churn needs to drive every path: not checked", elapsed.Round(time.Second), 2*soakTaintPeriod)
	} else if m.sum("accord_descheduler_pods_evicted_total", `result="success"`) == 0 || m.sum("accord_descheduler_pods_evicted_total", `result="soft"`) == 0 ||
		len(reservationsSeen) == 0 || len(migrationsSucceeded) == 0 {
		t.Errorf("the churn did not drive every path: %.0f evictions, %.0f soft, %d Reservations seen, %d PodMigrations Succeeded",
			m.sum("accord_descheduler_pods_evicted_total", `result="success"`), m.sum("accord_descheduler_pods_evicted_total", `result="soft"`), len(reservationsSeen), len(migrationsSucceeded))
	}
}

// soakSchedulerConfig writes manifests/scheduler/config.yaml's Accord profile with the Reservation
// plugin enabled (as the chart does with descheduler.reservationFirst), kubeconfig and client
// QPS/burst 5000; accord-scheduler runs it and accord-descheduler simulates it.
func soakSchedulerConfig(t *testing.T, kubeconfig string) string {
	t.Helper()
	cfg := sampleSchedulerConfig(t)
	cfg["clientConnection"] = map[string]any{"kubeconfig": kubeconfig, "qps": 5000, "burst": 5000}
	cfg["leaderElection"] = map[string]any{"leaderElect": false}
	// The goroutine count is read from /debug/pprof (with --config, --profiling is ignored and the
	// shipped configuration sets enableProfiling: false).
	cfg["enableProfiling"] = true
	profile := cfg["profiles"].([]any)[0].(map[string]any)
	multi := profile["plugins"].(map[string]any)["multiPoint"].(map[string]any)
	multi["enabled"] = append(multi["enabled"].([]any), map[string]any{"name": "Reservation"})
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "scheduler-config.yaml")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// soakDeployment is Deployment g of groups: ten replicas of the heterogeneous population's pod g*10
// (its shape, labels, anti-affinity, spread and tolerations, owner references left out) for
// accord-scheduler, with a one-second grace period; g == groups is the burst Deployment, at zero
// replicas until the churn scales it.
func soakDeployment(ns string, g, groups int) *appsv1.Deployment {
	p := heterogeneous.podTemplate(ns, "", "accord-scheduler", g*10)
	name, replicas := p.Labels["app"], int32(10)
	if g == groups {
		name, replicas = "burst", 0
		p.Labels = map[string]string{"app": name}
		p.Spec.Affinity, p.Spec.TopologySpreadConstraints, p.Spec.Tolerations = nil, nil, nil
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	}
	p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: p.Labels}, Spec: p.Spec},
		},
	}
}

// podCounter watches the soak's pods (a test-side informer, so the samples do not list 10k pods).
type podCounter struct {
	lister interface {
		List(labels.Selector) ([]*corev1.Pod, error)
	}
}

func newPodCounter(t *testing.T, ctx context.Context, client kubernetes.Interface, ns string) *podCounter {
	t.Helper()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods()
	informer := inf.Informer()
	stop := make(chan struct{})
	factory.Start(stop)
	t.Cleanup(func() { close(stop); factory.Shutdown() })
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("pod informer did not sync")
	}
	return &podCounter{lister: inf.Lister().Pods(ns)}
}

// running counts the Running pods that are not terminating.
func (c *podCounter) running() int {
	n := 0
	for _, p := range c.list() {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

func (c *podCounter) list() []*corev1.Pod {
	l, _ := c.lister.List(labels.Everything())
	return l
}

// annotated counts the pods with the soft-eviction annotation.
func (c *podCounter) annotated() int {
	n := 0
	for _, p := range c.list() {
		if _, ok := p.Annotations[evictions.SoftEvictionAnnotation]; ok {
			n++
		}
	}
	return n
}

// soakChurnCounts is what the churn did.
type soakChurnCounts struct {
	metrics, hot, crFlips, crScores, taints, bursts, migrations int
	err                                                         error
}

// soakChurn changes the cluster until stop is closed, then returns what it did on the channel:
// every node's NodeMetric is reported once per metricInterval, the hot node's with 87.5% cpu (the
// hot node moves every soakHotPeriod); every soakCRFlipPeriod one node's ClusterScopedResource stops
// enabling memory and the previous one's enables it again; every soakCRScorePeriod one node's CR cpu
// score changes; every soakTaintPeriod the soakTaint moves to another node; every soakBurstPeriod the
// burst Deployment scales to soakBurstPods and, half a period later, back to zero; every
// soakMigrationPeriod a PodMigration (ttlSecondsAfterFinished 30 s) is created for a Running pod.
// A failed request is counted once in err (the first) and the churn goes on.
func soakChurn(ctx context.Context, client kubernetes.Interface, accord accordclient.Interface, pods *podCounter, ns string, n int, stop <-chan struct{}) <-chan soakChurnCounts {
	out := make(chan soakChurnCounts, 1)
	go func() {
		var c soakChurnCounts
		defer func() { out <- c }()
		note := func(err error) {
			if err != nil && c.err == nil && ctx.Err() == nil {
				c.err = err
			}
		}
		tick := func(d time.Duration) *time.Ticker { return time.NewTicker(d) }
		metrics, hot, flip, score, taint, burst, migrate := tick(metricInterval/time.Duration(n)), tick(soakHotPeriod), tick(soakCRFlipPeriod),
			tick(soakCRScorePeriod), tick(soakTaintPeriod), tick(soakBurstPeriod), tick(soakMigrationPeriod)
		for _, tk := range []*time.Ticker{metrics, hot, flip, score, taint, burst, migrate} {
			defer tk.Stop()
		}
		var scaleDown <-chan time.Time
		hotNode, flipped, tainted := -1, -1, -1
		next := 0
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-metrics.C:
				i := next % n
				next++
				usage := uniform.nodeUsage(i)
				if i == hotNode {
					usage[corev1.ResourceCPU] = *resource.NewMilliQuantity(7000, resource.DecimalSI)
				}
				patch, err := json.Marshal(map[string]any{"status": map[string]any{"updateTime": metav1.Now(), "nodeUsage": usage}})
				note(err)
				_, err = accord.SloV1alpha1().NodeMetrics().Patch(ctx, nodeName(i), types.MergePatchType, patch, metav1.PatchOptions{}, "status")
				note(err)
				c.metrics++
			case <-hot.C:
				c.hot++
				hotNode = (c.hot*7 + 3) % n
				// Reported at once, not at the node's next turn.
				usage := uniform.nodeUsage(hotNode)
				usage[corev1.ResourceCPU] = *resource.NewMilliQuantity(7000, resource.DecimalSI)
				patch, err := json.Marshal(map[string]any{"status": map[string]any{"updateTime": metav1.Now(), "nodeUsage": usage}})
				note(err)
				_, err = accord.SloV1alpha1().NodeMetrics().Patch(ctx, nodeName(hotNode), types.MergePatchType, patch, metav1.PatchOptions{}, "status")
				note(err)
			case <-flip.C:
				if flipped >= 0 {
					note(setMemoryEnabled(ctx, accord, flipped, true))
				}
				c.crFlips++
				flipped = (c.crFlips*13 + 1) % n
				note(setMemoryEnabled(ctx, accord, flipped, false))
			case <-score.C:
				c.crScores++
				patch := []byte(fmt.Sprintf(`{"spec":{"resourcesScore":{"cpu":%d}}}`, 10+(c.crScores*31)%81))
				_, err := accord.SchedulingV1alpha1().ClusterScopedResources().Patch(ctx, nodeName((c.crScores*7919)%n), types.MergePatchType, patch, metav1.PatchOptions{})
				note(err)
			case <-taint.C:
				if tainted >= 0 {
					note(setSoakTaint(ctx, client, tainted, false))
				}
				c.taints++
				tainted = (c.taints*17 + 2) % n
				note(setSoakTaint(ctx, client, tainted, true))
			case <-burst.C:
				c.bursts++
				note(scaleBurst(ctx, client, ns, soakBurstPods))
				scaleDown = time.After(soakBurstPeriod / 2)
			case <-scaleDown:
				scaleDown = nil
				note(scaleBurst(ctx, client, ns, 0))
			case <-migrate.C:
				all := pods.list()
				for k := 0; k < len(all); k++ {
					p := all[(c.migrations*7919+k)%len(all)]
					if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil || p.Labels["app"] == "burst" {
						continue
					}
					c.migrations++
					_, err := accord.SchedulingV1alpha1().PodMigrations(ns).Create(ctx, &schedv1alpha1.PodMigration{
						ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("soak-%05d", c.migrations)},
						Spec:       schedv1alpha1.PodMigrationSpec{PodName: p.Name, TTLSecondsAfterFinished: ptr.To[int32](30)},
					}, metav1.CreateOptions{})
					note(err)
					break
				}
			}
		}
	}()
	return out
}

// setMemoryEnabled sets whether node i's ClusterScopedResource enables memory.
func setMemoryEnabled(ctx context.Context, accord accordclient.Interface, i int, enabled bool) error {
	patch := []byte(fmt.Sprintf(`{"spec":{"resourcesFilter":{"memory":%t}}}`, enabled))
	if _, err := accord.SchedulingV1alpha1().ClusterScopedResources().Patch(ctx, nodeName(i), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("ClusterScopedResource %s spec.resourcesFilter.memory=%t: %w", nodeName(i), enabled, err)
	}
	return nil
}

// setSoakTaint adds or removes soakTaint (NoSchedule) on node i.
func setSoakTaint(ctx context.Context, client kubernetes.Interface, i int, on bool) error {
	node, err := client.CoreV1().Nodes().Get(ctx, nodeName(i), metav1.GetOptions{})
	if err != nil {
		return err
	}
	var taints []corev1.Taint
	for _, tn := range node.Spec.Taints {
		if tn.Key != soakTaint {
			taints = append(taints, tn)
		}
	}
	if on {
		taints = append(taints, corev1.Taint{Key: soakTaint, Value: "true", Effect: corev1.TaintEffectNoSchedule})
	}
	node.Spec.Taints = taints
	if _, err := client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("node %s spec.taints (%s=%t): %w", node.Name, soakTaint, on, err)
	}
	return nil
}

func scaleBurst(ctx context.Context, client kubernetes.Interface, ns string, replicas int) error {
	patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas))
	if _, err := client.AppsV1().Deployments(ns).Patch(ctx, "burst", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("Deployment %s/burst spec.replicas=%d: %w", ns, replicas, err)
	}
	return nil
}

// soakSample is one sample of the soak: the descheduler's cycle count and every series' value.
type soakSample struct {
	cycle  float64
	values map[string]float64
	// The names of the Reservations live and of the PodMigrations Succeeded at the sample.
	reservations, succeeded []string
	// byMetric is, per binary, the number of samples of each metric name its /metrics exports;
	// families, per binary, each metric family's series and label cardinalities.
	byMetric map[string]map[string]int
	families map[string]map[string]metricFamily
	// The live Reservations and PodMigrations by phase; the age of the oldest finished reservation's
	// completionTime, and the finished reservations with none yet.
	reservationPhases, migrationPhases map[string]int
	oldestFinished                     time.Duration
	unstamped                          int
}

func (s soakSample) String() string {
	var b strings.Builder
	for _, name := range soakSeries {
		fmt.Fprintf(&b, "%s %.0f, ", name, s.values[name])
	}
	fmt.Fprintf(&b, "Reservations by phase %s (oldest finished one completed %s ago, %d finished without completionTime), PodMigrations by phase %s",
		phaseString(s.reservationPhases), s.oldestFinished.Round(time.Second), s.unstamped, phaseString(s.migrationPhases))
	return b.String()
}

// phaseString lists the counts by phase, in the phases' order.
func phaseString(by map[string]int) string {
	var names []string
	for name := range by {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		fmt.Fprintf(&b, "%s %d ", name, by[name])
	}
	if b.Len() == 0 {
		return "none"
	}
	return "[" + strings.TrimSpace(b.String()) + "]"
}

// soakSeries are the series whose slopes the soak reports, in order.
var soakSeries = []string{
	"accord-scheduler RSS MiB", "accord-scheduler goroutines", "accord-scheduler metric series", "accord-scheduler metric series with open labels",
	"accord-descheduler RSS MiB", "accord-descheduler goroutines", "accord-descheduler metric series", "accord-descheduler metric series with open labels",
	"apiserver watches", "live Reservations", "live PodMigrations", "soft-eviction annotations",
}

// takeSoakSample reads each binary's RSS (VmRSS), its goroutines (the total of its pprof goroutine
// profile) and the number of samples its /metrics exports; the apiserver's open watches (apiserver_longrunning_requests{verb="WATCH"},
// every client's: the binaries', the controllers', the node simulator's and the test's); the live
// Reservations and PodMigrations; and the pods annotated for soft eviction.
func takeSoakSample(ctx context.Context, client kubernetes.Interface, accord accordclient.Interface, scrapers map[string]*metricsScraper, pids map[string]int, pods *podCounter, cycle float64) (soakSample, error) {
	s := soakSample{cycle: cycle, values: map[string]float64{}, byMetric: map[string]map[string]int{}, families: map[string]map[string]metricFamily{},
		reservationPhases: map[string]int{}, migrationPhases: map[string]int{}}
	for name, sc := range scrapers {
		m, err := sc.get(ctx)
		if err != nil {
			return s, fmt.Errorf("%s /metrics: %w", name, err)
		}
		rss, err := procRSS(pids[name])
		if err != nil {
			return s, err
		}
		// accord-descheduler's /metrics has no go_* collector: both counts come from pprof.
		g, err := sc.goroutines(ctx)
		if err != nil {
			return s, fmt.Errorf("%s goroutines: %w", name, err)
		}
		s.values[name+" RSS MiB"] = mib(rss)
		s.values[name+" goroutines"] = float64(g)
		s.values[name+" metric series"] = float64(len(m))
		s.byMetric[name] = m.countByName()
		s.families[name] = m.families()
		s.values[name+" metric series with open labels"] = float64(openSeries(s.families[name]))
	}
	raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return s, fmt.Errorf("kube-apiserver /metrics: %w", err)
	}
	m, err := parseSamples(strings.NewReader(string(raw)))
	if err != nil {
		return s, err
	}
	s.values["apiserver watches"] = m.sum("apiserver_longrunning_requests", `verb="WATCH"`)
	rs, err := accord.SchedulingV1alpha1().Reservations("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, err
	}
	s.values["live Reservations"] = float64(len(rs.Items))
	now := time.Now()
	for _, r := range rs.Items {
		s.reservations = append(s.reservations, r.Namespace+"/"+r.Name)
		s.reservationPhases[phaseOr(string(r.Status.Phase))]++
		switch {
		case !r.Status.Phase.Finished():
		case r.Status.CompletionTime == nil:
			s.unstamped++
		default:
			s.oldestFinished = max(s.oldestFinished, now.Sub(r.Status.CompletionTime.Time))
		}
	}
	pms, err := accord.SchedulingV1alpha1().PodMigrations("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, err
	}
	s.values["live PodMigrations"] = float64(len(pms.Items))
	for _, p := range pms.Items {
		s.migrationPhases[phaseOr(string(p.Status.Phase))]++
		if p.Status.Phase == schedv1alpha1.PodMigrationSucceeded {
			s.succeeded = append(s.succeeded, p.Namespace+"/"+p.Name)
		}
	}
	s.values["soft-eviction annotations"] = float64(pods.annotated())
	return s, nil
}

func phaseOr(phase string) string {
	if phase == "" {
		return "(none)"
	}
	return phase
}

func lastCycles(series []soakSample) int {
	if len(series) == 0 {
		return 0
	}
	return int(series[len(series)-1].cycle)
}

// soakSlope is one series' least-squares line over the samples after the warm-up.
type soakSlope struct {
	name string
	// per100 is the slope per 100 cycles; se its standard error; sd the residuals' standard
	// deviation (the series' noise around the line); mean the series' mean; span the cycles the
	// fit covers.
	per100, se, sd, mean, span float64
	n                          int
	// note qualifies a growing series' verdict (a metric series total whose open part is flat).
	note string
}

// flat: the line's change over the run is within twice the series' noise around it.
func (s soakSlope) flat() bool { return math.Abs(s.per100*s.span/100) <= 2*s.sd }

func (s soakSlope) String() string {
	verdict := "flat (change over the run within 2 sd of the noise)"
	if !s.flat() {
		verdict = "GROWS"
		if s.per100 < 0 {
			verdict = "shrinks"
		}
		verdict += " (change over the run beyond 2 sd of the noise)"
		verdict += s.note
	}
	return fmt.Sprintf("%+.3f per 100 cycles (±%.3f, 2 standard errors), mean %.2f, noise sd %.3f, change over %.0f cycles %+.3f: %s",
		s.per100, 2*s.se, s.mean, s.sd, s.span, s.per100*s.span/100, verdict)
}

// soakWarmup is the share of the samples left out of the fit: the caches fill and the heap grows
// to its working size during the first cycles.
const soakWarmup = 0.1

// soakSlopes fits a line to each series against the cycle count, the first soakWarmup of the
// samples left out.
func soakSlopes(series []soakSample) []soakSlope {
	skip := int(float64(len(series)) * soakWarmup)
	fit := series[skip:]
	var out []soakSlope
	for _, name := range soakSeries {
		xs, ys := make([]float64, len(fit)), make([]float64, len(fit))
		for i, s := range fit {
			xs[i], ys[i] = s.cycle, s.values[name]
		}
		out = append(out, linearFit(name, xs, ys))
	}
	// A binary's metric series total that grows while its open part is flat grows by new values
	// of bounded labels only.
	for i := range out {
		if !strings.HasSuffix(out[i].name, " metric series") || out[i].flat() {
			continue
		}
		for _, o := range out {
			if o.name == out[i].name+" with open labels" && o.flat() {
				out[i].note = ": only new values of bounded labels (its series with open labels are flat), not a leak"
			}
		}
	}
	return out
}

// linearFit is the ordinary least-squares line of ys against xs.
func linearFit(name string, xs, ys []float64) soakSlope {
	s := soakSlope{name: name, n: len(xs)}
	if len(xs) < 3 {
		return s
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(len(xs))
	my /= float64(len(ys))
	var sxx, sxy float64
	for i := range xs {
		sxx += (xs[i] - mx) * (xs[i] - mx)
		sxy += (xs[i] - mx) * (ys[i] - my)
	}
	s.mean, s.span = my, xs[len(xs)-1]-xs[0]
	if sxx == 0 {
		return s
	}
	b := sxy / sxx
	var rss float64
	for i := range xs {
		r := ys[i] - (my + b*(xs[i]-mx))
		rss += r * r
	}
	s.sd = math.Sqrt(rss / float64(len(xs)-2))
	s.se = s.sd / math.Sqrt(sxx) * 100
	s.per100 = b * 100
	return s
}

// TestLinearFit: the slope and the noise of a known line with alternating noise; a flat noisy
// series is flat and a growing one is not.
func TestLinearFit(t *testing.T) {
	var xs, flatYs, growYs []float64
	for i := 0; i < 100; i++ {
		x := float64(i * 10)
		noise := 1.0
		if i%2 == 1 {
			noise = -1
		}
		xs = append(xs, x)
		flatYs = append(flatYs, 50+noise)
		growYs = append(growYs, 50+x/100*3+noise)
	}
	f := linearFit("flat", xs, flatYs)
	if math.Abs(f.per100) > 0.01 || math.Abs(f.sd-1) > 0.02 || !f.flat() {
		t.Errorf("flat series: %s", f)
	}
	g := linearFit("grows", xs, growYs)
	if math.Abs(g.per100-3) > 0.01 || g.flat() || g.se <= 0 {
		t.Errorf("growing series (3 per 100 cycles): %s", g)
	}
}

// TestSoakSlopesBoundedGrowth: a metric series total that grows is said to grow by bounded labels
// only when its open part is flat, and is a plain GROWS when the open part grows too.
func TestSoakSlopesBoundedGrowth(t *testing.T) {
	for _, openGrows := range []bool{false, true} {
		var series []soakSample
		for i := 0; i < 50; i++ {
			noise := float64(i%2) - 0.5
			open := 18 + noise
			if openGrows {
				open += float64(i)
			}
			series = append(series, soakSample{cycle: float64(i * 10), values: map[string]float64{
				"accord-scheduler metric series": 2500 + float64(i)*5 + noise, "accord-scheduler metric series with open labels": open}})
		}
		for _, f := range soakSlopes(series) {
			if f.name != "accord-scheduler metric series" {
				continue
			}
			if f.flat() || (f.note != "") == openGrows || !strings.Contains(f.String(), "GROWS") {
				t.Errorf("open labels grow %t: %s", openGrows, f)
			}
		}
	}
}

// TestMetricFamilies: samples are grouped by family (a histogram's parts together) with their
// label cardinalities; a family with a label outside soakBoundedLabels is open.
func TestMetricFamilies(t *testing.T) {
	m := samples{
		`scheduler_plugin_execution_duration_seconds_bucket{extension_point="Filter",plugin="A",status="Success",le="0.1"} 3`,
		`scheduler_plugin_execution_duration_seconds_bucket{extension_point="Filter",plugin="B",status="Success",le="0.1"} 3`,
		`scheduler_plugin_execution_duration_seconds_sum{extension_point="Filter",plugin="A",status="Success"} 0.5`,
		`accord_descheduler_pods_evicted_total{namespace="soak",node="n-1",plugin="P",profile="move",result="success"} 2`,
		`leaky_total{pod="a-1",reason="x, \"quoted\""} 1`,
		`leaky_total{pod="a-2",reason="y"} 1`,
		`go_goroutines 12`,
	}
	f := m.families()
	p := f["scheduler_plugin_execution_duration_seconds"]
	if p.series != 3 || p.open || p.labels["plugin"] != 2 || p.labels["le"] != 1 || p.labels["status"] != 1 {
		t.Errorf("histogram family %+v", p)
	}
	if e := f["accord_descheduler_pods_evicted_total"]; e.series != 1 || e.open || e.labels["node"] != 1 {
		t.Errorf("evictions family %+v", e)
	}
	if l := f["leaky_total"]; l.series != 2 || !l.open || l.labels["pod"] != 2 || l.labels["reason"] != 2 {
		t.Errorf("open family %+v", l)
	}
	if g := f["go_goroutines"]; g.series != 1 || g.open || len(g.labels) != 0 {
		t.Errorf("unlabelled family %+v", g)
	}
	if n := openSeries(f); n != 2 {
		t.Errorf("open series %d, want 2", n)
	}
	if _, l := splitSample(m[4]); len(l) != 2 || l[1] != [2]string{"reason", `x, "quoted"`} {
		t.Errorf("labels of %s: %q", m[4], l)
	}
}

// goroutines reads the total of the process's goroutine profile (/debug/pprof/goroutine?debug=1,
// served with --profiling).
func (s *metricsScraper) goroutines(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/debug/pprof/goroutine?debug=1", s.port), nil)
	if err != nil {
		return 0, err
	}
	resp, err := (&http.Client{Transport: s.tr}).Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /debug/pprof/goroutine: %s", resp.Status)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("GET /debug/pprof/goroutine: %w", err)
	}
	var n int
	if _, err := fmt.Sscanf(line, "goroutine profile: total %d", &n); err != nil {
		return 0, fmt.Errorf("GET /debug/pprof/goroutine: first line %q: %w", line, err)
	}
	return n, nil
}

// countByName counts the samples of each metric name (a histogram's _bucket, _sum and _count apart).
func (s samples) countByName() map[string]int {
	out := map[string]int{}
	for _, line := range s {
		if i := strings.IndexAny(line, "{ "); i > 0 {
			out[line[:i]]++
		}
	}
	return out
}

// metricFamily is one metric family of an exposition (a histogram's _bucket, _sum and _count
// together): its series and, per label name, how many values it takes.
type metricFamily struct {
	series int
	labels map[string]int
	// open: a label whose name is not in soakBoundedLabels.
	open bool
}

// soakBoundedLabels are the label names whose values come from sets the soak's cluster and the
// binaries' configuration bound: buckets and quantiles (fixed per family); plugins, extension
// points, profiles, statuses, results, reasons, verdicts, phases, kinds, events and queueing hints
// (the configuration and the code); the apiserver's host, verbs, methods, codes and resources;
// work queue names; the nodes and namespaces of the cluster (accord_descheduler_pods_evicted_total
// has one series per node a pod was evicted from, the upstream descheduler's shape). New values
// of these are new members of a bounded set, not a leak; a series with any other label name is
// "open" and counted in the "metric series with open labels" series, whose growth is not explained
// by a bound.
var soakBoundedLabels = map[string]bool{
	"le": true, "quantile": true,
	"plugin": true, "extension_point": true, "profile": true, "status": true, "result": true, "reason": true, "verdict": true,
	"phase": true, "kind": true, "event": true, "hint": true, "operation": true, "queue": true, "type": true, "attempts": true,
	"host": true, "verb": true, "method": true, "code": true, "resource": true, "group": true, "version": true, "scope": true,
	"name": true, "stage": true, "deprecated_version": true, "stability_level": true,
	"node": true, "namespace": true,
}

// families groups the samples by family, with the distinct values of each label.
func (s samples) families() map[string]metricFamily {
	values := map[string]map[string]map[string]bool{}
	out := map[string]metricFamily{}
	for _, line := range s {
		name, labels := splitSample(line)
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			name = strings.TrimSuffix(name, suffix)
		}
		f := out[name]
		f.series++
		if values[name] == nil {
			values[name] = map[string]map[string]bool{}
		}
		for _, l := range labels {
			if values[name][l[0]] == nil {
				values[name][l[0]] = map[string]bool{}
			}
			values[name][l[0]][l[1]] = true
			if !soakBoundedLabels[l[0]] {
				f.open = true
			}
		}
		out[name] = f
	}
	for name, f := range out {
		f.labels = map[string]int{}
		for l, vs := range values[name] {
			f.labels[l] = len(vs)
		}
		out[name] = f
	}
	return out
}

// splitSample returns a sample line's metric name and its labels (name, value).
func splitSample(line string) (string, [][2]string) {
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return line, nil
	}
	name := line[:i]
	if line[i] != '{' {
		return name, nil
	}
	var labels [][2]string
	rest := line[i+1:]
	for {
		rest = strings.TrimLeft(rest, ", ")
		eq := strings.IndexByte(rest, '=')
		if rest == "" || rest[0] == '}' || eq < 0 || eq+1 >= len(rest) || rest[eq+1] != '"' {
			return name, labels
		}
		key := rest[:eq]
		rest = rest[eq+2:]
		var v strings.Builder
		j := 0
		for ; j < len(rest) && rest[j] != '"'; j++ {
			if rest[j] == '\\' && j+1 < len(rest) {
				j++
			}
			v.WriteByte(rest[j])
		}
		labels = append(labels, [2]string{key, v.String()})
		if j >= len(rest) {
			return name, labels
		}
		rest = rest[j+1:]
	}
}

// openSeries counts the series of the families with a label outside soakBoundedLabels.
func openSeries(fams map[string]metricFamily) int {
	n := 0
	for _, f := range fams {
		if f.open {
			n += f.series
		}
	}
	return n
}

// familyGrowth lists the families with more series in to than in from, most added first, each with
// its label cardinalities at the end and whether its labels are all bounded.
func familyGrowth(from, to map[string]metricFamily) string {
	type grown struct {
		name string
		n    int
	}
	var g []grown
	for name, f := range to {
		if d := f.series - from[name].series; d > 0 {
			g = append(g, grown{name, d})
		}
	}
	if len(g) == 0 {
		return "none"
	}
	sort.Slice(g, func(i, j int) bool { return g[i].n > g[j].n || g[i].n == g[j].n && g[i].name < g[j].name })
	var b strings.Builder
	for i, x := range g {
		if i == 12 {
			fmt.Fprintf(&b, "; and %d more", len(g)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		f := to[x.name]
		var ls []string
		for l, n := range f.labels {
			ls = append(ls, fmt.Sprintf("%s %d", l, n))
		}
		sort.Strings(ls)
		kind := "bounded labels"
		if f.open {
			kind = "OPEN labels"
		}
		fmt.Fprintf(&b, "%s +%d to %d (%s: %s)", x.name, x.n, f.series, kind, strings.Join(ls, ", "))
	}
	return b.String()
}

// takeHeapProfiles saves each binary's heap profile, after a garbage collection, to
// dir/<binary>-<tag>.heap.
func takeHeapProfiles(ctx context.Context, ports map[string]int, dir, tag string) error {
	for name, port := range ports {
		if err := fetchProfile(ctx, port, "heap?gc=1", dir, name+"-"+tag+".heap"); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// logHeapGrowth logs the binary's heap in use at both profiles and the top of their difference
// (go tool pprof -diff_base), one line each.
func logHeapGrowth(t *testing.T, ctx context.Context, dir, name string, from float64, to int) {
	t.Helper()
	base, end := filepath.Join(dir, name+"-warm.heap"), filepath.Join(dir, name+"-end.heap")
	pprof := func(args ...string) ([]string, error) {
		out, err := exec.CommandContext(ctx, "go", append([]string{"tool", "pprof", "-sample_index=inuse_space", "-top"}, args...)...).Output()
		if err != nil {
			return nil, fmt.Errorf("go tool pprof %s: %w", strings.Join(args, " "), err)
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n"), nil
	}
	total := func(file string) string {
		lines, err := pprof("-nodecount=1", file)
		if err != nil {
			return err.Error()
		}
		for _, l := range lines {
			if i := strings.Index(l, " of "); i >= 0 && strings.HasPrefix(l, "Showing nodes") {
				return strings.TrimSuffix(l[i+4:], " total")
			}
		}
		return "?"
	}
	t.Logf("%s heap in use (after a GC): %s at cycle %.0f, %s at cycle %d; the top of the difference (go tool pprof -diff_base, profiles in %s):",
		name, total(base), from, total(end), to, dir)
	lines, err := pprof("-nodecount=15", "-diff_base="+base, end)
	if err != nil {
		t.Logf("%s heap difference: %v", name, err)
		return
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "File:") || strings.HasPrefix(l, "Type:") || strings.HasPrefix(l, "Time:") || strings.HasPrefix(l, "Duration:") {
			continue
		}
		t.Logf("%s heap growth: %s", name, l)
	}
}
