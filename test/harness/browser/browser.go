// Package browser drives Debian's Chromium headless through chromedp for the tests of the console's
// page (test/e2e/console, test/scale's console measurement): a tab that records the page's console
// errors and exceptions, and actions with deadlines that fail the test saying what was awaited.
package browser

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

	"github.com/accord-sched/accord/test/harness"
)

// Chromium is Debian's package (.ci/run installs it).
const Chromium = "/usr/bin/chromium"

// Require skips the test when Chromium is missing, or fails it on CI (CI set).
func Require(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(Chromium); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing on CI (.ci/run installs Debian's chromium): %v", Chromium, err)
		}
		t.Skipf("%s is missing (apt-get install chromium): %v", Chromium, err)
	}
}

// Browser is a headless Chromium tab that records the page's console errors and exceptions; Close
// fails the test with them.
type Browser struct {
	t *testing.T
	// Ctx is the tab's context, for chromedp calls of the test's own.
	Ctx    context.Context
	cancel func()
	mu     sync.Mutex
	errs   []string
	done   chan struct{}
}

// Start starts Chromium headless with a fresh profile and opens a tab; ctx bounds its life.
func Start(ctx context.Context, t *testing.T) *Browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(Chromium),
		chromedp.NoSandbox, // CI runs as root
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1100),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	tabCtx, cancelTab := chromedp.NewContext(allocCtx)
	b := &Browser{t: t, Ctx: tabCtx, done: make(chan struct{}), cancel: func() { cancelTab(); cancelAlloc() }}
	if err := chromedp.Do(tabCtx); err != nil {
		b.cancel()
		t.Fatalf("starting %s: %v", Chromium, err)
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

// Do runs actions with a deadline, failing the test with what was awaited.
func (b *Browser) Do(what string, timeout time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, timeout)
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
		b.Screenshot(filepath.Join(b.t.TempDir(), "failure.png"))
		b.t.Fatalf("%s: %v (after %v)", what, err, time.Since(start).Round(time.Millisecond))
	}
	b.t.Logf("%s: after %v", what, time.Since(start).Round(time.Millisecond))
}

// Click clicks the element sel matches the way a user does, with the mouse at its centre, and
// waits until done reports the click's effect. The stream redraws cards as pods come and go, so a
// card's buttons can move: a click is aimed only at a target that has held still for 200 ms, and
// when its effect does not show within 5 s (the target moved between the mouse's press and
// release, so no click event fired) it is aimed again. Every click here is safe to repeat: sel
// matches only while the effect is absent.
func (b *Browser) Click(what string, timeout time.Duration, sel string, done func(context.Context) bool) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, timeout)
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
			b.Screenshot(filepath.Join(b.t.TempDir(), "failure.png"))
			b.t.Fatalf("%s: its effect never showed after %d clicks on %s (after %v): %v", what, attempt, sel, time.Since(start).Round(time.Millisecond), err)
		}
		if err != nil {
			b.t.Logf("%s: click %d did not take (%v); again", what, attempt, err)
		}
	}
}

// clickStill clicks sel's centre once its bounding box has not moved for 200 ms.
func (b *Browser) clickStill(ctx context.Context, sel string) error {
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

// Present reports whether sel matches an element.
func (b *Browser) Present(sel string) func(context.Context) bool {
	return func(ctx context.Context) bool {
		found, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector(%q) !== null`, sel)))
		return err == nil && found
	}
}

// TextContains reports whether the text of the first element sel matches contains want (and is
// not empty).
func (b *Browser) TextContains(sel, want string) func(context.Context) bool {
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

// WaitText waits until the text of the first element sel matches contains, and returns it.
func (b *Browser) WaitText(what string, timeout time.Duration, sel, contains string) string {
	b.t.Helper()
	var last string
	err := harness.WaitFor(b.Ctx, timeout, func(ctx context.Context) (bool, error) {
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

// Text returns the text of the first element sel matches ("" when there is none).
func (b *Browser) Text(sel string) string {
	ctx, cancel := context.WithTimeout(b.Ctx, 5*time.Second)
	defer cancel()
	text, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(sel)))
	if err != nil {
		b.t.Errorf("reading %s: %v", sel, err)
	}
	return text
}

// Count returns how many elements sel matches.
func (b *Browser) Count(sel string) int {
	ctx, cancel := context.WithTimeout(b.Ctx, 5*time.Second)
	defer cancel()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
	if err != nil {
		b.t.Errorf("counting %s: %v", sel, err)
	}
	return n
}

// Value returns the value of the first element sel matches.
func (b *Browser) Value(sel string) string {
	ctx, cancel := context.WithTimeout(b.Ctx, 5*time.Second)
	defer cancel()
	value, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(sel)))
	if err != nil {
		b.t.Errorf("reading the value of %s: %v", sel, err)
	}
	return value
}

// Screenshot saves a PNG of the page to path.
func (b *Browser) Screenshot(path string) {
	ctx, cancel := context.WithTimeout(b.Ctx, 20*time.Second)
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

func (b *Browser) checkNoErrors() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.errs {
		b.t.Errorf("page console: %s", e)
	}
}

// Close fails the test with the page's console errors and exceptions, and stops Chromium.
func (b *Browser) Close() {
	b.checkNoErrors()
	b.cancel()
	<-b.done
}
