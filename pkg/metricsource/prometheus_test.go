package metricsource

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeAPI answers /api/v1/query with body and records the Authorization header. (The client is
// also run against a real Prometheus: test/integration/deschedulerplugins.)
func fakeAPI(t *testing.T, body string, auth *atomic.Value) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" {
			http.NotFound(w, r)
			return
		}
		auth.Store(r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func vector(samples ...string) string {
	return `{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(samples, ",") + `]}}`
}

func TestNodeFractions(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, body, err string
		want            map[string]float64
	}{
		{name: "ok", body: vector(`{"metric":{"instance":"a"},"value":[1700000000,"0.25"]}`, `{"metric":{"instance":"b","job":"x"},"value":[1700000000,"1"]}`),
			want: map[string]float64{"a": 0.25, "b": 1}},
		{name: "no instance", body: vector(`{"metric":{"node":"a"},"value":[1700000000,"0.25"]}`), err: `has no "instance" label`},
		{name: "above one", body: vector(`{"metric":{"instance":"a"},"value":[1700000000,"1.5"]}`), err: "want a fraction in [0, 1]"},
		{name: "NaN", body: vector(`{"metric":{"instance":"a"},"value":[1700000000,"NaN"]}`), err: "want a fraction in [0, 1]"},
		{name: "twice", body: vector(`{"metric":{"instance":"a","x":"1"},"value":[1700000000,"0.1"]}`, `{"metric":{"instance":"a","x":"2"},"value":[1700000000,"0.2"]}`), err: "more than one sample"},
		{name: "scalar", body: `{"status":"success","data":{"resultType":"scalar","result":[1700000000,"1"]}}`, err: "want a vector"},
		{name: "bad query", body: `{"status":"error","errorType":"bad_data","error":"parse error"}`, err: "parse error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var auth atomic.Value
			srv := fakeAPI(t, tc.body, &auth)
			p, err := NewPrometheus(PrometheusConfig{URL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.NodeFractions(ctx, "q")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPrometheusBearerToken(t *testing.T) {
	ctx := context.Background()
	var auth atomic.Value
	srv := fakeAPI(t, vector(), &auth)
	token := "first"
	p, err := NewPrometheus(PrometheusConfig{URL: srv.URL, Token: func() (string, error) { return token, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.NodeFractions(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if got := auth.Load(); got != "Bearer first" {
		t.Fatalf("Authorization = %q", got)
	}
	token = "rotated"
	_, _ = p.NodeFractions(ctx, "q")
	if got := auth.Load(); got != "Bearer rotated" {
		t.Fatalf("a rotated token is used at once: %q", got)
	}
	failing, _ := NewPrometheus(PrometheusConfig{URL: srv.URL, Token: func() (string, error) { return "", fmt.Errorf("secret gone") }})
	if _, err := failing.NodeFractions(ctx, "q"); err == nil || !strings.Contains(err.Error(), "secret gone") {
		t.Fatalf("a token error fails the query: %v", err)
	}

	// The service account token file: sent when present, nothing when absent.
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	sa, _ := NewPrometheus(PrometheusConfig{URL: srv.URL, Token: ServiceAccountToken(file)})
	_, _ = sa.NodeFractions(ctx, "q")
	if got := auth.Load(); got != "" {
		t.Fatalf("no token file, no header: %q", got)
	}
	if err := os.WriteFile(file, []byte("sa-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _ = sa.NodeFractions(ctx, "q")
	if got := auth.Load(); got != "Bearer sa-token" {
		t.Fatalf("service account token: %q", got)
	}
}

func TestNewPrometheusRejectsBadURL(t *testing.T) {
	for _, u := range []string{"", "prometheus:9090", "ftp://x", "http://"} {
		if _, err := NewPrometheus(PrometheusConfig{URL: u}); err == nil {
			t.Errorf("%q accepted", u)
		}
	}
}
