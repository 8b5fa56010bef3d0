package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/accord-sched/accord/pkg/console"
	"github.com/accord-sched/accord/test/harness"
	"github.com/accord-sched/accord/test/harness/browser"
)

// consoleUpdates is how many updates TestConsoleScale times.
const consoleUpdates = 7

// pageStat is one update as the page measured it (window.accordConsole.stats, performance.now()
// milliseconds since the page's navigation began).
type pageStat struct {
	Bytes    int     `json:"bytes"`
	Received float64 `json:"received"`
	Rendered float64 `json:"rendered"`
	Painted  float64 `json:"painted"`
	// Origin is performance.timeOrigin (Unix milliseconds), for the wall clock of the others.
	Origin float64 `json:"origin"`
}

// TestConsoleScale measures accord-console's page in Chromium against the scale benchmark's
// heterogeneous population (ACCORD_SCALE_NODES nodes, ACCORD_SCALE_BOUND_PODS bound pods, 1% of the
// nodes with violators, and pending pods): the console's time to ready (its informers' sync), the
// page's first render (navigation to the first view painted) and its size, then, for each of
// consoleUpdates ClusterScopedResource changes on a node of the page, the repaint (the update's
// arrival to the next frame after it was drawn), the time from the API write to that frame, and the
// bytes pushed. It asserts that each change reaches the page and that the page holds one page of
// node cards; it prints FIGURE lines and asserts no speed.
func TestConsoleScale(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane and Chromium")
	}
	browser.Require(t)
	sz, big := scaleSize(t)
	pop := heterogeneous
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := startCluster(t, ctx, pop, sz.Nodes)

	start := time.Now()
	for _, ns := range []string{"bound", "pending"} {
		if _, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := createBoundPods(ctx, c.client, pop, "bound", "accord-scheduler", sz.BoundPods, sz.Nodes); err != nil {
		t.Fatal(err)
	}
	pending := max(sz.BoundPods/1000, 10)
	if err := createPendingPods(ctx, c.client, pop, "pending", "no-scheduler", pending); err != nil {
		t.Fatal(err)
	}
	violating := max(sz.Nodes/100, 1)
	for i := range violating {
		if err := disableMemory(ctx, c.accord, i*5+1); err != nil {
			t.Fatal(err)
		}
	}
	// Creating the pods can take longer than a NodeMetric stays fresh.
	if err := refreshNodeMetrics(ctx, c.accord, pop, sz.Nodes); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bound and %d pending pods created, %d nodes with violators, in %s", sz.BoundPods, pending, violating, time.Since(start).Round(time.Millisecond))

	// The console, in this process, on the population (plain HTTP: loopback, without authentication).
	srv, err := console.New(ctx, console.Options{Kubeconfig: c.kubeconfig, BindAddress: "127.0.0.1:0", PlainHTTP: true, CacheSyncTimeout: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	serveCtx, stopServe := context.WithCancel(ctx)
	served := make(chan error, 1)
	start = time.Now()
	go func() { served <- srv.Serve(serveCtx) }()
	defer func() {
		stopServe()
		if err := <-served; err != nil {
			t.Errorf("the console: %v", err)
		}
	}()
	if err := harness.WaitFor(ctx, 10*time.Minute, func(ctx context.Context) (bool, error) {
		resp, err := http.Get(srv.URL() + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}); err != nil {
		t.Fatalf("the console never became ready: %v", err)
	}
	ready := time.Since(start)
	t.Logf("console ready (informers synced, first snapshot) in %s", ready.Round(time.Millisecond))

	b := browser.Start(ctx, t)
	defer b.Close()
	b.Do("open the console", 2*time.Minute, chromedp.Navigate(srv.URL()),
		chromedp.WaitVisible(chromedp.CSS(`#status[data-state="live"]`)),
		chromedp.WaitReady(chromedp.CSS(`.node[data-node="`+nodeName(0)+`"]`)))
	first := waitStats(t, b, 1)[0]
	if cards := b.Count(`#nodes .node`); cards != console.DefaultPageSize {
		t.Errorf("%d node cards on the page, want one page of %d", cards, console.DefaultPageSize)
	}
	attention := b.Text(`#attention-nodes h3`)
	t.Logf("attention: %s", attention)

	// Updates: a resource of a node on the page turned off, one node at a time.
	var repaint, endToEnd, drawn []float64
	var sizes []int
	for k := range consoleUpdates {
		i := k*3 + 2 // on the first page, none of them control-plane-like (no CR)
		before := len(waitStats(t, b, 1))
		wrote := time.Now()
		if err := disableResource(ctx, c, i, corev1.ResourceCPU); err != nil {
			t.Fatal(err)
		}
		b.Do(fmt.Sprintf("update %d: %s's cpu shows disabled", k+1, nodeName(i)), time.Minute,
			chromedp.WaitReady(chromedp.CSS(fmt.Sprintf(`.node[data-node=%q] .res[data-resource="cpu"][data-enabled="false"]`, nodeName(i)))))
		s := waitStats(t, b, before+1)[before]
		repaint = append(repaint, s.Painted-s.Received)
		drawn = append(drawn, s.Rendered-s.Received)
		endToEnd = append(endToEnd, s.Origin+s.Painted-float64(wrote.UnixNano())/1e6)
		sizes = append(sizes, s.Bytes)
	}
	figure(t, "console population=%s nodes=%d pods=%d (%d pending, %d nodes with violators): ready %.1fs, first render %.0f ms (%.1f KiB first view, %d node cards), update repaint median %.0f ms (max %.0f; drawing median %.0f ms), API write to repaint median %.0f ms (max %.0f), bytes pushed per update median %.1f KiB (max %.1f) over %d updates",
		pop, sz.Nodes, sz.BoundPods, pending, violating, ready.Seconds(), first.Painted, float64(first.Bytes)/1024, console.DefaultPageSize,
		median(repaint), slices.Max(repaint), median(drawn), median(endToEnd), slices.Max(endToEnd), median(float64s(sizes))/1024, float64(slices.Max(sizes))/1024, consoleUpdates)
	if !big {
		t.Log("smoke size; `make bench-console` measures at cluster scale")
	}
}

// disableResource turns resource off in node i's ClusterScopedResource.
func disableResource(ctx context.Context, c cluster, i int, resource corev1.ResourceName) error {
	client := c.accord.SchedulingV1alpha1().ClusterScopedResources()
	cr, err := client.Get(ctx, nodeName(i), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("ClusterScopedResource %s: %w", nodeName(i), err)
	}
	cr.Spec.ResourcesFilter[resource] = false
	if _, err := client.Update(ctx, cr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating ClusterScopedResource %s spec.resourcesFilter[%s]: %w", nodeName(i), resource, err)
	}
	return nil
}

// waitStats waits until the page has measured at least n updates, each painted, and returns them.
func waitStats(t *testing.T, b *browser.Browser, n int) []pageStat {
	t.Helper()
	var stats []pageStat
	err := harness.WaitFor(b.Ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		data, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(window.accordConsole.stats.map((s) => Object.assign({origin: performance.timeOrigin}, s)))`))
		if err != nil {
			return false, nil
		}
		if err := json.Unmarshal([]byte(data), &stats); err != nil {
			return false, err
		}
		return len(stats) >= n && !slices.ContainsFunc(stats, func(s pageStat) bool { return s.Painted == 0 }), nil
	})
	if err != nil {
		t.Fatalf("the page never measured %d updates (it has %d): %v", n, len(stats), err)
	}
	return stats
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func float64s(v []int) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}
