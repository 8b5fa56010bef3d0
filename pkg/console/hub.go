package console

import (
	"bytes"
	"encoding/json"
	"sync"
	"time"
)

// hub holds the latest View, encoded, and hands it to the page's event streams. Every subscriber
// has a one-slot channel: a slow page skips intermediate views and gets the latest.
type hub struct {
	mu     sync.Mutex
	latest []byte
	subs   map[chan []byte]struct{}
}

func newHub() *hub { return &hub{subs: map[chan []byte]struct{}{}} }

// publish encodes v and sends it to every subscriber if it differs from the last one. It reports
// whether it sent.
func (h *hub) publish(v View) (bool, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return false, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if bytes.Equal(data, h.latest) {
		return false, nil
	}
	h.latest = data
	for ch := range h.subs {
		select {
		case <-ch: // drop the view the page has not taken yet
		default:
		}
		ch <- data
	}
	return true, nil
}

// current returns the latest encoded View (nil before the first publish).
func (h *hub) current() []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.latest
}

// subscribe returns a channel that receives the latest View now (if there is one) and every new one.
func (h *hub) subscribe() (chan []byte, func()) {
	ch := make(chan []byte, 1)
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

// Refresh bounds of the publisher: changes are coalesced over minPublishInterval, and the view is
// rebuilt every refreshInterval anyway, since a NodeMetric turns stale with time alone.
const (
	minPublishInterval = 100 * time.Millisecond
	refreshInterval    = 5 * time.Second
)
