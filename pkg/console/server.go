package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"slices"
	"strings"
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
	// access, when set, authenticates and authorises every request but the probes and the login
	// page (in a cluster); nil serves everyone (the playground, a local --kubeconfig run).
	access *Access
	// allowedHosts, when set, are the only Host headers answered but on the probes (DNS
	// rebinding); the console sets them without access.
	allowedHosts []string
	// maxStreams bounds the open /api/stream (0: no bound); streams counts them.
	maxStreams int
	streams    atomic.Int64
	// recheckEvery is how often a stream's caller is checked again: accessCacheTTL when zero.
	recheckEvery time.Duration
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
	if h.access != nil {
		m.HandleFunc("GET /login", h.access.login(h.logger))
		m.HandleFunc("POST /login", h.access.login(h.logger))
		m.HandleFunc("POST /logout", h.access.logout)
	}
	if h.controls != nil {
		m.HandleFunc("POST /api/playground/resource", control(h, "resource", "Playground: set a node's resource",
			func(ctx context.Context, r resourceRequest) error {
				return h.controls.SetResource(ctx, r.Node, r.Resource, r.Enabled)
			}))
		m.HandleFunc("POST /api/playground/load", control(h, "load", "Playground: set a node's simulated load",
			func(ctx context.Context, r loadRequest) error {
				return h.controls.SetLoad(ctx, r.Node, r.CPU, r.Memory)
			}))
	}
	if h.access != nil {
		return withSecurityHeaders(h.access.wrap(h.logger, h.state.podNamespaces, m))
	}
	return withSecurityHeaders(h.checkHost(m))
}

