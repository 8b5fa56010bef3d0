package scale

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/accord-sched/accord/test/harness"
)

// eventPolicy is the policy of manifests/descheduler/configmap.yaml as users run it in the
// event-triggered mode: NodeCRDResourceFit for the pods of accord-scheduler, DefaultEvictor with
// nodeFit, and SchedulerSimulation (simulating accord-scheduler's configuration) before every
// eviction. Left out: LowNodeLoad (a balance plugin, which only periodic cycles run) and
// DefaultEvictor's minPodAge (the population is minutes old). The limits are raised so they never
// hold an eviction back: the figure is the latency, not the caps (the shipped 2 per node would
// spread a node's violators over the event mode's one-minute limit windows).
const eventPolicy = `apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
maxNoOfPodsToEvictPerNode: 1000000
maxNoOfPodsToEvictPerNamespace: 1000000
maxNoOfPodsToEvictTotal: 1000000
profiles:
- name: default
  pluginConfig:
  - name: DefaultEvictor
    args:
      nodeFit: true
  - name: NodeCRDResourceFit
    args:
      schedulerNames: [accord-scheduler]
  plugins:
    filter:
      enabled: [DefaultEvictor]
    preEvictionFilter:
      enabled: [DefaultEvictor, SchedulerSimulation]
    deschedule:
      enabled: [NodeCRDResourceFit]
`

// eventTrials is how many ClusterScopedResource changes TestDeschedulerEvent makes: 5 at the smoke
// size, ACCORD_SCALE_EVENT_TRIALS (default 20) at cluster scale.
func eventTrials(t *testing.T, big bool) int {
	if !big {
		return 5
	}
	return envInt(t, "ACCORD_SCALE_EVENT_TRIALS", 20)
}

// TestDeschedulerEvent measures the event-triggered mode as a user runs it: the real
// accord-descheduler (not dry-run, --event-driven, --descheduling-interval=0: one cycle at start,
// then only the controllers) over the descheduler population of the size (Nodes nodes, BoundPods
// bound pods of accord-scheduler), on each population of the size, each on its own control plane.
// Each trial makes one node's ClusterScopedResource stop enabling memory, which every pod requests,
// so every pod on that node becomes a violator, and measures from the update's response to each
// violator's eviction, as seen by a watch of the pods: the moment the apiserver accepted the
// Eviction and set the pod's deletionTimestamp (there is no kubelet to delete it), which is when
// the pod is Terminating for every client (kubectl, endpoints, its controller). The trials run one
// after another, each on a quiet descheduler (more than SchedulerSimulation's one-second cycle gap
// after the previous one's last eviction, so each starts a fresh simulation cycle, snapshot update
// included). It prints the latencies over all evicted violators of all trials and asserts only
// correctness: no pod was evicted twice or without violating, and every violator was evicted or,
// on the heterogeneous population (whose spread constraints, anti-affinity and loaded nodes can
// leave a replacement nowhere to go), held back by SchedulerSimulation (its decision line).
//
// The pods are owned by controllers that do not exist (no controller runs): the DefaultEvictor
// evicts owned pods, and SchedulerSimulation predicts the replacement from the pod itself; nothing
// creates one, so an evicted pod stays Terminating and its room is not taken again.
func TestDeschedulerEvent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary and starts a control plane")
	}
	sz, big := scaleSize(t)
	trials := eventTrials(t, big)
	if trials*5 > sz.Nodes {
		t.Fatalf("%d trials need at least %d nodes, have %d", trials, trials*5, sz.Nodes)
	}
	// ACCORD_SCALE_DESCHEDULER_BIN runs another build (a baseline's, for an A/B) instead of this tree's.
	deschedBin := os.Getenv("ACCORD_SCALE_DESCHEDULER_BIN")
	if deschedBin == "" {
		deschedBin = harness.BuildBinary(t, "github.com/accord-sched/accord/cmd/descheduler")
	} else {
		t.Logf("accord-descheduler: %s (ACCORD_SCALE_DESCHEDULER_BIN)", deschedBin)
	}
	for _, pop := range sz.Populations {
		t.Run(pop.String(), func(t *testing.T) { eventPopulation(t, pop, sz, big, trials, deschedBin) })
	}
}

