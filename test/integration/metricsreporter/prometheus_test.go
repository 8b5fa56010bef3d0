package metricsreporter

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/accord-sched/accord/apis/metricsreporter/v1alpha1"
	"github.com/accord-sched/accord/test/harness"
	"github.com/accord-sched/accord/test/promtest"
)

// TestPrometheus runs the Prometheus source with its default queries (node_exporter's
// node_cpu_seconds_total and MemTotal/MemAvailable, cAdvisor's container_cpu_usage_seconds_total
// and container_memory_working_set_bytes) against a real Prometheus scraping a target the test
// serves (CPU queries with a 5 s rate window): node a's NodeMetric shows 1.5 cores and 4 GiB in
// use, its pod 0.5 cores and 100 MiB.
func TestPrometheus(t *testing.T) {
	ctx := context.Background()
	ns := env.CreateNamespace(t, "mr-prom")
	nodes := newNodes(t, ns, "a")
	newPod(t, ns, "p1", nodes[0], "100m")
	target := promtest.NewTarget(t)
	const gi = 1 << 30
	target.Set("node_memory_MemTotal_bytes", 16*gi, "instance", nodes[0])
	target.Set("node_memory_MemAvailable_bytes", 12*gi, "instance", nodes[0])
	target.Set("container_memory_working_set_bytes", 100<<20, "namespace", ns, "pod", "p1", "container", "c")
	// CPU counters grow at 1.2 + 0.3 cores (user + system; idle is not counted) and 0.5 cores.
	start := time.Now()
	tick := func() {
		s := time.Since(start).Seconds() + 100
		target.Set("node_cpu_seconds_total", 1.2*s, "instance", nodes[0], "cpu", "0", "mode", "user")
		target.Set("node_cpu_seconds_total", 0.3*s, "instance", nodes[0], "cpu", "0", "mode", "system")
		target.Set("node_cpu_seconds_total", 5*s, "instance", nodes[0], "cpu", "0", "mode", "idle")
		target.Set("container_cpu_usage_seconds_total", 0.5*s, "namespace", ns, "pod", "p1", "container", "c")
	}
	tick()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				tick()
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	prom := promtest.Start(t, target.Addr())
	checkZeros := zeroWatch(t, nodes...)
	// The default CPU queries with a 5 s rate window instead of 1 m: rate() divides by the window,
	// so a 1 m window needs a minute of scrapes before it shows the real rate.
	short := func(q string) string { return strings.ReplaceAll(q, "[1m]", "[5s]") }
	startReporter(t, fmt.Sprintf("samplingPeriodSeconds: 1\ndefaultReportIntervalSeconds: 2\nstatistic: last\nsource:\n  type: Prometheus\n  prometheus:\n    url: %s\n    nodeCPUQuery: %q\n    podCPUQuery: %q\n",
		prom.URL, short(v1alpha1.DefaultNodeCPUQuery), short(v1alpha1.DefaultPodCPUQuery)))

	near := func(q float64, want float64) bool { return math.Abs(q-want) <= 0.1*want }
	var last string
	if err := harness.WaitFor(ctx, 60*time.Second, func(context.Context) (bool, error) {
		nm := getNM(t, nodes[0])
		if nm == nil || nm.Status.UpdateTime == nil || len(nm.Status.PodsUsage) != 1 {
			return false, nil
		}
		cpu, mem := nm.Status.NodeUsage[corev1.ResourceCPU], nm.Status.NodeUsage[corev1.ResourceMemory]
		pod := nm.Status.PodsUsage[0].Usage
		last = fmt.Sprintf("node %s/%s, pod %s/%s", cpu.String(), mem.String(), pod.Cpu().String(), pod.Memory().String())
		return near(cpu.AsApproximateFloat64(), 1.5) && mem.Value() == 4*gi &&
			near(pod.Cpu().AsApproximateFloat64(), 0.5) && pod.Memory().Value() == 100<<20, nil
	}); err != nil {
		t.Fatalf("NodeMetric from Prometheus: %v (last %s)", err, last)
	}
	checkZeros()
}
