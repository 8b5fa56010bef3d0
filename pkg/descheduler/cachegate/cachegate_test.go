package cachegate

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestWatchedResource(t *testing.T) {
	for _, tc := range []struct {
		method, url string
		want        string
		ok          bool
	}{
		{"GET", "/api/v1/pods?watch=true&resourceVersion=5", "pods", true},
		{"GET", "/api/v1/namespaces/ns/pods?watch=1", "pods", true},
		{"GET", "/apis/scheduling.accord.dev/v1alpha1/clusterscopedresources?watch=true", "clusterscopedresources.scheduling.accord.dev", true},
		{"GET", "/apis/policy/v1/namespaces/x/poddisruptionbudgets?watch=true", "poddisruptionbudgets.policy", true},
		{"GET", "/api/v1/pods?limit=500", "", false},                   // a list
		{"GET", "/api/v1/namespaces/ns/pods/p1?watch=true", "", false}, // one object
		{"POST", "/api/v1/namespaces/ns/pods/p1/eviction", "", false},
		{"GET", "/apis?watch=true", "", false},
	} {
		req := httptest.NewRequest(tc.method, tc.url, nil)
		got, ok := watchedResource(req)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s %s: %q, %v; want %q, %v", tc.method, tc.url, got, ok, tc.want, tc.ok)
		}
	}
}

// watchServer serves watches of pods: each answer writes one line and then waits for the test to
// say how the stream ends (a clean end, or a cut connection).
type watchServer struct {
	srv    *httptest.Server
	end    chan string
	status atomic.Int32
}

func newWatchServer(t *testing.T) *watchServer {
	ws := &watchServer{end: make(chan string, 1)}
	ws.status.Store(http.StatusOK)
	ws.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if code := int(ws.status.Load()); code != http.StatusOK {
			w.WriteHeader(code)
			return
		}
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "{}\n")
		w.(http.Flusher).Flush()
		select {
		case how := <-ws.end:
			if how == "cut" {
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					_ = conn.Close()
				}
			}
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(ws.srv.Close)
	return ws
}

// watch opens a pod watch through the tracker and reads its first line.
func (ws *watchServer) watch(t *testing.T, tr *Tracker, ctx context.Context) (*http.Response, error) {
	t.Helper()
	client := &http.Client{Transport: tr.WrapTransport(http.DefaultTransport)}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ws.srv.URL+"/api/v1/pods?watch=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err == nil && resp.StatusCode == http.StatusOK {
		buf := make([]byte, 3)
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			t.Fatalf("first line: %v", err)
		}
	}
	return resp, err
}

func TestBrokenWatchIsStaleUntilReWatched(t *testing.T) {
	ws := newWatchServer(t)
	tr := NewTracker()
	resp, err := ws.watch(t, tr, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s := tr.Stale(); s != nil {
		t.Fatalf("stale with an open watch: %v", s)
	}
	// The connection is cut under the stream, as an apiserver that goes away does.
	ws.end <- "cut"
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Fatal("reading a cut stream: no error")
	}
	_ = resp.Body.Close()
	s := tr.Stale()
	if len(s) != 1 || !strings.HasPrefix(s[0], "pods (watch down for ") || !strings.Contains(s[0], "stream broke") {
		t.Fatalf("Stale() = %v, want pods with the broken stream", s)
	}
	// The reflector re-watches: an apiserver that refuses keeps it stale.
	ws.status.Store(http.StatusServiceUnavailable)
	resp, err = ws.watch(t, tr, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if s := tr.Stale(); len(s) != 1 || !strings.Contains(s[0], "answered 503") {
		t.Fatalf("Stale() = %v, want pods, with the 503", s)
	}
	// A watch established again: fresh.
	ws.status.Store(http.StatusOK)
	resp, err = ws.watch(t, tr, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s := tr.Stale(); s != nil {
		t.Fatalf("stale after the re-watch: %v", s)
	}
	// Its clean end (the server's watch timeout) and the client closing a watch are no breakage.
	ws.end <- "clean"
	_, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp, err = ws.watch(t, tr, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if s := tr.Stale(); s != nil {
		t.Fatalf("stale after clean ends: %v", s)
	}
	if w := tr.Watched(); len(w) != 1 || w[0] != "pods" {
		t.Errorf("Watched() = %v", w)
	}
}

func TestRefusedWatchIsStale(t *testing.T) {
	ws := newWatchServer(t)
	ws.srv.Close() // connection refused
	tr := NewTracker()
	if _, err := ws.watch(t, tr, context.Background()); err == nil {
		t.Fatal("watch of a closed server succeeded")
	}
	if s := tr.Stale(); len(s) != 1 || !strings.Contains(s[0], "watch request failed") {
		t.Fatalf("Stale() = %v", s)
	}
	// A watch the client itself gives up (its context) is not the apiserver's fault.
	tr2 := NewTracker()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _ = ws.watch(t, tr2, ctx)
	if s := tr2.Stale(); s != nil {
		t.Fatalf("stale after a cancelled request: %v", s)
	}
}

func TestGateProbesAndReportsChanges(t *testing.T) {
	probeErr := errors.New("connection refused")
	var failing bool
	g := NewGate(NewTracker(), func(context.Context) error {
		if failing {
			return probeErr
		}
		return nil
	})
	ctx := context.Background()
	if w, changed := g.Check(ctx); w != nil || changed {
		t.Fatalf("fresh gate: %v, %v", w, changed)
	}
	failing = true
	w, changed := g.Check(ctx)
	if len(w) != 1 || !strings.Contains(w[0], "apiserver (probe failed: connection refused)") || !changed {
		t.Fatalf("first failed probe: %v, changed %v", w, changed)
	}
	if _, changed := g.Check(ctx); changed {
		t.Error("second failed probe reported as a change")
	}
	// Stale asks the tracker only: the probe is not sent before every eviction.
	if s := g.Stale(); s != nil {
		t.Errorf("Stale() = %v", s)
	}
	failing = false
	if w, changed := g.Check(ctx); w != nil || !changed {
		t.Fatalf("recovered: %v, changed %v", w, changed)
	}
	var nilGate *Gate
	if s := nilGate.Stale(); s != nil {
		t.Errorf("nil gate stale: %v", s)
	}
}
