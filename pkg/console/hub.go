package console

import (
	"bytes"
	"encoding/json"
	"sync"
	"time"
)

// hub holds the latest View, encoded, and hands it to the page's event streams. Every subscriber
// has a one-slot channel: a slow page skips intermediate views and gets the latest. Users who may
// read the whole cluster share the one encoding; the others' handlers filter the View (viewScope).
type hub struct {
	mu     sync.Mutex
	latest *published
	subs   map[chan *published]struct{}
}

// published is one View and its encoding.
type published struct {
	view View
	data []byte
}

func newHub() *hub { return &hub{subs: map[chan *published]struct{}{}} }

// publish encodes v and sends it to every subscriber if it differs from the last one. It reports
// whether it sent.
func (h *hub) publish(v View) (bool, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return false, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.latest != nil && bytes.Equal(data, h.latest.data) {
		return false, nil
	}
	h.latest = &published{view: v, data: data}
	for ch := range h.subs {
		select {
		case <-ch: // drop the view the page has not taken yet
		default:
		}
		ch <- h.latest
	}
	return true, nil
}

// current returns the latest View (nil before the first publish).
func (h *hub) current() *published {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.latest
}

// subscribe returns a channel that receives the latest View now (if there is one) and every new one.
func (h *hub) subscribe() (chan *published, func()) {
	ch := make(chan *published, 1)
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
