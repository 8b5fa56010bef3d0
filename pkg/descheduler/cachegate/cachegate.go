// Package cachegate tells the descheduler whether its informer caches can be trusted for a decision.
//
// client-go informers keep HasSynced true for good once their first list is in: after a broken watch
// (an apiserver restart, a network cut) they go on serving the cache they had, while the reflector
// retries in the background. A decision taken on such a cache may evict a pod that moved, was
// replaced, or no longer violates anything. The Tracker watches the informers' traffic from the
// client's HTTP transport (rest.Config.WrapTransport): every resource that has been watched is
// "stale" from the moment one of its watch streams breaks or a watch request of it fails, until a new
// watch of it is established (the reflector re-watches from its last resource version, or re-lists
// and then watches, so the events it missed are delivered by then). The Gate adds a live probe of
// the apiserver. The descheduler skips its cycle, and its evictor holds evictions, while the Gate
// names anything stale.
package cachegate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Tracker records, per watched resource, whether its watch is healthy. Its zero value is not
// usable; call NewTracker.
type Tracker struct {
	mu        sync.Mutex
	resources map[string]*resourceState
	now       func() time.Time
}

type resourceState struct {
	// broken is set when a watch of the resource broke or could not be established, and cleared
	// when a watch of it is established again.
	broken bool
	reason string
	since  time.Time
}

// NewTracker returns an empty Tracker.
func NewTracker() *Tracker {
	return &Tracker{resources: map[string]*resourceState{}, now: time.Now}
}

// WrapTransport observes the watch requests that go through rt; use it as (or in) a
// rest.Config's WrapTransport for the clients the informers use. Other requests pass untouched.
func (t *Tracker) WrapTransport(rt http.RoundTripper) http.RoundTripper {
	return &roundTripper{t: t, next: rt}
}

// Stale names every watched resource whose watch is broken, with how long and why, sorted; nil when
// none is.
func (t *Tracker) Stale() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for name, s := range t.resources {
		if s.broken {
			out = append(out, fmt.Sprintf("%s (watch down for %s: %s)", name, t.now().Sub(s.since).Round(time.Millisecond), s.reason))
		}
	}
	sort.Strings(out)
	return out
}

// Watched returns the resources the Tracker has seen watched, sorted.
func (t *Tracker) Watched() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.resources))
	for name := range t.resources {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func (t *Tracker) state(resource string) *resourceState {
	s := t.resources[resource]
	if s == nil {
		s = &resourceState{}
		t.resources[resource] = s
	}
	return s
}

func (t *Tracker) markBroken(resource, reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.state(resource)
	if !s.broken {
		s.broken, s.since = true, t.now()
	}
	s.reason = reason
}

func (t *Tracker) opened(resource string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.state(resource)
	s.broken, s.reason = false, ""
}

func (t *Tracker) ended(resource string, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.state(resource)
	if err != nil && !s.broken {
		s.broken, s.since, s.reason = true, t.now(), "stream broke: "+err.Error()
	}
}

type roundTripper struct {
	t    *Tracker
	next http.RoundTripper
}

func (rt *roundTripper) WrappedRoundTripper() http.RoundTripper { return rt.next }

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resource, ok := watchedResource(req)
	if !ok {
		return rt.next.RoundTrip(req)
	}
	resp, err := rt.next.RoundTrip(req)
	switch {
	case err != nil:
		if req.Context().Err() == nil { // not the informer stopping its own watch
			rt.t.markBroken(resource, "watch request failed: "+err.Error())
		}
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		rt.t.markBroken(resource, fmt.Sprintf("watch request answered %d", resp.StatusCode))
	default:
		rt.t.opened(resource)
		resp.Body = &watchBody{ReadCloser: resp.Body, t: rt.t, resource: resource, ctx: req.Context()}
	}
	return resp, err
}

// watchBody reports the end of a watch stream: a clean end (the server's watch timeout, or the
// client closing it) leaves the resource healthy, as the reflector re-watches at once; a read error
// marks it broken.
type watchBody struct {
	io.ReadCloser
	t        *Tracker
	resource string
	ctx      context.Context
	closed   atomic.Bool
	done     sync.Once
}

func (b *watchBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.done.Do(func() {
			if errors.Is(err, io.EOF) || b.closed.Load() || b.ctx.Err() != nil {
				b.t.ended(b.resource, nil)
			} else {
				b.t.ended(b.resource, err)
			}
		})
	}
	return n, err
}

func (b *watchBody) Close() error {
	b.closed.Store(true)
	b.done.Do(func() { b.t.ended(b.resource, nil) })
	return b.ReadCloser.Close()
}

// watchedResource returns the resource a GET ...?watch=true request watches: "pods",
// "nodes", "clusterscopedresources.scheduling.accord.dev" (namespaced or cluster-wide alike).
func watchedResource(req *http.Request) (string, bool) {
	if req.Method != http.MethodGet {
		return "", false
	}
	if w := req.URL.Query().Get("watch"); w != "true" && w != "1" {
		return "", false
	}
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	var group string
	var rest []string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		rest = parts[2:] // api/v1/...
	case len(parts) >= 4 && parts[0] == "apis":
		group, rest = parts[1], parts[3:] // apis/group/version/...
	default:
		return "", false
	}
	if len(rest) >= 3 && rest[0] == "namespaces" {
		rest = rest[2:]
	}
	if len(rest) != 1 || rest[0] == "" {
		return "", false
	}
	if group == "" {
		return rest[0], true
	}
	return rest[0] + "." + group, true
}

// Gate combines the Tracker with a live probe of the apiserver.
type Gate struct {
	tracker *Tracker
	probe   func(ctx context.Context) error
	// ProbeTimeout bounds the probe (5 s when zero).
	ProbeTimeout time.Duration

	mu    sync.Mutex
	stale bool
}

// NewGate returns a Gate over tracker; probe (optional) is a cheap request to the apiserver that must
// not go through the tracked transport (a List of one pod, say).
func NewGate(tracker *Tracker, probe func(ctx context.Context) error) *Gate {
	return &Gate{tracker: tracker, probe: probe}
}

// Stale names what is stale by the Tracker alone (no request is sent): cheap enough to ask before
// each eviction.
func (g *Gate) Stale() []string {
	if g == nil {
		return nil
	}
	return g.tracker.Stale()
}

// Check names what is stale, probing the apiserver too, and reports whether that is news: changed
// is true the first time Check finds something stale after finding nothing (or at all), and the
// first time it finds nothing after finding something.
func (g *Gate) Check(ctx context.Context) (waitingFor []string, changed bool) {
	waitingFor = g.tracker.Stale()
	if len(waitingFor) == 0 && g.probe != nil {
		timeout := g.ProbeTimeout
		if timeout <= 0 {
			timeout = 5 * time.Second
		}
		pctx, cancel := context.WithTimeout(ctx, timeout)
		err := g.probe(pctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			waitingFor = []string{"apiserver (probe failed: " + err.Error() + ")"}
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	stale := len(waitingFor) > 0
	changed = stale != g.stale
	g.stale = stale
	return waitingFor, changed
}