// eventPopulation is TestDeschedulerEvent on one population.
func eventPopulation(t *testing.T, pop population, sz size, big bool, trials int, deschedBin string) {
	ctx := context.Background()
	c := startCluster(t, ctx, pop, sz.Nodes)
	client, accord, kubeconfig := c.client, c.accord, c.kubeconfig
	start := time.Now()
	ns := "event"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := createBoundPods(ctx, client, pop, ns, "accord-scheduler", sz.BoundPods, sz.Nodes); err != nil {
		t.Fatal(err)
	}
	// The simulated scheduler's LoadAware scores by fresh NodeMetrics, as in a live cluster.
	if err := refreshNodeMetrics(ctx, accord, pop, sz.Nodes); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bound Running pods created in %s", sz.BoundPods, time.Since(start).Round(time.Millisecond))

	// Every eviction from now on is seen, the descheduler's start-up cycle's included.
	w := watchEvictions(t, ctx, client, ns)

	_, schedulerConfig := schedulerConfigs(t, kubeconfig)
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policy, []byte(eventPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	port := harness.FreePort(t)
	args := []string{"--kubeconfig=" + kubeconfig, "--policy-config-file=" + policy,
		"--scheduler-config-file=" + schedulerConfig, "--descheduling-interval=0", "--event-driven",
		"--client-connection-qps=5000", "--client-connection-burst=5000", "-v=2",
		// NodeCRDResourceFit's controller logs its re-check of a node at 3 (the accounting's start).
		"--vmodule=plugin=3",
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port),
		// The scraper below calls without credentials (loopback only).
		"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics,/debug/pprof/*"}
	dir := pprofDir()
	if dir != "" {
		args = append(args, "--profiling")
	}
	procCtx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	start = time.Now()
	decisions := newDecisionLog()
	proc := exec.CommandContext(procCtx, deschedBin, args...)
	proc.Stdout, proc.Stderr = decisions, decisions
	proc.Env = deschedulerEnv(deschedulerGOGCs(t)[0])
	// ACCORD_SCALE_DESCHEDULER_LOG_DIR: the whole log, with gctrace, saved for looking at.
	if logDir := os.Getenv("ACCORD_SCALE_DESCHEDULER_LOG_DIR"); logDir != "" {
		path := filepath.Join(logDir, fmt.Sprintf("descheduler-event-%s-%s.log", pop, start.Format("150405")))
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Close() })
		out := io.MultiWriter(decisions, f)
		proc.Stdout, proc.Stderr = out, out
		proc.Env = append(proc.Env, "GODEBUG=gctrace=1")
		t.Logf("accord-descheduler: log in %s", path)
	}
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = proc.Process.Kill()
		_ = proc.Wait()
		if t.Failed() {
			t.Logf("accord-descheduler output (the last lines):\n%s", decisions.tail())
		}
	})
	scrape := newMetricsScraper(port)
	t.Cleanup(scrape.close)
	// Ready for the trials once the start-up cycle is done (its cycles_total is 1).
	var scrapeErr error
	if err := harness.WaitFor(ctx, 10*time.Minute, func(ctx context.Context) (bool, error) {
		m, err := scrape.get(ctx)
		scrapeErr = err
		return err == nil && m.sum("accord_descheduler_cycles_total", "") >= 1, nil
	}); err != nil {
		t.Fatalf("accord-descheduler: no start-up cycle done: %v (last scrape: %v)", err, scrapeErr)
	}
	t.Logf("accord-descheduler started, synced and ran its start-up cycle in %s", time.Since(start).Round(time.Millisecond))
	if n := w.count(); n != 0 {
		t.Fatalf("the start-up cycle evicted %d pods; no pod violated anything yet", n)
	}

	cpu0, err := procCPU(proc.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	cpuProfile := make(chan error, 1)
	if dir != "" {
		go func() {
			cpuProfile <- fetchProfile(ctx, port, fmt.Sprintf("profile?seconds=%d", int(profileSeconds(t).Seconds())), dir, "descheduler-event.cpu.pprof")
		}()
	}

	// The trials: one node each, every fifth a heavy node (four shares of pods, see boundNodeOf),
	// the others light ones, as in the population.
	stride := sz.Nodes / trials / 5 * 5
	violators := map[string]bool{}
	var latencies []time.Duration
	held := 0
	trialTimeout := time.Minute
	if big {
		trialTimeout = 10 * time.Minute
	}
	for k := 0; k < trials; k++ {
		if k > 0 {
			// A quiet moment longer than SchedulerSimulation's cycle gap (1 s) before the next
			// change, so its first simulation starts a new cycle, as a lone change would.
			time.Sleep(1100 * time.Millisecond)
		}
		node := k*stride + k%5
		if pop.controlPlane(node) {
			node-- // a light node; a control-plane-like one has no ClusterScopedResource
		}
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", nodeName(node)).String()})
		if err != nil {
			t.Fatal(err)
		}
		var mine []string
		for _, p := range pods.Items {
			// Every pod of the population requests memory: each one on the node violates once its
			// ClusterScopedResource stops enabling it.
			if _, ok := p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory]; ok && p.DeletionTimestamp == nil {
				mine = append(mine, p.Name)
				violators[p.Name] = true
			}
		}
		if len(mine) == 0 {
			t.Fatalf("trial %d: node %s holds no pod: the population gives it no violator", k, nodeName(node))
		}
		if err := disableMemory(ctx, accord, node); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		// Settled: every violator evicted, or (heterogeneous) held back by the simulation.
		settled := func() int {
			n := 0
			for _, name := range mine {
				if w.at(name) != (time.Time{}) || pop == heterogeneous && decisions.isBlocked(ns+"/"+name) {
					n++
				}
			}
			return n
		}
		if err := harness.WaitFor(ctx, trialTimeout, func(context.Context) (bool, error) { return settled() == len(mine), nil }); err != nil {
			t.Fatalf("trial %d (node %s): %d of %d violators evicted, %d settled: %v", k, nodeName(node), w.countOf(mine), len(mine), settled(), err)
		}
		var last time.Duration
		evicted := 0
		for _, name := range mine {
			if at := w.at(name); at != (time.Time{}) {
				d := at.Sub(t0)
				latencies = append(latencies, d)
				last = max(last, d)
				evicted++
			}
		}
		held += len(mine) - evicted
		t.Logf("trial %d: node %s, %d violators, %d evicted (the last %s after the ClusterScopedResource update), %d held back by the simulation",
			k, nodeName(node), len(mine), evicted, last.Round(time.Millisecond), len(mine)-evicted)
		// Where the time went, from the descheduler's lines (-v=2) and the watch.
		t.Logf("trial %d: %s", k, decisions.trial(t0, nodeName(node), ns, mine, w))
	}
	cpu1, err := procCPU(proc.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	rss, err := procPeakRSS(proc.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}

	if dir != "" {
		if err := fetchProfile(ctx, port, "heap?gc=1", dir, "descheduler-event.heap.pprof"); err != nil {
			t.Errorf("descheduler heap profile: %v", err)
		}
		if err := <-cpuProfile; err != nil {
			t.Errorf("descheduler CPU profile: %v", err)
		}
		t.Logf("descheduler: profiles in %s", dir)
	}

	// Correctness: the evicted pods are exactly the violators, each evicted once by the descheduler.
	if extra := w.notIn(violators); len(extra) > 0 {
		t.Errorf("%d pods that violated nothing were evicted: %v", len(extra), extra)
	}
	// The watch may report a deletion before the eviction call has returned to the descheduler and
	// its counter has moved (the trials log negative "eviction to the watch" times), so the counter
	// is read until it agrees, for at most 10 s.
	var (
		m          samples
		ok, failed float64
	)
	if err := harness.WaitFor(ctx, 10*time.Second, func(ctx context.Context) (bool, error) {
		got, err := scrape.get(ctx)
		if err != nil {
			return false, err
		}
		m = got
		ok, failed = m.sum("accord_descheduler_pods_evicted_total", `result="success"`), m.sum("accord_descheduler_pods_evicted_total", `result="error"`)
		return ok == float64(w.count()) && failed == 0, nil
	}); err != nil && m == nil {
		t.Fatalf("accord-descheduler /metrics: %v", err)
	}
	if ok != float64(w.count()) || failed != 0 {
		t.Errorf("accord-descheduler counted %v successful and %v failed evictions after 10 s; want %d (the pods seen evicted) and 0", ok, failed, w.count())
	}
	if len(latencies) == 0 {
		t.Fatalf("no violator of the %d was evicted", len(violators))
	}
	slices.Sort(latencies)
	figure(t, "descheduler-event population=%s nodes=%d pods=%d (%s): trials=%d violators=%d evicted=%d held=%d p50=%s p99=%s max=%s, peak RSS %.0f MiB",
		pop, sz.Nodes, sz.BoundPods, deschedulerGC(deschedulerGOGCs(t)[0]), trials, len(violators), len(latencies), held, pct(latencies, 50), pct(latencies, 99), latencies[len(latencies)-1].Round(time.Millisecond), mib(rss))
	// Where a violator's time goes: the descheduler's CPU over the trials and its own measure of
	// SchedulerSimulation's prediction, both per violator (the rest is waiting, mostly on the
	// apiserver: the Eviction API plugin reads the pod back, then posts the Eviction).
	sims := m.sum("accord_descheduler_simulation_duration_seconds_count", "")
	simMean := 0.0
	if sims > 0 {
		simMean = m.sum("accord_descheduler_simulation_duration_seconds_sum", "") / sims * 1000
	}
	t.Logf("descheduler per violator: %.1f ms CPU (%.1f s over the trials), %.0f simulations of %.2f ms on average",
		float64((cpu1-cpu0).Milliseconds())/float64(len(latencies)), (cpu1 - cpu0).Seconds(), sims, simMean)
	if !big {
		t.Log("smoke size; run `make bench-scale` for the cluster-scale figure")
	}
}

