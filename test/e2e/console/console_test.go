// Package console drives accord-console in a real browser: it starts the playground (which runs the
// console in-process) and Debian's Chromium headless through chromedp, and asserts on the page's
// DOM. Any console error or uncaught exception on the page fails the test. Screenshots go to
// $ACCORD_ARTIFACTS (default: the test's temporary directory).
package console

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/demo/playground"
	"github.com/accord-sched/accord/test/harness"
)

// chromium is Debian's package (.ci/run installs it).
const chromium = "/usr/bin/chromium"

func TestMain(m *testing.M) { harness.MainCheckingLeaks(m) }

func TestConsoleInChromium(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing on CI (.ci/run installs Debian's chromium): %v", chromium, err)
		}
		t.Skipf("%s is missing (apt-get install chromium): %v", chromium, err)
	}
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

	b := startBrowser(ctx, t)
	defer b.close()
	b.do("open the console", 30*time.Second, chromedp.Navigate(p.ConsoleURL))
	b.do("the page goes live", 30*time.Second, chromedp.WaitVisible(chromedp.CSS(`#status[data-state="live"]`)))
	b.do("six node cards", 30*time.Second, chromedp.WaitReady(chromedp.CSS(`.node[data-node="node-6"]`)))

	// The sample workload lands: memory-hungry pods on node-5 (its CR enables example.com/memory
	// with the best score).
	b.do("a memory-hungry pod shows on node-5", 60*time.Second,
		chromedp.WaitReady(chromedp.CSS(`.node[data-node="node-5"] li[data-pod^="demo/memory-hungry-"]`)))
	b.do("too-big shows as pending with the scheduler's reason", 60*time.Second,
		chromedp.WaitReady(chromedp.CSS(`#pending tr[data-pod="demo/too-big"]`)))
	reason := b.waitText("too-big's reason", 60*time.Second, `#pending tr[data-pod="demo/too-big"] td.reason`, "nodes are available")
	t.Logf("pending demo/too-big: %s", reason)
	b.screenshot(filepath.Join(artifacts, "console-before.png"))

	// Toggle example.com/memory off on node-5 by clicking it: the descheduler evicts its
	// memory-hungry pods, the timeline shows why and where the simulation predicted the
	// replacement, and the pods leave node-5's card.
	b.click("click example.com/memory on node-5", 20*time.Second,
		`.node[data-node="node-5"] button.res[data-resource="example.com/memory"][data-enabled="true"]`,
		b.present(`.node[data-node="node-5"] .res[data-resource="example.com/memory"][data-enabled="false"]`))
	b.do("an eviction row by NodeCRDResourceFit", 90*time.Second,
		chromedp.WaitReady(chromedp.CSS(`#evictions tr[data-plugin="NodeCRDResourceFit"]`)))
	// The newest row shows the simulation's prediction once the evictions are done (a row held by the
	// workload budget while a sibling migrates may be the newest until then). It went without one in
	// 2 of 5 runs when an EvictionHeld Event was recorded on a pod just evicted (a cycle's stale copy
	// of it, its own eviction counted in its workload's budget), newer than its Descheduled one. On
	// failure the whole table is printed.
	defer func() {
		if t.Failed() {
			t.Logf("eviction timeline: %s", b.text(`#evictions tbody`))
		}
	}()
	predicted := b.waitText("the newest eviction's predicted node", 30*time.Second, `#evictions tr[data-plugin="NodeCRDResourceFit"] td.predicted`, "node-2")
	t.Logf("eviction predicted: %s", predicted)
	b.do("the memory-hungry pods leave node-5", 90*time.Second,
		chromedp.WaitNotPresent(chromedp.CSS(`.node[data-node="node-5"] li[data-pod^="demo/memory-hungry-"]`)))
	b.waitText("the replacement landed on node-2", 60*time.Second, `#evictions tr[data-plugin="NodeCRDResourceFit"] td.replacement`, "node-2")

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
	b.do("the PodMigration reaches Succeeded in the migrations table", 60*time.Second,
		chromedp.WaitReady(chromedp.CSS(`#migrations tr[data-migration="demo/move-web"][data-phase="Succeeded"]`)))
	moved := b.waitText("the migration's replacement is on node-1", 10*time.Second, `#migrations tr[data-migration="demo/move-web"] td.replacement`, "node-1")
	t.Logf("PodMigration demo/move-web of %s: replacement %s", webs.Items[0].Name, moved)

	// Make node-6 hot from its card: its NodeMetric follows and its CPU bar goes over the threshold.
	b.do("type 95 into node-6's cpu load", 10*time.Second,
		chromedp.SetValue(chromedp.CSS(`.loadctl[data-node="node-6"] input.cpu`), "95"))
	b.click("set node-6's simulated load to 95% CPU", 20*time.Second, `.loadctl[data-node="node-6"] button.setload`,
		b.textContains(`#message`, "set the simulated load of node-6"))
	b.do("node-6's CPU bar goes over the threshold", 60*time.Second,
		chromedp.WaitReady(chromedp.CSS(`.node[data-node="node-6"] .loadrow[data-resource="cpu"] .bar.over`)))
	// node-6's card was redrawn with its new load; the control kept what the user typed.
	typed := b.value(`.loadctl[data-node="node-6"] input.cpu`)
	if typed != "95" {
		t.Errorf("node-6's cpu input holds %q after its card was redrawn, want the 95 the user typed", typed)
	}

	// Take example.com/memory from node-2 too: no node offers it any more, so the descheduler must
	// not evict the memory-hungry pods (their replacements could not run anywhere). Explain, which
	// runs accord-descheduler's own dry-run cycle, shows them as candidates it blocks.
	b.click("click example.com/memory on node-2", 20*time.Second,
		`.node[data-node="node-2"] button.res[data-resource="example.com/memory"][data-enabled="true"]`,
		b.present(`.node[data-node="node-2"] .res[data-resource="example.com/memory"][data-enabled="false"]`))
	b.click("run explain", 20*time.Second, `#explain-run`, b.textContains(`#explain-status`, ""))
	status := b.waitText("explain finishes", 90*time.Second, `#explain-status`, "candidate pods")
	t.Logf("explain: %s", status)
	b.do("explain blocks the memory-hungry pods on node-2", 10*time.Second,
		chromedp.WaitReady(chromedp.CSS(`#explain tr[data-verdict="blocked"][data-pod^="demo/memory-hungry-"]`)))
	blocked := b.waitText("the blocker is named", 10*time.Second, `#explain tr[data-verdict="blocked"][data-pod^="demo/memory-hungry-"] td.blocked`, "")
	t.Logf("explain: memory-hungry blocked by %s", blocked)
	if !strings.Contains(b.text(`.node[data-node="node-2"] ul.pods`), "demo/memory-hungry-") {
		t.Error("the memory-hungry pods left node-2 although no other node offers example.com/memory")
	}
	b.screenshot(filepath.Join(artifacts, "console.png"))
}

