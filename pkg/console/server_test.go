package console

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/accord-sched/accord/pkg/descheduler/explain"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
)

func do(t *testing.T, h http.Handler, method, path, contentType, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestHealthAndReadiness(t *testing.T) {
	h := newTestHandler(t, newTestState(t), nil)
	h.setNotReady("waiting for the console informer caches to sync: slo/v1alpha1.NodeMetric")
	m := h.mux()
	if rec := do(t, m, "GET", "/healthz", "", ""); rec.Code != http.StatusOK {
		t.Errorf("/healthz: %d", rec.Code)
	}
	rec := do(t, m, "GET", "/readyz", "", "")
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "slo/v1alpha1.NodeMetric") {
		t.Errorf("/readyz before sync: %d %q, want 503 naming the unsynced informer", rec.Code, rec.Body)
	}
	if rec := do(t, m, "GET", "/api/state", "", ""); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("/api/state before the first view: %d, want 503", rec.Code)
	}
	h.setNotReady("")
	if rec := do(t, m, "GET", "/readyz", "", ""); rec.Code != http.StatusOK {
		t.Errorf("/readyz after sync: %d %q", rec.Code, rec.Body)
	}
}

func TestPageIsEmbedded(t *testing.T) {
	m := newTestHandler(t, newTestState(t), nil).mux()
	for path, want := range map[string]string{"/": "<title>Accord console</title>", "/app.js": "new EventSource(\"/api/stream\"", "/style.css": ".node"} {
		rec := do(t, m, "GET", path, "", "")
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("GET %s: %d, body without %q", path, rec.Code, want)
		}
	}
}

func TestPlaygroundEndpointsNeedPlaygroundMode(t *testing.T) {
	m := newTestHandler(t, newTestState(t), nil).mux()
	for _, path := range []string{"/api/playground/resource", "/api/playground/load"} {
		rec := do(t, m, "POST", path, "application/json", `{"node":"n","resource":"cpu"}`)
		if rec.Code != http.StatusNotFound && rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("POST %s without playground mode: %d, want 404 or 405", path, rec.Code)
		}
	}
}

func TestPlaygroundControls(t *testing.T) {
	fc := &fakeControls{}
	m := newTestHandler(t, newTestState(t), fc).mux()
	for _, tc := range []struct {
		name, path, ctype, body string
		want                    int
		wantErr                 string
	}{
		{"toggle", "/api/playground/resource", "application/json", `{"node":"node-5","resource":"example.com/memory","enabled":false}`, 200, ""},
		{"load", "/api/playground/load", "application/json", `{"node":"node-3","cpu":20,"memory":30}`, 200, ""},
		{"form post", "/api/playground/resource", "application/x-www-form-urlencoded", `node=x`, 415, "Content-Type"},
		{"no node", "/api/playground/resource", "application/json", `{"resource":"cpu"}`, 400, "node: required"},
		{"no resource", "/api/playground/resource", "application/json", `{"node":"n"}`, 400, "resource: required"},
		{"unknown field", "/api/playground/resource", "application/json", `{"node":"n","resource":"cpu","colour":1}`, 400, "colour"},
		{"cpu over 100", "/api/playground/load", "application/json", `{"node":"n","cpu":150}`, 400, "cpu:"},
		{"negative memory", "/api/playground/load", "application/json", `{"node":"n","memory":-1}`, 400, "memory:"},
		{"GET", "/api/playground/load", "", "", 404, ""}, // only POST is served; GET falls to the page
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := "POST"
			if tc.name == "GET" {
				method = "GET"
			}
			rec := do(t, m, method, tc.path, tc.ctype, tc.body)
			if rec.Code != tc.want || !strings.Contains(rec.Body.String(), tc.wantErr) {
				t.Errorf("%d %q, want %d containing %q", rec.Code, rec.Body, tc.want, tc.wantErr)
			}
		})
	}
	if d := cmp.Diff([]string{"resource node-5 example.com/memory off", "load node-3 20 30"}, fc.calls); d != "" {
		t.Errorf("controls called (-want +got):\n%s", d)
	}
	fc.err = errors.New("forbidden")
	if rec := do(t, m, "POST", "/api/playground/resource", "application/json", `{"node":"n","resource":"cpu"}`); rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), "forbidden") {
		t.Errorf("a failing control: %d %q, want 502 with its error", rec.Code, rec.Body)
	}
}