// decisionLog is accord-descheduler's output: it remembers the pods SchedulerSimulation blocked
// (its decision lines), the timeline of each node's re-check and each pod's decision and eviction
// (their klog timestamps, for the per-trial accounting), and the last lines, for a failure.
type decisionLog struct {
	mu      sync.Mutex
	partial []byte
	last    []string
	blocked map[string]bool
	// rechecked: when NodeCRDResourceFit's controller began re-checking each node (its lines).
	rechecked map[string][]time.Time
	// decided and evicted: each pod's decision line (with its simulation's duration) and its
	// "Evicted pod" line (with the eviction's duration: limits, then the evict plugin's API calls).
	decided map[string]timedLine
	evicted map[string]timedLine
}

// timedLine is a log line's time and the duration it reports.
type timedLine struct {
	at time.Time
	d  time.Duration
}

func newDecisionLog() *decisionLog {
	return &decisionLog{blocked: map[string]bool{}, rechecked: map[string][]time.Time{}, decided: map[string]timedLine{}, evicted: map[string]timedLine{}}
}

var (
	blockedPod = regexp.MustCompile(`"Eviction blocked by the scheduler simulation".* pod="([^"]+)"`)
	// The klog text header: severity, month and day, time with microseconds (local time).
	klogHeader = regexp.MustCompile(`^[IWEF](\d{4} \d{2}:\d{2}:\d{2}\.\d{6}) `)
	podKey     = regexp.MustCompile(` pod="([^"]+)"`)
	nodeKey    = regexp.MustCompile(` node="([^"]+)"`)
	simKey     = regexp.MustCompile(` simulation="?([0-9.]+[a-zµ]+)"?`)
	durKey     = regexp.MustCompile(` duration="?([0-9.hms]+[a-zµ]*)"?`)
)

