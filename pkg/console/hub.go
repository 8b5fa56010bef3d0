package console

import (
	"sync"
	"time"
)

// hub holds the latest cluster snapshot and hands it to the page's event streams. Every subscriber
// has a one-slot channel: a slow page skips intermediate snapshots and gets the latest. Each stream
// cuts its own View from it (its user's scope, then its query) and sends it only when it differs
// from the one it sent last, so the bytes pushed follow what the page shows, not the cluster's size.
type hub struct {
	mu     sync.Mutex
	latest *cluster
	subs   map[chan *cluster]struct{}
}

func newHub() *hub { return &hub{subs: map[chan *cluster]struct{}{}} }

// publish makes c the latest snapshot and sends it to every subscriber.
func (h *hub) publish(c *cluster) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.latest = c
	for ch := range h.subs {
		select {
		case <-ch: // drop the snapshot the page has not taken yet
		default:
		}
		ch <- c
	}
}

// current returns the latest snapshot (nil before the first publish).
func (h *hub) current() *cluster {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.latest
}

// subscribe returns a channel that receives the latest snapshot now (if there is one) and every
// new one.
func (h *hub) subscribe() (chan *cluster, func()) {
	ch := make(chan *cluster, 1)
	h.mu.Lock()
	if h.latest != nil {
		ch <- h.latest
	}
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs, ch)
		h.mu.Unlock()
	}
}

// Refresh bounds of the publisher: changes are coalesced over minPublishInterval, or over twice the
// time the last snapshot took to build if longer (a large cluster's changes then cost the console
// at most a third of a core), and the snapshot is rebuilt every refreshInterval anyway, since a
// NodeMetric turns stale with time alone.
const (
	minPublishInterval = 100 * time.Millisecond
	refreshInterval    = 5 * time.Second
)

// publishDelay is how long the publisher coalesces changes after a snapshot that took built.
func publishDelay(built time.Duration) time.Duration { return max(minPublishInterval, 2*built) }
