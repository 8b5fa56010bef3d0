package reliability

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/descheduler/evictions"
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

// 1000 pods on 50 nodes become violators at once (every node's ClusterScopedResource stops enabling
// the CPU they request) while the event-triggered controller and periodic cycles both run under the
// safe default caps: every cycle's window stays within 50 evictions, every pod is evicted exactly
// once, and all 1000 are handled over the following cycles.
func TestBurstOfViolatorsWithinCaps(t *testing.T) {
	const (
		nodes       = 50
		podsPerNode = 20
		violators   = nodes * podsPerNode
	)
	ctx := context.Background()
	short := make([]string, nodes)
	for i := range short {
		short[i] = fmt.Sprintf("n%02d", i)
	}
	c := newCluster(t, "burst", short...)
	csr := func(name string, cpu bool) *schedv1alpha1.ClusterScopedResource {
		return &schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: map[corev1.ResourceName]bool{corev1.ResourceCPU: cpu}}}
	}
	for _, n := range c.nodes {
		if _, err := env.Accord.SchedulingV1alpha1().ClusterScopedResources().Create(ctx, csr(n, true), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = env.Accord.SchedulingV1alpha1().ClusterScopedResources().Delete(context.Background(), n, metav1.DeleteOptions{})
		})
	}
	for i := range violators {
		p := c.newPod(fmt.Sprintf("v%04d", i), c.nodes[i%nodes], nil)
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m")}
		if _, err := env.Client.CoreV1().Pods(c.ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := harness.WaitFor(ctx, 120*time.Second, func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		running := 0
		for i := range list.Items {
			if list.Items[i].Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == violators, nil
	}); err != nil {
		t.Fatalf("pods not running: %v", err)
	}

	proxy := newFaultProxy(t)
	// No limits in the policy: the safe defaults (2 per node, 50 per cycle) apply.
	d := buildDescheduler(t, c.writePolicy(`profiles:
- name: burst
  pluginConfig:
  - name: DefaultEvictor
  - name: NodeCRDResourceFit
  plugins:
    deschedule:
      enabled: [NodeCRDResourceFit]
    preEvictionFilter:
      disabled: [SchedulerSimulation]
`), proxy.config())
	if l := d.Limiter().Limits(); !l.Defaulted || *l.Total != evictions.DefaultMaxPodsToEvictTotal || *l.PerNode != evictions.DefaultMaxPodsToEvictPerNode {
		t.Fatalf("limits %+v, want the safe defaults", l)
	}
	runCtx, cancel := context.WithCancel(ctx)
	waitControllers := d.StartControllers(runCtx)
	defer func() { cancel(); waitControllers() }()
	d.RunCycle(runCtx) // nothing violates yet
	heap := heapPeak(t)
	start := time.Now()

	// The burst: every node's CR stops enabling CPU.
	for _, n := range c.nodes {
		if _, err := env.Accord.SchedulingV1alpha1().ClusterScopedResources().Patch(ctx, n, types.MergePatchType,
			[]byte(`{"spec":{"resourcesFilter":{"cpu":false}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Periodic cycles, each starting a new window of the caps (the controller evicts within the
	// window it runs in); the count of a window is the limiter's just before the next cycle resets it.
	var perCycle []int
	deadline := time.Now().Add(150 * time.Second)
	for {
		evicted := 0
		for pod := range proxy.answers() {
			if proxy.accepted(pod) > 0 {
				evicted++
			}
		}
		if evicted == violators || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond) // the event-triggered controller works between cycles
		perCycle = append(perCycle, d.Limiter().Total())
		d.RunCycle(runCtx)
	}
	perCycle = append(perCycle, d.Limiter().Total())
	elapsed := time.Since(start)
	peak := heap()

	answers := proxy.answers()
	evicted, repeats, maxWindow := 0, 0, 0
	for pod := range answers {
		switch n := proxy.accepted(pod); {
		case n == 1:
			evicted++
		case n > 1:
			repeats++
			t.Errorf("pod %s evicted %d times", pod, n)
		}
	}
	for i, n := range perCycle {
		maxWindow = max(maxWindow, n)
		if n > evictions.DefaultMaxPodsToEvictTotal {
			t.Errorf("window %d counted %d evictions, cap %d", i, n, evictions.DefaultMaxPodsToEvictTotal)
		}
	}
	if evicted != violators {
		t.Errorf("%d of %d violators evicted within 150 s", evicted, violators)
	}
	if minWindows := violators / evictions.DefaultMaxPodsToEvictTotal; len(perCycle) < minWindows {
		t.Errorf("%d violators handled in %d windows: more than %d per window", violators, len(perCycle), evictions.DefaultMaxPodsToEvictTotal)
	}
	figure(t, "burst_evictions_per_cycle", "max %d, %d windows for %d violators on %d nodes (caps 2/node, 50/cycle; event mode on), %d repeats, %.1fs", maxWindow, len(perCycle), evicted, nodes, repeats, elapsed.Seconds())
	figure(t, "burst_peak_heap", "%d MiB (whole test process, control plane included)", peak>>20)
}
