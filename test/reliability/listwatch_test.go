package reliability

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

// The apiserver fails every pod List and Watch for 5 s while the descheduler's informers start: the
// informers retry with back-off (a handful of attempts, not a hot loop), sync once the apiserver
// answers again, and the descheduler then evicts as usual.
func TestPodListFailuresRetriedWithBackoff(t *testing.T) {
	const outage = 5 * time.Second
	ctx := context.Background()
	c := newCluster(t, "listfail", "n1")
	pod := c.create(c.newPod("after-outage", c.node("n1"), nil))[0]
	proxy := newFaultProxy(t)
	var (
		mu       sync.Mutex
		failing  = true
		attempts int
	)
	proxy.setInject(func(r *http.Request) int {
		// The informer's initial List, or the watch that streams it (client-go's WatchList).
		if r.Method != http.MethodGet || r.URL.Path != "/api/v1/pods" {
			return 0
		}
		mu.Lock()
		defer mu.Unlock()
		if !failing {
			return 0
		}
		attempts++
		return http.StatusInternalServerError
	})
	start := time.Now()
	recovered := make(chan time.Time, 1)
	timer := time.AfterFunc(outage, func() {
		mu.Lock()
		failing = false
		mu.Unlock()
		recovered <- time.Now()
	})
	t.Cleanup(func() { timer.Stop() })
	// Returns once the informers synced (it fails the test if they do not).
	d := buildDescheduler(t, c.writePolicy(evictionPolicy("listfail")), proxy.config())
	synced := time.Now()
	var recoveredAt time.Time
	select {
	case recoveredAt = <-recovered:
	default:
		t.Fatalf("informers synced %s after start, while pod lists still failed", synced.Sub(start))
	}
	mu.Lock()
	n := attempts
	mu.Unlock()
	// client-go's reflector backs off from 800 ms, doubling, jittered; each try is a streamed list
	// (WatchList) and its fallback List: a few requests in 5 s, not a hot loop.
	if n < 2 || n > 12 {
		t.Errorf("%d pod List/Watch attempts during a %s outage, want a few retries with back-off", n, outage)
	}
	if err := d.Profiles()[0].Evictor().Evict(ctx, pod, framework.EvictOptions{PluginName: "Reliability", Reason: "after outage"}); err != nil {
		t.Errorf("eviction after the outage: %v", err)
	}
	figure(t, "list_failure_backoff", "%d pod List/Watch attempts during a %s outage; caches synced %.1fs after the apiserver answered again", n, outage, synced.Sub(recoveredAt).Seconds())
}
