// Package console drives accord-console in a real browser: it starts the playground (which runs the
// console in-process) and Debian's Chromium headless through chromedp, and asserts on the page's
// DOM. Any console error or uncaught exception on the page fails the test. Screenshots go to
// $ACCORD_ARTIFACTS (default: the test's temporary directory).
package console

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/demo/playground"
	"github.com/accord-sched/accord/test/harness"
	"github.com/accord-sched/accord/test/harness/browser"
)

func TestMain(m *testing.M) { harness.MainCheckingLeaks(m) }

func TestConsoleInChromium(t *testing.T) {
	browser.Require(t)
	artifacts := os.Getenv("ACCORD_ARTIFACTS")
	if artifacts == "" {
		artifacts = t.TempDir()
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	p, err := playground.Start(ctx, playground.Options{Dir: t.TempDir(), ConsoleAddress: "127.0.0.1:0", DeschedulingInterval: 5 * time.Second})
	if err != nil {
		t.Fatalf("starting the playground: %v", err)
	}
	defer p.Stop()
	if p.ConsoleURL == "" {
		t.Fatal("the playground started no console")
	}
	t.Logf("console at %s", p.ConsoleURL)

	// A pod no node can take: accord-scheduler reports why in a FailedScheduling Event.
	tooBig := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "too-big"}, Spec: corev1.PodSpec{
		SchedulerName: "accord-scheduler",
		Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"example.com/memory": resource.MustParse("100")},
			Limits:   corev1.ResourceList{"example.com/memory": resource.MustParse("100")},
		}}},
	}}
	if _, err := p.Env.Client.CoreV1().Pods("demo").Create(ctx, tooBig, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	b := browser.Start(ctx, t)
	defer b.Close()
	b.Do("open the console", 30*time.Second, chromedp.Navigate(p.ConsoleURL))
	b.Do("the page goes live", 30*time.Second, chromedp.WaitVisible(chromedp.CSS(`#status[data-state="live"]`)))
	b.Do("six node cards", 30*time.Second, chromedp.WaitReady(chromedp.CSS(`.node[data-node="node-6"]`)))

	// The sample workload lands: memory-hungry pods on node-5 (its CR enables example.com/memory
	// with the best score).
	b.Do("a memory-hungry pod shows on node-5", 60*time.Second,
		chromedp.WaitReady(chromedp.CSS(`.node[data-node="node-5"] li[data-pod^="demo/memory-hungry-"]`)))
	b.Do("too-big shows as pending with the scheduler's reason", 60*time.Second,
		chromedp.WaitReady(chromedp.CSS(`#pending tr[data-pod="demo/too-big"]`)))
	reason := b.WaitText("too-big's reason", 60*time.Second, `#pending tr[data-pod="demo/too-big"] td.reason`, "nodes are available")
	t.Logf("pending demo/too-big: %s", reason)
	// The attention summary leads with it, grouped under the scheduler's reason.
	group := b.WaitText("too-big's group in the attention summary", 30*time.Second, `#attention-pending tr[data-pods~="demo/too-big"] td.reason`, "nodes are available")
	t.Logf("attention: pending because %s", group)
	b.Screenshot(filepath.Join(artifacts, "console-before.png"))

	// Toggle example.com/memory off on node-5 by clicking it: the descheduler evicts its
	// memory-hungry pods, the timeline shows why and where the simulation predicted the
	// replacement, and the pods leave node-5's card.
	b.Click("click example.com/memory on node-5", 20*time.Second,
		`.node[data-node="node-5"] button.res[data-resource="example.com/memory"][data-enabled="true"]`,
		b.Present(`.node[data-node="node-5"] .res[data-resource="example.com/memory"][data-enabled="false"]`))
	b.Do("an eviction row by NodeCRDResourceFit", 90*time.Second,
		chromedp.WaitReady(chromedp.CSS(`#evictions tr[data-plugin="NodeCRDResourceFit"]`)))
	// The newest row shows the simulation's prediction once the evictions are done (a row held by the
	// workload budget while a sibling migrates may be the newest until then). It went without one in
	// 2 of 5 runs when an EvictionHeld Event was recorded on a pod just evicted (a cycle's stale copy
	// of it, its own eviction counted in its workload's budget), newer than its Descheduled one. On
	// failure the whole table is printed.
	defer func() {
		if t.Failed() {
			t.Logf("eviction timeline: %s", b.Text(`#evictions tbody`))
		}
	}()
	predicted := b.WaitText("the newest eviction's predicted node", 30*time.Second, `#evictions tr[data-plugin="NodeCRDResourceFit"] td.predicted`, "node-2")
	t.Logf("eviction predicted: %s", predicted)
	b.Do("the memory-hungry pods leave node-5", 90*time.Second,
		chromedp.WaitNotPresent(chromedp.CSS(`.node[data-node="node-5"] li[data-pod^="demo/memory-hungry-"]`)))
	b.WaitText("the replacement landed on node-2", 60*time.Second, `#evictions tr[data-plugin="NodeCRDResourceFit"] td.replacement`, "node-2")

	// A PodMigration (the how-to moves two at once; TestPlayground runs that): a web pod off node-1
	// moves there reservation-first, and the migrations table follows it to Succeeded with its
	// reservation and replacement.
	webs, err := p.Env.Client.CoreV1().Pods("demo").List(ctx, metav1.ListOptions{LabelSelector: "app=web", FieldSelector: "spec.nodeName!=node-1"})
	if err != nil || len(webs.Items) == 0 {
		t.Fatalf("no web pod off node-1: %v", err)
	}
	if _, err := p.Env.Accord.SchedulingV1alpha1().PodMigrations("demo").Create(ctx, &schedv1alpha1.PodMigration{
		ObjectMeta: metav1.ObjectMeta{Name: "move-web"},
		Spec:       schedv1alpha1.PodMigrationSpec{PodName: webs.Items[0].Name, TargetNode: "node-1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b.Do("the PodMigration reaches Succeeded in the migrations table", 60*time.Second,
		chromedp.WaitReady(chromedp.CSS(`#migrations tr[data-migration="demo/move-web"][data-phase="Succeeded"]`)))
	moved := b.WaitText("the migration's replacement is on node-1", 10*time.Second, `#migrations tr[data-migration="demo/move-web"] td.replacement`, "node-1")
	t.Logf("PodMigration demo/move-web of %s: replacement %s", webs.Items[0].Name, moved)

	// Make node-6 hot from its card: its NodeMetric follows and its CPU bar goes over the threshold.
	b.Do("type 95 into node-6's cpu load", 10*time.Second,
		chromedp.SetValue(chromedp.CSS(`.loadctl[data-node="node-6"] input.cpu`), "95"))
	b.Click("set node-6's simulated load to 95% CPU", 20*time.Second, `.loadctl[data-node="node-6"] button.setload`,
		b.TextContains(`#message`, "set the simulated load of node-6"))
	b.Do("node-6's CPU bar goes over the threshold", 60*time.Second,
		chromedp.WaitReady(chromedp.CSS(`.node[data-node="node-6"] .loadrow[data-resource="cpu"] .bar.over`)))
	// node-6 now needs attention: it leads the summary as over its threshold.
	b.WaitText("node-6 needs attention", 30*time.Second, `#attention-nodes li[data-node="node-6"]`, "over cpu")
	// node-6's card was redrawn with its new load; the control kept what the user typed.
	typed := b.Value(`.loadctl[data-node="node-6"] input.cpu`)
	if typed != "95" {
		t.Errorf("node-6's cpu input holds %q after its card was redrawn, want the 95 the user typed", typed)
	}

	// Take example.com/memory from node-2 too: no node offers it any more, so the descheduler must
	// not evict the memory-hungry pods (their replacements could not run anywhere). Explain, which
	// runs accord-descheduler's own dry-run cycle, shows them as candidates it blocks.
	b.Click("click example.com/memory on node-2", 20*time.Second,
		`.node[data-node="node-2"] button.res[data-resource="example.com/memory"][data-enabled="true"]`,
		b.Present(`.node[data-node="node-2"] .res[data-resource="example.com/memory"][data-enabled="false"]`))
	b.Click("run explain", 20*time.Second, `#explain-run`, b.TextContains(`#explain-status`, ""))
	status := b.WaitText("explain finishes", 90*time.Second, `#explain-status`, "candidate pods")
	t.Logf("explain: %s", status)
	b.Do("explain blocks the memory-hungry pods on node-2", 10*time.Second,
		chromedp.WaitReady(chromedp.CSS(`#explain tr[data-verdict="blocked"][data-pod^="demo/memory-hungry-"]`)))
	blocked := b.WaitText("the blocker is named", 10*time.Second, `#explain tr[data-verdict="blocked"][data-pod^="demo/memory-hungry-"] td.blocked`, "")
	t.Logf("explain: memory-hungry blocked by %s", blocked)
	if !strings.Contains(b.Text(`.node[data-node="node-2"] ul.pods`), "demo/memory-hungry-") {
		t.Error("the memory-hungry pods left node-2 although no other node offers example.com/memory")
	}
	b.Screenshot(filepath.Join(artifacts, "console.png"))

	// The filters: the server sends only the view they ask for. A node's whole name shows that node
	// only; a namespace and a workload keep the nodes with such pods, listing only those.
	b.Do("filter the grid to node-2", 20*time.Second,
		chromedp.SendKeys(chromedp.CSS(`#filter-node`), "node-2"),
		chromedp.WaitNotPresent(chromedp.CSS(`.node[data-node="node-1"]`)),
		chromedp.WaitReady(chromedp.CSS(`.node[data-node="node-2"]`)))
	if info := b.Text(`#page-info`); !strings.Contains(info, "page 1 of 1 · 1 of 6 nodes") {
		t.Errorf("the pager with node=node-2 says %q, want page 1 of 1, 1 of 6 nodes", info)
	}
	b.Do("clear the filters", 20*time.Second, chromedp.Click(chromedp.CSS(`#filter-clear`)),
		chromedp.WaitReady(chromedp.CSS(`.node[data-node="node-1"]`)))
	b.Do("filter by namespace demo and workload memory-hungry", 20*time.Second,
		chromedp.SendKeys(chromedp.CSS(`#filter-namespace`), "demo"),
		chromedp.SendKeys(chromedp.CSS(`#filter-workload`), "memory-hungry"),
		chromedp.WaitNotPresent(chromedp.CSS(`.node li[data-pod^="demo/web-"]`)),
		chromedp.WaitReady(chromedp.CSS(`.node[data-node="node-2"] li[data-pod^="demo/memory-hungry-"]`)))
	if n := b.Count(`#nodes .node`); n != 1 {
		t.Errorf("%d node cards with the memory-hungry pods' filter, want node-2's only", n)
	}
	if stats := b.Text(`#stats`); !strings.Contains(stats, "last update") {
		t.Errorf("the header's update figures: %q", stats)
	}
}
