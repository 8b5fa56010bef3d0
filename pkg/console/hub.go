package console

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"
	"time"
)

// hub holds the latest cluster snapshot and hands it to the page's event streams. Every subscriber
// has a one-slot channel: a slow page skips intermediate snapshots and gets the latest. Each stream
// cuts its own View from it (its user's scope, then its query) and sends what changed in it
// (streamEncoder), so the bytes pushed follow what the page shows, not the cluster's size.
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

// streamEncoder turns a stream's successive Views into its events: the first as a whole ("view"),
// then only what changed ("update"): the top-level fields that changed, the node cards that changed
// (by name), and the cards' order when it changed. A View that changes nothing sends nothing.
type streamEncoder struct {
	fields map[string]json.RawMessage
	order  []string
	cards  map[string]json.RawMessage
}

// viewUpdate is an "update" event: Fields are View's top-level fields that changed (nodes aside),
// Order the names of the page's node cards when they changed, Cards the cards that changed.
type viewUpdate struct {
	Fields map[string]json.RawMessage `json:"fields,omitempty"`
	Order  []string                   `json:"order,omitempty"`
	Cards  []json.RawMessage          `json:"cards,omitempty"`
}

// next returns the event for v ("" when it changes nothing) and its data.
func (e *streamEncoder) next(v View) (string, []byte, error) {
	nodes := v.Nodes
	v.Nodes = nil
	whole, err := json.Marshal(v)
	if err != nil {
		return "", nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(whole, &fields); err != nil {
		return "", nil, err
	}
	delete(fields, "nodes")
	order := make([]string, len(nodes))
	cards := make(map[string]json.RawMessage, len(nodes))
	encoded := make([]json.RawMessage, len(nodes))
	for i, n := range nodes {
		if encoded[i], err = json.Marshal(n); err != nil {
			return "", nil, err
		}
		order[i], cards[n.Name] = n.Name, encoded[i]
	}
	first := e.fields == nil
	var u viewUpdate
	if !first {
		for k, f := range fields {
			if !bytes.Equal(f, e.fields[k]) {
				if u.Fields == nil {
					u.Fields = map[string]json.RawMessage{}
				}
				u.Fields[k] = f
			}
		}
		if !slices.Equal(order, e.order) {
			u.Order = order
		}
		for i, name := range order {
			if !bytes.Equal(encoded[i], e.cards[name]) {
				u.Cards = append(u.Cards, encoded[i])
			}
		}
	}
	e.fields, e.order, e.cards = fields, order, cards
	if first {
		fields["nodes"], err = json.Marshal(encoded)
		if err != nil {
			return "", nil, err
		}
		data, err := json.Marshal(fields)
		return "view", data, err
	}
	if u.Fields == nil && u.Order == nil && u.Cards == nil {
		return "", nil, nil
	}
	data, err := json.Marshal(u)
	return "update", data, err
}
