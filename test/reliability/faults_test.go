package reliability

import (
	"context"
	"net/http"
	"testing"
	"time"

	"k8s.io/component-base/metrics/testutil"

	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/podlifetime"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
)

// The apiserver answers an eviction with 429, 500, 504 (its own request timeout) or not at all: the
// cycle reports the failure, never deletes the pod instead, never counts it as evicted, and the
// next cycle tries again and evicts it once the apiserver answers.
func TestEvictionFailuresRetriedNextCycle(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, "faults", "n1")
	proxy := newFaultProxy(t)
	// Created before the descheduler starts, so its first cycle sees it.
	pod := c.create(c.newPod("victim", c.node("n1"), nil))[0]
	d := buildDescheduler(t, c.writePolicy("profiles:\n"+profile("faults", "PodLifeTime", "states: [Running]")), proxy.config())
	key := c.ns + "/" + pod.Name
	counter := func(result string) float64 {
		v, _ := testutil.GetCounterMetricValue(d.Metrics().PodsEvicted.WithLabelValues(result, podlifetime.Name, "faults", c.ns, pod.Spec.NodeName))
		return v
	}
	deletesBefore := proxy.deletes()
	faults := []struct {
		name string
		code int
	}{
		{"429 TooManyRequests", http.StatusTooManyRequests},
		{"500 InternalError", http.StatusInternalServerError},
		{"504 Timeout", http.StatusGatewayTimeout},
		{"no answer", hang},
	}
	for i, f := range faults {
		proxy.setInject(func(r *http.Request) int {
			if p, ok := evictionTarget(r); ok && p == key {
				return f.code
			}
			return 0
		})
		// A cycle that does not end by itself when the apiserver does not answer: the interval's
		// deadline ends it, as the next tick would.
		cycleCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		d.RunCycle(cycleCtx)
		cancel()
		if g, err := gone(ctx, pod); err != nil || g {
			t.Fatalf("%s: pod gone=%v (err %v) after a refused eviction", f.name, g, err)
		}
		if got := counter(metrics.ResultError); got != float64(i+1) {
			t.Errorf("%s: pods_evicted{result=error} = %v, want %d", f.name, got, i+1)
		}
		if got := counter(metrics.ResultSuccess); got != 0 {
			t.Errorf("%s: pods_evicted{result=success} = %v, want 0", f.name, got)
		}
		if n := d.Limiter().Total(); n != 0 {
			t.Errorf("%s: limiter counts %d evictions after the failure, want 0", f.name, n)
		}
	}
	if n := proxy.deletes() - deletesBefore; n != 0 {
		t.Errorf("%d pod DELETE requests reached the apiserver, want none (no fallback to a delete)", n)
	}
	proxy.setInject(nil)
	d.RunCycle(ctx)
	if g, err := gone(ctx, pod); err != nil || !g {
		t.Fatalf("pod not evicted by the cycle after the faults (gone=%v, err %v); answers %v", g, err, proxy.answers())
	}
	if got := counter(metrics.ResultSuccess); got != 1 {
		t.Errorf("pods_evicted{result=success} = %v, want 1", got)
	}
	figure(t, "eviction_faults", "%d faulty cycles (429, 500, 504, no answer): %d deletes, %v successes counted before the apiserver answered, %v errors counted; evicted in cycle %d (answers %v)",
		len(faults), proxy.deletes()-deletesBefore, counter(metrics.ResultSuccess)-1, counter(metrics.ResultError), len(faults)+1, proxy.answers()[key])
}