// lineTime is the time in a klog text header (this year, local time, as klog writes it).
func lineTime(line string) (time.Time, bool) {
	m := klogHeader.FindStringSubmatch(line)
	if m == nil {
		return time.Time{}, false
	}
	t, err := time.ParseInLocation("0102 15:04:05.000000", m[1], time.Local)
	if err != nil {
		return time.Time{}, false
	}
	now := time.Now()
	return time.Date(now.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.Local), true
}

// submatch is re's first group in line, "" when it does not match.
func submatch(re *regexp.Regexp, line string) string {
	if m := re.FindStringSubmatch(line); m != nil {
		return m[1]
	}
	return ""
}

// timeline records line's time in the timeline when it is one of the lines the accounting reads.
func (d *decisionLog) timeline(line string) {
	decided := strings.Contains(line, `"Eviction admitted by the scheduler simulation"`) || strings.Contains(line, `"Eviction blocked by the scheduler simulation"`)
	evicted := strings.Contains(line, `"Evicted pod"`)
	recheck := strings.Contains(line, `"ClusterScopedResource changed; re-checking the node's pods"`)
	if !decided && !evicted && !recheck {
		return
	}
	at, ok := lineTime(line)
	if !ok {
		return
	}
	switch {
	case recheck:
		if node := submatch(nodeKey, line); node != "" {
			d.rechecked[node] = append(d.rechecked[node], at)
		}
	case decided:
		sim, _ := time.ParseDuration(submatch(simKey, line))
		if pod := submatch(podKey, line); pod != "" {
			d.decided[pod] = timedLine{at, sim}
		}
	case evicted:
		dur, _ := time.ParseDuration(submatch(durKey, line))
		if pod := submatch(podKey, line); pod != "" {
			d.evicted[pod] = timedLine{at, dur}
		}
	}
}

