package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/pkg/descheduler/explain"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
)

// streamKeepalive is how often a quiet event stream gets a comment.
const streamKeepalive = 30 * time.Second

// ExplainTimeout bounds one explain run (a dry-run descheduling cycle with its own informers).
const ExplainTimeout = 2 * time.Minute

// explainFunc runs the descheduler's explain (explain.Run; tests replace it).
type explainFunc func(ctx context.Context, cfg runner.Config) ([]explain.Row, error)

// handler serves the page, its data, the health checks and, in playground mode, the controls.
type handler struct {
	logger   klog.Logger
	state    *state
	hub      *hub
	controls Controls
	// notReady is why /readyz fails ("" once the caches have synced).
	notReady atomic.Pointer[string]
	// explainCfg is what explain runs with; explain is off when its PolicyConfigFile is empty.
	explainCfg runner.Config
	explain    explainFunc
	// explainMu lets one explain run at a time.
	explainMu sync.Mutex
}

func (h *handler) setNotReady(reason string) { h.notReady.Store(&reason) }

func (h *handler) mux() http.Handler {
	m := http.NewServeMux()
	static, err := fs.Sub(webFS, "web")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	m.Handle("GET /", http.FileServerFS(static))
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	m.HandleFunc("GET /readyz", h.readyz)
	m.HandleFunc("GET /api/state", h.stateJSON)
	m.HandleFunc("GET /api/stream", h.stream)
	m.HandleFunc("GET /api/explain", h.explainJSON)
	if h.controls != nil {
		m.HandleFunc("POST /api/playground/resource", h.setResource)
		m.HandleFunc("POST /api/playground/load", h.setLoad)
	}
	return m
}

func (h *handler) readyz(w http.ResponseWriter, _ *http.Request) {
	if r := h.notReady.Load(); r == nil || *r != "" {
		reason := "not started"
		if r != nil {
			reason = *r
		}
		http.Error(w, "not ready: "+reason, http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

// stateJSON returns the latest View (503 before the caches have synced).
func (h *handler) stateJSON(w http.ResponseWriter, _ *http.Request) {
	data := h.hub.current()
	if data == nil {
		http.Error(w, "the informer caches have not synced yet", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}

// stream sends the View as server-sent events ("view"), the latest at once and then every change.
func (h *handler) stream(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	ch, cancel := h.hub.subscribe()
	defer cancel()
	fmt.Fprint(w, ": accord-console\n\n")
	flusher.Flush()
	// A comment now and then keeps proxies from closing a quiet stream.
	keepalive := time.NewTicker(streamKeepalive)
	defer keepalive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keepalive.C:
			if _, err := fmt.Fprint(w, ": keepalive\n\n"); err != nil {
				return
			}
			flusher.Flush()
		case data := <-ch:
			if _, err := fmt.Fprintf(w, "event: view\ndata: %s\n\n", data); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}

// explainJSON runs one dry-run cycle with the descheduler's own code and returns its rows.
func (h *handler) explainJSON(w http.ResponseWriter, r *http.Request) {
	if h.explainCfg.PolicyConfigFile == "" {
		http.Error(w, "explain is off: the console was started without --policy-config-file", http.StatusNotFound)
		return
	}
	if !h.explainMu.TryLock() {
		http.Error(w, "an explain run is in progress", http.StatusTooManyRequests)
		return
	}
	defer h.explainMu.Unlock()
	ctx, cancel := context.WithTimeout(r.Context(), ExplainTimeout)
	defer cancel()
	start := time.Now()
	rows, err := h.explain(klog.NewContext(ctx, h.logger.WithName("explain")), h.explainCfg)
	if err != nil {
		h.logger.Error(err, "Explain failed")
		http.Error(w, "explain: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if rows == nil {
		rows = []explain.Row{}
	}
	h.logger.V(2).Info("Explained a dry-run cycle", "rows", len(rows), "took", time.Since(start))
	writeJSON(w, rows)
}

type resourceRequest struct {
	Node     string `json:"node"`
	Resource string `json:"resource"`
	Enabled  bool   `json:"enabled"`
}

type loadRequest struct {
	Node   string `json:"node"`
	CPU    int64  `json:"cpu"`
	Memory int64  `json:"memory"`
}

func (h *handler) setResource(w http.ResponseWriter, r *http.Request) {
	var req resourceRequest
	if !decode(w, r, &req) {
		return
	}
	switch {
	case req.Node == "":
		http.Error(w, "node: required", http.StatusBadRequest)
		return
	case req.Resource == "":
		http.Error(w, "resource: required", http.StatusBadRequest)
		return
	}
	if err := h.controls.SetResource(r.Context(), req.Node, req.Resource, req.Enabled); err != nil {
		h.logger.Error(err, "Playground control failed", "control", "resource", "node", req.Node, "resource", req.Resource)
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	h.logger.Info("Playground: set a node's resource", "node", req.Node, "resource", req.Resource, "enabled", req.Enabled)
	writeJSON(w, req)
}

func (h *handler) setLoad(w http.ResponseWriter, r *http.Request) {
	var req loadRequest
	if !decode(w, r, &req) {
		return
	}
	switch {
	case req.Node == "":
		http.Error(w, "node: required", http.StatusBadRequest)
		return
	case req.CPU < 0 || req.CPU > 100:
		http.Error(w, "cpu: want a percentage in 0-100", http.StatusBadRequest)
		return
	case req.Memory < 0 || req.Memory > 100:
		http.Error(w, "memory: want a percentage in 0-100", http.StatusBadRequest)
		return
	}
	if err := h.controls.SetLoad(r.Context(), req.Node, req.CPU, req.Memory); err != nil {
		h.logger.Error(err, "Playground control failed", "control", "load", "node", req.Node)
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	h.logger.Info("Playground: set a node's simulated load", "node", req.Node, "cpuPercent", req.CPU, "memoryPercent", req.Memory)
	writeJSON(w, req)
}

// decode reads a JSON body. Only application/json is accepted, so a cross-site form cannot post.
func decode(w http.ResponseWriter, r *http.Request, into any) bool {
	if r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "Content-Type: want application/json", http.StatusUnsupportedMediaType)
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			http.Error(w, "body: too large", http.StatusRequestEntityTooLarge)
			return false
		}
		http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