func TestExplainRunsTheDeschedulersExplain(t *testing.T) {
	h := newTestHandler(t, newTestState(t), nil)
	if rec := do(t, h.mux(), "GET", "/api/explain", "", ""); rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "--policy-config-file") {
		t.Errorf("explain without a policy: %d %q, want 404 naming --policy-config-file", rec.Code, rec.Body)
	}
	var got runner.Config
	h.explainCfg = runner.Config{PolicyConfigFile: "policy.yaml", SchedulerConfigFile: "sched.yaml"}
	h.explain = func(_ context.Context, cfg runner.Config) ([]explain.Row, error) {
		got = cfg
		return []explain.Row{{Profile: "accord", Plugin: "NodeCRDResourceFit", Namespace: "demo", Pod: "p", Verdict: explain.VerdictEvict, PredictedNode: "node-2"}}, nil
	}
	rec := do(t, h.mux(), "GET", "/api/explain", "", "")
	var rows []explain.Row
	if err := json.Unmarshal(rec.Body.Bytes(), &rows); err != nil || rec.Code != 200 {
		t.Fatalf("explain: %d %q (%v)", rec.Code, rec.Body, err)
	}
	if got.PolicyConfigFile != "policy.yaml" || got.SchedulerConfigFile != "sched.yaml" || len(rows) != 1 || rows[0].PredictedNode != "node-2" {
		t.Errorf("explain ran with %+v and returned %+v", got, rows)
	}
	h.explain = func(context.Context, runner.Config) ([]explain.Row, error) {
		return nil, errors.New("policy.yaml: profiles[0]: bad")
	}
	if rec := do(t, h.mux(), "GET", "/api/explain", "", ""); rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "profiles[0]") {
		t.Errorf("a failing explain: %d %q", rec.Code, rec.Body)
	}
}

func TestStateAndStream(t *testing.T) {
	h := newTestHandler(t, newTestState(t, node("node-1", "4")), nil)
	h.hub.publish(h.state.snapshot(now))
	srv := httptest.NewServer(h.mux())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/state")
	if err != nil {
		t.Fatal(err)
	}
	var v View
	err = json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if err != nil || len(v.Nodes) != 1 || v.Nodes[0].Name != "node-1" {
		t.Fatalf("/api/state: %+v (%v)", v, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/stream", nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	r := bufio.NewReader(resp.Body)
	readData := func() []byte {
		t.Helper()
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("reading the stream: %v", err)
			}
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				return []byte(data)
			}
		}
	}
	readView := func() View {
		t.Helper()
		var v View
		if err := json.Unmarshal(readData(), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := readView(); len(v.Nodes) != 1 {
		t.Errorf("first streamed view: %+v", v)
	}
	// A snapshot that does not change the stream's view is not sent; a change is.
	h.hub.publish(h.state.snapshot(now))
	next := h.state.snapshot(now)
	next.nodes = append(next.nodes, nodeEntry{view: NodeView{Name: "node-2"}})
	h.hub.publish(next)
	var u viewUpdate
	if err := json.Unmarshal(readData(), &u); err != nil || !slices.Equal(u.Order, []string{"node-1", "node-2"}) || len(u.Cards) != 1 || !strings.Contains(string(u.Cards[0]), `"node-2"`) {
		t.Errorf("the update: %+v (%v), want the new order and node-2's card only (and no repeat of the first view)", u, err)
	}
	// The stream's query cuts its view; a bad one is refused naming the parameter.
	resp, err = http.Get(srv.URL + "/api/state?node=node-2&pageSize=1")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if err != nil || len(v.Nodes) != 1 || v.Nodes[0].Name != "node-2" || v.NodesMatched != 1 || v.NodesTotal != 2 {
		t.Errorf("/api/state?node=node-2: %+v (%v)", v, err)
	}
	for _, path := range []string{"/api/state?page=0", "/api/stream?pageSize=1000", "/api/state?attention=maybe"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body := new(strings.Builder)
		_, _ = bufio.NewReader(resp.Body).WriteTo(body)
		resp.Body.Close()
		param := strings.SplitN(strings.SplitN(path, "?", 2)[1], "=", 2)[0]
		if resp.StatusCode != http.StatusBadRequest || !strings.HasPrefix(body.String(), param+":") {
			t.Errorf("GET %s: %d %q, want 400 naming %s", path, resp.StatusCode, body, param)
		}
	}
}

// A stream sends its View whole once, then only what changed: nothing for an unchanged View, the
// changed fields and cards, the order when the page's cards change.
func TestStreamEncoder(t *testing.T) {
	var e streamEncoder
	v := View{Nodes: []NodeView{{Name: "a"}, {Name: "b"}}, NodesTotal: 2, Pending: []PodView{}}
	event, data, err := e.next(v)
	var whole View
	if err != nil || event != "view" || json.Unmarshal(data, &whole) != nil || len(whole.Nodes) != 2 || whole.NodesTotal != 2 {
		t.Fatalf("first: %s %s %v, want the whole view", event, data, err)
	}
	if event, data, _ := e.next(v); event != "" {
		t.Errorf("unchanged: %s %s, want nothing", event, data)
	}
	v.Nodes = []NodeView{{Name: "a"}, {Name: "b", Unschedulable: true}}
	v.Pending = []PodView{{Namespace: "demo", Name: "p"}}
	event, data, _ = e.next(v)
	var u viewUpdate
	if err := json.Unmarshal(data, &u); err != nil || event != "update" || u.Order != nil || len(u.Cards) != 1 || !strings.Contains(string(u.Cards[0]), `"unschedulable":true`) ||
		len(u.Fields) != 1 || u.Fields["pending"] == nil {
		t.Errorf("one card and the pending pods changed: %s %s", event, data)
	}
	v.Nodes = v.Nodes[1:]
	event, data, _ = e.next(v)
	u = viewUpdate{}
	if err := json.Unmarshal(data, &u); err != nil || event != "update" || !slices.Equal(u.Order, []string{"b"}) || len(u.Cards) != 0 || len(u.Fields) != 0 {
		t.Errorf("a card gone: %s %s, want the new order only", event, data)
	}
}