func (d *decisionLog) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.partial = append(d.partial, p...)
	for {
		i := bytes.IndexByte(d.partial, '\n')
		if i < 0 {
			break
		}
		line := string(d.partial[:i])
		d.partial = d.partial[i+1:]
		if m := blockedPod.FindStringSubmatch(line); m != nil {
			d.blocked[m[1]] = true
		}
		d.timeline(line)
		if d.last = append(d.last, line); len(d.last) > 200 {
			d.last = d.last[len(d.last)-100:]
		}
	}
	return len(p), nil
}

func (d *decisionLog) isBlocked(pod string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.blocked[pod]
}

// trialTimes is where one trial's time went, from the descheduler's log lines and the test's
// watch (all on this machine's clock).
type trialTimes struct {
	// toRecheck: from the ClusterScopedResource update's response to the controller's re-check of
	// the node (watch delivery, the event handler, the workqueue).
	toRecheck time.Duration
	// toFirstDecision: from the re-check to the first pod's decision line (listing the node's pods,
	// the simulation cycle's start, the first pod's filters and simulation).
	toFirstDecision time.Duration
	// decisions: from the first decision line to the last; sims: the simulations' durations in it
	// (the first pod's excluded: it is in toFirstDecision).
	decisions, sims time.Duration
	// evictWait: from a pod's decision to the start of its eviction (a free slot of the ones in
	// flight, the goroutine's start), the mean and max; evictCall: the eviction (limits, the
	// evict plugin's read of the pod and the Eviction), mean and max; watchLag: from the eviction's
	// end to the test's watch seeing the pod terminating, mean and max.
	evictWait, evictWaitMax, evictCall, evictCallMax, watchLag, watchLagMax time.Duration
	// pods: the trial's decided pods; complete: every evicted pod had its lines.
	pods     int
	complete bool
}

