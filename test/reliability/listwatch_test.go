package reliability

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/test/harness"
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

// The real accord-descheduler binary runs (cycles every second) through the fault proxy on a
// namespace of 200 pods; then, for 6 s, the proxy cuts every watch stream and fails every GET (list,
// watch, the cache gate's probe) with 500. The binary's log of that outage is bounded by the
// reflectors' back-off, not by the number of objects: at most 8 List/Watch failure lines per
// resource type in 6 s (client-go backs off from 800 ms, doubling), far fewer in all than the 200
// pods, and the skipped cycles are announced once ("Skipping descheduling cycle", at the default
// verbosity). Once the apiserver answers again the binary goes on (it logs the caches re-synced).
func TestListWatchFailuresLoggedOncePerInterval(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the descheduler binary")
	}
	const (
		outage  = 6 * time.Second
		objects = 200
	)
	ctx := context.Background()
	bin := harness.BuildBinary(t, "github.com/accord-sched/accord/cmd/descheduler")
	c := newCluster(t, "lwlog", "n1")
	for i := range objects {
		if _, err := env.Client.CoreV1().Pods(c.ns).Create(ctx, c.newPod(fmt.Sprintf("p%03d", i), c.node("n1"), nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	proxy := newFaultProxy(t)
	r := startReplica(t, bin, "descheduler", "--kubeconfig="+proxy.kubeconfig(t), "--policy-config-file="+c.writePolicy(evictionPolicy("lwlog")),
		"--descheduling-interval=1s", "--secure-port=0")
	started := regexp.MustCompile(`"Descheduler started"`)
	if err := harness.WaitFor(ctx, 60*time.Second, func(context.Context) (bool, error) { return len(r.times(started)) > 0, nil }); err != nil {
		t.Fatalf("descheduler not started: %v\n%s", err, r.tail(30))
	}
	time.Sleep(2 * time.Second) // a couple of cycles on synced caches

	var mu sync.Mutex
	failing := true
	proxy.setInject(func(req *http.Request) int {
		mu.Lock()
		defer mu.Unlock()
		if failing && req.Method == http.MethodGet {
			return http.StatusInternalServerError
		}
		return 0
	})
	begin := time.Now()
	cut := proxy.breakWatches()
	time.Sleep(outage)
	mu.Lock()
	failing = false
	mu.Unlock()
	end := time.Now()
	resynced := regexp.MustCompile(`"Caches re-synced; descheduling cycles resume"`)
	if err := harness.WaitFor(ctx, 60*time.Second, func(context.Context) (bool, error) {
		for _, at := range r.times(resynced) {
			if at.After(end) {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("descheduler did not resume after the outage: %v\n%s", err, r.tail(30))
	}

	// The failure lines read during the outage (and 1 s after, for lines still on their way).
	failure := regexp.MustCompile(`(?i)failed to (list|watch)|watch ended with error|Failed to watch`)
	kind := regexp.MustCompile(`\*v\d+(?:alpha\d+|beta\d+)?\.\w+`)
	perType := map[string]int{}
	total := 0
	r.mu.Lock()
	lines := append([]logLine(nil), r.lines...)
	r.mu.Unlock()
	skips := 0
	for _, l := range lines {
		if l.at.Before(begin) || l.at.After(end.Add(time.Second)) {
			continue
		}
		if strings.Contains(l.text, `"Skipping descheduling cycle: caches not re-synced"`) {
			skips++
		}
		if !failure.MatchString(l.text) {
			continue
		}
		total++
		perType[kind.FindString(l.text)]++
	}
	if total == 0 {
		t.Errorf("no List/Watch failure logged during a %s outage (%d watches cut)", outage, cut)
	}
	for typ, n := range perType {
		if n > 8 {
			t.Errorf("%d List/Watch failure lines for %q in %s, want at most 8 (one per back-off attempt)", n, typ, outage)
		}
	}
	if total >= objects/4 {
		t.Errorf("%d List/Watch failure lines for %d pods in %s: logged per object?", total, objects, outage)
	}
	if skips != 1 {
		t.Errorf("cycle skip logged %d times during the outage at the default verbosity, want once", skips)
	}
	maxPer := 0
	for _, n := range perType {
		maxPer = max(maxPer, n)
	}
	figure(t, "list_watch_failure_log", "%d failure lines in a %s List/Watch outage (%d resource types, at most %d for one; %d pods in the cache; %d watches cut), cycle skip logged %d time",
		total, outage, len(perType), maxPer, objects, cut, skips)
}