// checkHost answers 421 to a request whose Host is not one of allowedHosts (a page of another site
// whose name was rebound to this address sends its own name), but to the probes.
func (h *handler) checkHost(next http.Handler) http.Handler {
	if len(h.allowedHosts) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" && r.URL.Path != "/readyz" && !slices.ContainsFunc(h.allowedHosts, func(a string) bool { return strings.EqualFold(a, r.Host) }) {
			http.Error(w, fmt.Sprintf("Host %q is not one this console answers (--allowed-hosts: %s)", r.Host, strings.Join(h.allowedHosts, ",")), http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
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

// stateJSON returns the View the query parameters ask for, of what the user may read (503 before
// the caches have synced, 400 naming a bad parameter).
func (h *handler) stateJSON(w http.ResponseWriter, r *http.Request) {
	q, err := ParseQuery(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c := h.hub.current()
	if c == nil {
		http.Error(w, "the informer caches have not synced yet", http.StatusServiceUnavailable)
		return
	}
	data, err := json.Marshal(h.viewFor(r.Context(), c, q))
	if err != nil {
		http.Error(w, "encoding the view: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}

// viewFor cuts the View q asks for from c, after the request's user's scope.
func (h *handler) viewFor(ctx context.Context, c *cluster, q Query) View {
	if sc := scopeFrom(ctx); sc != nil {
		c = sc.filter(ctx, h.logger, c)
	}
	return cut(c, q)
}

// stream sends the View the query parameters ask for as server-sent events: at once as a whole
// ("view"), then what a new snapshot changes in it ("update", streamEncoder). The page reopens the
// stream when its query changes. Open streams are bounded (maxStreams in all, Access's per
// session); with Access, the caller is checked again every accessCacheTTL and the stream closed
// once refused.
func (h *handler) stream(w http.ResponseWriter, r *http.Request) {
	q, err := ParseQuery(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	if n := h.streams.Add(1); h.maxStreams > 0 && n > int64(h.maxStreams) {
		h.streams.Add(-1)
		retryAfter(w, streamKeepalive)
		http.Error(w, fmt.Sprintf("the console serves at most %d streams", h.maxStreams), http.StatusTooManyRequests)
		return
	}
	defer h.streams.Add(-1)
	ctx := r.Context()
	var recheck <-chan time.Time
	if h.access != nil {
		c, _ := ctx.Value(callerKey{}).(caller)
		release, ok := h.access.openStream(c.cred.key)
		if !ok {
			retryAfter(w, streamKeepalive)
			http.Error(w, fmt.Sprintf("a session may open at most %d streams", h.access.opts.MaxStreamsPerSession), http.StatusTooManyRequests)
			return
		}
		defer release()
		every := h.recheckEvery
		if every == 0 {
			every = accessCacheTTL
		}
		t := time.NewTicker(every)
		defer t.Stop()
		recheck = t.C
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
	var enc streamEncoder
	for {
		select {
		case <-r.Context().Done():
			return
		case <-recheck:
			adm := h.access.recheck(r.Context(), h.logger)
			if adm.code != 0 {
				h.logger.V(2).Info("Closing a console stream: its caller is refused now", "status", adm.code, "reason", adm.msg)
				return
			}
			ctx = adm.context(r.Context())
		case <-keepalive.C:
			if _, err := fmt.Fprint(w, ": keepalive\n\n"); err != nil {
				return
			}
			flusher.Flush()
		case c := <-ch:
			event, data, err := enc.next(h.viewFor(ctx, c, q))
			if err != nil {
				h.logger.Error(err, "Encoding the view for a stream")
				return
			}
			if event == "" {
				continue
			}
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data); err != nil {
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
	if h.access != nil && !h.access.authorizeExplain(w, r) {
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
	if sc := scopeFrom(r.Context()); sc != nil {
		rows = sc.filterExplain(r.Context(), h.logger, rows)
	}
	h.logger.V(2).Info("Explained a dry-run cycle", "rows", len(rows), "took", time.Since(start))
	writeJSON(w, rows)
}

// A control's request body says what in it is wrong, and what of it a log line names.
type controlRequest interface {
	validate() error
	logValues() []any
}

type resourceRequest struct {
	Node     string `json:"node"`
	Resource string `json:"resource"`
	Enabled  bool   `json:"enabled"`
}

func (r resourceRequest) validate() error {
	switch {
	case r.Node == "":
		return errors.New("node: required")
	case r.Resource == "":
		return errors.New("resource: required")
	}
	return nil
}

func (r resourceRequest) logValues() []any {
	return []any{"node", r.Node, "resource", r.Resource, "enabled", r.Enabled}
}

type loadRequest struct {
	Node   string `json:"node"`
	CPU    int64  `json:"cpu"`
	Memory int64  `json:"memory"`
}

func (r loadRequest) validate() error {
	switch {
	case r.Node == "":
		return errors.New("node: required")
	case r.CPU < 0 || r.CPU > 100:
		return errors.New("cpu: want a percentage in 0-100")
	case r.Memory < 0 || r.Memory > 100:
		return errors.New("memory: want a percentage in 0-100")
	}
	return nil
}

func (r loadRequest) logValues() []any {
	return []any{"node", r.Node, "cpuPercent", r.CPU, "memoryPercent", r.Memory}
}

// control serves one playground control: it decodes and validates the body (400 naming the
// field), applies it (502 when the API refuses), logs what was done and answers with the request.
func control[R controlRequest](h *handler, name, done string, apply func(context.Context, R) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// A page of another site cannot make the browser post here (its JSON body already needs a
		// CORS preflight, which the console never grants); refuse what the browser marks cross-site.
		if err := sameOrigin(r); err != nil {
			http.Error(w, "Forbidden: cross-site request: "+err.Error(), http.StatusForbidden)
			return
		}
		var req R
		if !decode(w, r, &req) {
			return
		}
		if err := req.validate(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := apply(r.Context(), req); err != nil {
			h.logger.Error(err, "Playground control failed", append([]any{"control", name}, req.logValues()...)...)
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		h.logger.Info(done, req.logValues()...)
		writeJSON(w, req)
	}
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