// trial is the accounting of the trial that updated node's ClusterScopedResource at t0, over its
// pods (names in ns), w seeing their evictions.
func (d *decisionLog) trial(t0 time.Time, node, ns string, pods []string, w *evictionWatch) trialTimes {
	d.mu.Lock()
	defer d.mu.Unlock()
	var tt trialTimes
	tt.complete = true
	recheck := time.Time{}
	for _, at := range d.rechecked[node] {
		// The controller's first re-check after the update (a line may precede t0 by the time the
		// update's response took to come back).
		if at.After(t0.Add(-time.Second)) && (recheck.IsZero() || at.Before(recheck)) {
			recheck = at
		}
	}
	var first, last time.Time
	var firstSim time.Duration
	var waits, calls, lags []time.Duration
	for _, name := range pods {
		dec, ok := d.decided[ns+"/"+name]
		if !ok {
			tt.complete = false
			continue
		}
		tt.pods++
		tt.sims += dec.d
		if first.IsZero() || dec.at.Before(first) {
			first, firstSim = dec.at, dec.d
		}
		if dec.at.After(last) {
			last = dec.at
		}
		seen := w.at(name)
		if seen.IsZero() {
			continue
		}
		ev, ok := d.evicted[ns+"/"+name]
		if !ok {
			tt.complete = false
			continue
		}
		waits = append(waits, ev.at.Add(-ev.d).Sub(dec.at))
		calls = append(calls, ev.d)
		lags = append(lags, seen.Sub(ev.at))
	}
	if recheck.IsZero() || first.IsZero() {
		tt.complete = false
		return tt
	}
	tt.toRecheck, tt.toFirstDecision = recheck.Sub(t0), first.Sub(recheck)
	tt.decisions, tt.sims = last.Sub(first), tt.sims-firstSim
	tt.evictWait, tt.evictWaitMax = meanMax(waits)
	tt.evictCall, tt.evictCallMax = meanMax(calls)
	tt.watchLag, tt.watchLagMax = meanMax(lags)
	return tt
}

func meanMax(ds []time.Duration) (mean, maxD time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
		maxD = max(maxD, d)
	}
	return sum / time.Duration(len(ds)), maxD
}

func (tt trialTimes) String() string {
	ms := func(d time.Duration) string { return d.Round(100 * time.Microsecond).String() }
	perDecision := time.Duration(0)
	if tt.pods > 1 {
		perDecision = tt.decisions / time.Duration(tt.pods-1)
	}
	s := fmt.Sprintf("to the re-check %s, to the first decision %s, then %d decisions in %s (%s each; their simulations %s), decision to eviction start %s (max %s), eviction %s (max %s), eviction to the watch %s (max %s)",
		ms(tt.toRecheck), ms(tt.toFirstDecision), max(tt.pods-1, 0), ms(tt.decisions), ms(perDecision), ms(tt.sims),
		ms(tt.evictWait), ms(tt.evictWaitMax), ms(tt.evictCall), ms(tt.evictCallMax), ms(tt.watchLag), ms(tt.watchLagMax))
	if !tt.complete {
		s += " (some log lines missing)"
	}
	return s
}

func (d *decisionLog) tail() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return strings.Join(d.last, "\n")
}

// pct is the p-th percentile (nearest rank) of sorted, rounded to the millisecond.
func pct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	return sorted[max(i-1, 0)].Round(time.Millisecond)
}

// evictionWatch records, from a watch of a namespace's pods, when each pod was first seen evicted
// (deletionTimestamp set, or deleted).
type evictionWatch struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

// watchEvictions watches the pods of ns from now until the test ends.
func watchEvictions(t *testing.T, ctx context.Context, client kubernetes.Interface, ns string) *evictionWatch {
	t.Helper()
	list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return client.CoreV1().Pods(ns).Watch(ctx, o)
	}}
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, lw)
	if err != nil {
		t.Fatal(err)
	}
	w := &evictionWatch{seen: map[string]time.Time{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range rw.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || !(ev.Type == watch.Deleted || ev.Type == watch.Modified && pod.DeletionTimestamp != nil) {
				continue
			}
			now := time.Now()
			w.mu.Lock()
			if _, dup := w.seen[pod.Name]; !dup {
				w.seen[pod.Name] = now
			}
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		rw.Stop()
		<-done
	})
	return w
}

func (w *evictionWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.seen)
}

func (w *evictionWatch) at(name string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[name]
}

func (w *evictionWatch) countOf(names []string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, name := range names {
		if _, ok := w.seen[name]; ok {
			n++
		}
	}
	return n
}

func (w *evictionWatch) allSeen(names []string) bool { return w.countOf(names) == len(names) }

