package reliability

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
	"github.com/accord-sched/accord/test/harness"
)

// heapPeak samples the process's heap in use every 100 ms until stopped and returns the largest.
// The process also runs the control plane, so the figure bounds the descheduler's share from above.
func heapPeak(t testing.TB) (stop func() uint64) {
	var (
		mu   sync.Mutex
		peak uint64
	)
	done, finished := make(chan struct{}), make(chan struct{})
	sample := func() {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		mu.Lock()
		peak = max(peak, m.HeapInuse)
		mu.Unlock()
	}
	go func() {
		defer close(finished)
		for {
			sample()
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	var once sync.Once
	end := func() { once.Do(func() { close(done); <-finished }) }
	t.Cleanup(end)
	return func() uint64 {
		end()
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// windowMarker is a plugin of the burst test's profile that does nothing but mark the start of each
// cycle (CycleHook.BeginCycle runs right after the cycle reset the limits): once every eviction the
// descheduler had in flight at the reset has ended, it re-opens the proxy to evictions, which the
// test closes at the end of each window to count it from outside.
type windowMarker struct{ begin func() }

func (w *windowMarker) Name() string { return "WindowMarker" }
func (w *windowMarker) Deschedule(context.Context, []*corev1.Node) *framework.Status {
	return nil
}
func (w *windowMarker) BeginCycle(context.Context) { w.begin() }
func (w *windowMarker) EndCycle(context.Context)   {}

// 1000 pods on 50 nodes, in two namespaces, become violators at once (every node's
// ClusterScopedResource stops enabling the CPU they request) while the event-triggered controller
// and periodic cycles both run under configured caps (2 per node, 20 per namespace, 30 in all per
// cycle). The evictions of each cycle's window are counted from outside the descheduler, from the
// apiserver's answers at the fault proxy: at the end of a window the proxy refuses evictions (429)
// until the next cycle has reset the limits, so every eviction the apiserver accepted belongs to the
// window it was sent in. Each window stays within every cap, every pod is evicted exactly once, and
// all 1000 are handled over the following cycles.
func TestBurstOfViolatorsWithinCaps(t *testing.T) {
	const (
		nodes        = 50
		podsPerNode  = 20
		violators    = nodes * podsPerNode
		capNode      = 2
		capNamespace = 20
		capTotal     = 30
	)
	ctx := context.Background()
	short := make([]string, nodes)
	for i := range short {
		short[i] = fmt.Sprintf("n%02d", i)
	}
	c := newCluster(t, "burst", short...)
	c.createCRs()
	namespaces := []string{c.ns, env.CreateNamespace(t, "burst-b")}
	nodeOf, nsOf := map[string]string{}, map[string]string{}
	for i := range violators {
		p := c.cpuPod(fmt.Sprintf("v%04d", i), c.nodes[i%nodes])
		p.Namespace = namespaces[i%len(namespaces)]
		if _, err := env.Client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		key := p.Namespace + "/" + p.Name
		nodeOf[key], nsOf[key] = p.Spec.NodeName, p.Namespace
	}
	if err := harness.WaitFor(ctx, 120*time.Second, func(ctx context.Context) (bool, error) {
		running := 0
		for _, ns := range namespaces {
			list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			for i := range list.Items {
				if list.Items[i].Status.Phase == corev1.PodRunning {
					running++
				}
			}
		}
		return running == violators, nil
	}); err != nil {
		t.Fatalf("pods not running: %v", err)
	}

	proxy := newFaultProxy(t)
	refuse := func(r *http.Request) int {
		if _, ok := evictionTarget(r); ok {
			return http.StatusTooManyRequests
		}
		return 0
	}
	var limiter *evictions.Limiter // the descheduler's, once built (the marker runs in its cycles)
	marker := runner.WithPlugin("WindowMarker", func(context.Context, k8sruntime.Object, framework.Handle) (framework.Plugin, error) {
		return &windowMarker{begin: func() {
			// An eviction reserved before the reset that has not reached the proxy yet would be
			// counted in the new window: let such stragglers end (refused) first. Once no eviction
			// is in flight, every eviction still to come was reserved in the new window. (A quiet
			// spell at the proxy is not enough: the evictor reads the pod between its reservation
			// and the Eviction, which on a loaded machine takes longer than any spell.)
			if err := harness.WaitFor(ctx, 10*time.Second, func(context.Context) (bool, error) { return limiter.InFlight() == 0, nil }); err != nil {
				t.Errorf("evictions of the previous window still in flight at a cycle's start: %v", err)
			}
			proxy.setInject(nil)
		}}, nil
	})
	d := buildDeschedulerWithPlugins(t, c.writePolicy(fmt.Sprintf(`maxNoOfPodsToEvictPerNode: %d
maxNoOfPodsToEvictPerNamespace: %d
maxNoOfPodsToEvictTotal: %d
profiles:
- name: burst
  pluginConfig:
  - name: DefaultEvictor
  - name: NodeCRDResourceFit
  plugins:
    deschedule:
      enabled: [WindowMarker, NodeCRDResourceFit]
    preEvictionFilter:
      disabled: [SchedulerSimulation]
`, capNode, capNamespace, capTotal)), proxy.config(), []runner.Option{marker})
	if len(d.Controllers()) != 1 {
		t.Fatalf("%d controllers, want NodeCRDResourceFit's", len(d.Controllers()))
	}
	limiter = d.Limiter()
	runCtx, cancel := context.WithCancel(ctx)
	waitControllers := d.StartControllers(runCtx)
	defer func() { cancel(); waitControllers() }()
	d.RunCycle(runCtx) // nothing violates yet; the first window opens
	heap := heapPeak(t)
	start := time.Now()

	// The burst: every node's CR stops enabling CPU.
	c.disableCPU(c.nodes...)
	// Periodic cycles, each opening a new window of the caps (the controller evicts within the
	// window it runs in). A window ends when the proxy starts refusing evictions and the ones already
	// sent are answered; what the apiserver accepted since the previous end is the window's.
	var windows []map[string]bool
	seen := map[string]bool{}
	deadline := time.Now().Add(150 * time.Second)
	for {
		time.Sleep(250 * time.Millisecond) // the event-triggered controller works between cycles
		proxy.setInject(refuse)
		if err := harness.WaitFor(ctx, 10*time.Second, func(context.Context) (bool, error) { return proxy.idle(), nil }); err != nil {
			t.Fatalf("evictions still in flight at the end of window %d: %v", len(windows), err)
		}
		w := map[string]bool{}
		for pod := range proxy.answers() {
			if proxy.accepted(pod) > 0 && !seen[pod] {
				w[pod], seen[pod] = true, true
			}
		}
		windows = append(windows, w)
		if len(seen) == violators || time.Now().After(deadline) {
			break
		}
		d.RunCycle(runCtx)
	}
	elapsed := time.Since(start)
	peak := heap()

	evicted, repeats, maxWindow, maxNode, maxNS := 0, 0, 0, 0, 0
	for pod := range proxy.answers() {
		switch n := proxy.accepted(pod); {
		case n == 1:
			evicted++
		case n > 1:
			repeats++
			t.Errorf("pod %s evicted %d times", pod, n)
		}
	}
	for i, w := range windows {
		perNode, perNS := map[string]int{}, map[string]int{}
		for pod := range w {
			perNode[nodeOf[pod]]++
			perNS[nsOf[pod]]++
		}
		maxWindow = max(maxWindow, len(w))
		if len(w) > capTotal {
			t.Errorf("window %d: %d evictions accepted by the apiserver, total cap %d", i, len(w), capTotal)
		}
		for n, k := range perNode {
			maxNode = max(maxNode, k)
			if k > capNode {
				t.Errorf("window %d: %d evictions from node %s, cap %d", i, k, n, capNode)
			}
		}
		for ns, k := range perNS {
			maxNS = max(maxNS, k)
			if k > capNamespace {
				t.Errorf("window %d: %d evictions from namespace %s, cap %d", i, k, ns, capNamespace)
			}
		}
	}
	if evicted != violators {
		t.Errorf("%d of %d violators evicted within 150 s", evicted, violators)
	}
	if minWindows := (violators + capTotal - 1) / capTotal; len(windows) < minWindows {
		t.Errorf("%d violators handled in %d windows: more than %d per window", violators, len(windows), capTotal)
	}
	figure(t, "burst_evictions_per_cycle", "max %d in a window (max %d per node, %d per namespace; caps 2/node, 20/namespace, 30/cycle; counted at the apiserver), %d windows for %d violators on %d nodes in 2 namespaces, event mode on, %d repeats, %.1fs",
		maxWindow, maxNode, maxNS, len(windows), evicted, nodes, repeats, elapsed.Seconds())
	figure(t, "burst_peak_heap", "%d MiB (whole test process, control plane included)", peak>>20)
}