// browser is a headless Chromium tab that records the page's console errors and exceptions.
type browser struct {
	t      *testing.T
	ctx    context.Context
	cancel func()
	mu     sync.Mutex
	errs   []string
	done   chan struct{}
}

func startBrowser(ctx context.Context, t *testing.T) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox, // CI runs as root
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1100),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	tabCtx, cancelTab := chromedp.NewContext(allocCtx)
	b := &browser{t: t, ctx: tabCtx, done: make(chan struct{}), cancel: func() { cancelTab(); cancelAlloc() }}
	if err := chromedp.Do(tabCtx); err != nil {
		b.cancel()
		t.Fatalf("starting %s: %v", chromium, err)
	}
	messages := chromedp.Console(tabCtx)
	go func() {
		defer close(b.done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				b.mu.Lock()
				b.errs = append(b.errs, fmt.Sprintf("%s %s:%d: %s", m.Type, m.URL, m.Line+1, m))
				b.mu.Unlock()
			}
		}
	}()
	return b
}

// do runs actions with a deadline, failing the test with what was awaited.
func (b *browser) do(what string, timeout time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	start := time.Now()
	err := chromedp.Do(ctx, actions...)
	// The page redraws a node's card contents when its data changes; an element found just before
	// a redraw is gone when the action reaches it, and Chromium says so before anything was
	// dispatched to it. Every action here is idempotent (a chip posts the state it was drawn
	// with), so query it again.
	for retries := 0; err != nil && staleElement(err) && retries < 10; retries++ {
		b.t.Logf("%s: the element was redrawn under the action (%v); again", what, err)
		err = chromedp.Do(ctx, actions...)
	}
	if err != nil {
		b.screenshot(filepath.Join(b.t.TempDir(), "failure.png"))
		b.t.Fatalf("%s: %v (after %v)", what, err, time.Since(start).Round(time.Millisecond))
	}
	b.t.Logf("%s: after %v", what, time.Since(start).Round(time.Millisecond))
}