// notIn returns the evicted pods not in want, sorted.
func (w *evictionWatch) notIn(want map[string]bool) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for name := range w.seen {
		if !want[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// metricsScraper reads accord-descheduler's /metrics (served without authentication, with a
// self-signed certificate on loopback).
type metricsScraper struct {
	port int
	tr   *http.Transport
}

func newMetricsScraper(port int) *metricsScraper {
	return &metricsScraper{port: port, tr: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the process's self-signed loopback certificate
		DisableKeepAlives: true,
	}}
}

func (s *metricsScraper) close() { s.tr.CloseIdleConnections() }

// samples is a text exposition: the sample lines.
type samples []string

func (s *metricsScraper) get(ctx context.Context) (samples, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", s.port), nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Transport: s.tr}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return parseSamples(resp.Body)
}

// parseSamples reads a text exposition's sample lines.
func parseSamples(r io.Reader) (samples, error) {
	var out samples
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out, sc.Err()
}

// sum adds the values of the samples of metric name whose labels contain label (all when "").
func (s samples) sum(name, label string) float64 {
	total := 0.0
	for _, line := range s {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') || !strings.Contains(rest, label) {
			continue
		}
		i := strings.LastIndexByte(rest, ' ')
		if v, err := strconv.ParseFloat(rest[i+1:], 64); err == nil {
			total += v
		}
	}
	return total
}

// The accounting reads klog's text lines: the header's time, the pod and node, the simulation's and
// the eviction's durations; a trial's figures come out of them and the watch's times.
func TestDecisionLogTrial(t *testing.T) {
	d := newDecisionLog()
	now := time.Now()
	hdr := func(at time.Time) string { return "I" + at.Format("0102 15:04:05.000000") + "   4242 plugin.go:123] " }
	t0 := now.Add(-10 * time.Second).Truncate(time.Microsecond) // klog writes microseconds
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	lines := []string{
		hdr(at(30)) + `"ClusterScopedResource changed; re-checking the node's pods" queue="NodeCRDResourceFit" node="node-00007"`,
		hdr(at(80)) + `"Eviction admitted by the scheduler simulation" logger="SchedulerSimulation" pod="event/a" node="node-00007" verdict="evict" predictedNode="node-00100" score=312 simulation="40ms"`,
		hdr(at(120)) + `"Eviction admitted by the scheduler simulation" logger="SchedulerSimulation" pod="event/b" node="node-00007" verdict="evict" predictedNode="node-00200" score=300 simulation="30ms"`,
		hdr(at(140)) + `"Evicted pod" pod="event/a" node="node-00007" profile="default" plugin="NodeCRDResourceFit" reason="x" prediction="y" duration="50ms"`,
		hdr(at(160)) + `"Eviction blocked by the scheduler simulation" logger="SchedulerSimulation" pod="event/c" node="node-00007" verdict="blocked" predictedNode="" score=0 simulation="35.5ms" message="0/500 nodes are available"`,
		hdr(at(200)) + `"Evicted pod" pod="event/b" node="node-00007" profile="default" plugin="NodeCRDResourceFit" reason="x" prediction="y" duration="70ms"`,
	}
	if _, err := d.Write([]byte(strings.Join(lines, "\n") + "\n")); err != nil {
		t.Fatal(err)
	}
	if !d.isBlocked("event/c") || d.isBlocked("event/a") {
		t.Fatalf("blocked: %v, want event/c only", d.blocked)
	}
	w := &evictionWatch{seen: map[string]time.Time{"a": at(145), "b": at(210)}}
	got := d.trial(t0, "node-00007", "event", []string{"a", "b", "c"}, w)
	want := trialTimes{
		toRecheck: 30 * time.Millisecond, toFirstDecision: 50 * time.Millisecond,
		decisions: 80 * time.Millisecond, sims: 65500 * time.Microsecond, // b's and c's
		// a: decided at 80, eviction from 90 (140-50); b: decided at 120, from 130 (200-70).
		evictWait: 10 * time.Millisecond, evictWaitMax: 10 * time.Millisecond,
		evictCall: 60 * time.Millisecond, evictCallMax: 70 * time.Millisecond,
		watchLag: 7500 * time.Microsecond, watchLagMax: 10 * time.Millisecond,
		pods: 3, complete: true,
	}
	if got != want {
		t.Fatalf("trial accounting:\n got %+v\nwant %+v", got, want)
	}
	t.Logf("as logged: %s", got)
}