// click clicks the element sel matches the way a user does, with the mouse at its centre, and
// waits until done reports the click's effect. The stream redraws cards as pods come and go, so a
// card's buttons can move: a click is aimed only at a target that has held still for 200 ms, and
// when its effect does not show within 5 s (the target moved between the mouse's press and
// release, so no click event fired) it is aimed again. Every click here is safe to repeat: sel
// matches only while the effect is absent.
func (b *browser) click(what string, timeout time.Duration, sel string, done func(context.Context) bool) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	start := time.Now()
	for attempt := 1; ; attempt++ {
		if done(ctx) {
			b.t.Logf("%s: after %v (%d clicks)", what, time.Since(start).Round(time.Millisecond), attempt-1)
			return
		}
		err := b.clickStill(ctx, sel)
		if err == nil || staleElement(err) {
			err = harness.WaitFor(ctx, 5*time.Second, func(ctx context.Context) (bool, error) { return done(ctx), nil })
		}
		if ctx.Err() != nil {
			b.screenshot(filepath.Join(b.t.TempDir(), "failure.png"))
			b.t.Fatalf("%s: its effect never showed after %d clicks on %s (after %v): %v", what, attempt, sel, time.Since(start).Round(time.Millisecond), err)
		}
		if err != nil {
			b.t.Logf("%s: click %d did not take (%v); again", what, attempt, err)
		}
	}
}

// clickStill clicks sel's centre once its bounding box has not moved for 200 ms.
func (b *browser) clickStill(ctx context.Context, sel string) error {
	box := fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return ""; const r = e.getBoundingClientRect(); return [r.x, r.y, r.width, r.height].join(","); })()`, sel)
	var last string
	err := harness.WaitFor(ctx, 5*time.Second, func(ctx context.Context) (bool, error) {
		if err := chromedp.Do(ctx, chromedp.ScrollIntoView(chromedp.CSS(sel))); err != nil {
			return false, nil
		}
		now, err := chromedp.Run(ctx, chromedp.Evaluate[string](box))
		if err != nil || now == "" {
			return false, nil
		}
		still := now == last
		last = now
		if !still {
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
		return still, nil
	})
	if err != nil {
		return fmt.Errorf("%s never held still: %w", sel, err)
	}
	return chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel)))
}

// present reports whether sel matches an element.
func (b *browser) present(sel string) func(context.Context) bool {
	return func(ctx context.Context) bool {
		found, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector(%q) !== null`, sel)))
		return err == nil && found
	}
}

// textContains reports whether the text of the first element sel matches contains want (and is
// not empty).
func (b *browser) textContains(sel, want string) func(context.Context) bool {
	return func(ctx context.Context) bool {
		text, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, sel)))
		return err == nil && text != "" && strings.Contains(text, want)
	}
}

// staleElement reports Chromium's two answers for an element that left the DOM between the query
// and the action.
func staleElement(err error) bool {
	return strings.Contains(err.Error(), "No node with given id found") ||
		strings.Contains(err.Error(), "Could not find node with given id")
}

// waitText waits until the text of the first element sel matches contains, and returns it.
func (b *browser) waitText(what string, timeout time.Duration, sel, contains string) string {
	b.t.Helper()
	var last string
	err := harness.WaitFor(b.ctx, timeout, func(ctx context.Context) (bool, error) {
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		text, err := chromedp.Run(qctx, chromedp.TextContent(chromedp.CSS(sel)))
		if err != nil {
			return false, nil // not there yet
		}
		last = text
		return strings.Contains(text, contains), nil
	})
	if err != nil {
		b.t.Fatalf("%s: %s never contained %q (last: %q): %v", what, sel, contains, last, err)
	}
	return last
}

// text returns the text of the first element sel matches ("" when there is none).
func (b *browser) text(sel string) string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	text, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(sel)))
	if err != nil {
		b.t.Errorf("reading %s: %v", sel, err)
	}
	return text
}

func (b *browser) value(sel string) string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	value, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(sel)))
	if err != nil {
		b.t.Errorf("reading the value of %s: %v", sel, err)
	}
	return value
}

func (b *browser) screenshot(path string) {
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Errorf("screenshot %s: %v", path, err)
		return
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Errorf("screenshot %s: %v", path, err)
		return
	}
	b.t.Logf("screenshot: %s (%d bytes)", path, len(png))
}

func (b *browser) checkNoErrors() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.errs {
		b.t.Errorf("page console: %s", e)
	}
}

func (b *browser) close() {
	b.checkNoErrors()
	b.cancel()
	<-b.done
}
