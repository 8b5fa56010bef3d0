package console

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// Playground controls refuse what a browser marks as cross-site, and still take same-origin posts
// and clients that send no Origin (curl).
func TestControlsRefuseCrossSite(t *testing.T) {
	m := newTestHandler(t, newTestState(t), &fakeControls{}).mux()
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"no origin (curl)", nil, http.StatusOK},
		{"same origin", map[string]string{"Origin": "http://example.com", "Sec-Fetch-Site": "same-origin"}, http.StatusOK},
		{"another origin", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"cross-site fetch", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"same-site fetch", map[string]string{"Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
	} {
		req := httptest.NewRequest("POST", "http://example.com/api/playground/load", strings.NewReader(`{"node":"n1","cpu":10,"memory":20}`))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range tc.header {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s: %d %q, want %d", tc.name, rec.Code, rec.Body, tc.want)
		}
	}
}

// Every response carries the Content-Security-Policy and its companions; API answers are not cached.
func TestSecurityHeaders(t *testing.T) {
	m := newTestHandler(t, newTestState(t), nil).mux()
	for _, path := range []string{"/", "/api/state", "/healthz"} {
		rec := do(t, m, "GET", path, "", "")
		h := rec.Header()
		if h.Get("Content-Security-Policy") != contentSecurityPolicy || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET %s: headers %v", path, h)
		}
		if strings.HasPrefix(path, "/api/") != (h.Get("Cache-Control") == "no-store") {
			t.Errorf("GET %s: Cache-Control %q", path, h.Get("Cache-Control"))
		}
	}
}

// The explain bucket holds one run per user per interval.
func TestExplainRateIsPerUser(t *testing.T) {
	now := time.Unix(1000, 0)
	a := NewAccess(nil, AccessOptions{ExplainInterval: time.Minute})
	a.now = func() time.Time { return now }
	if ok, _ := a.explainAllowed("alice"); !ok {
		t.Fatal("alice's first explain refused")
	}
	if ok, wait := a.explainAllowed("alice"); ok || wait <= 0 || wait > time.Minute {
		t.Errorf("alice's second explain at once: allowed %t, wait %v", ok, wait)
	}
	if ok, _ := a.explainAllowed("bob"); !ok {
		t.Error("bob's first explain refused because of alice's")
	}
	now = now.Add(time.Minute)
	if ok, _ := a.explainAllowed("alice"); !ok {
		t.Error("alice's explain refused after the interval")
	}
}

// FuzzControlDecoding feeds arbitrary bodies, content types and origins to a playground control: it
// never panics, answers only with the documented codes, and applies only valid requests.
func FuzzControlDecoding(f *testing.F) {
	f.Add("application/json", "", `{"node":"n1","cpu":10,"memory":20}`)
	f.Add("application/json", "http://example.com", `{"node":"n1","resource":"r","enabled":true}`)
	f.Add("application/json", "https://evil.example", `{"node":"n1","cpu":10,"memory":20}`)
	f.Add("text/plain", "", `{"node":"n1"}`)
	f.Add("application/json", "", `{"node":"","cpu":-1}`)
	f.Add("application/json", "", `{"node":"n1","cpu":1e400}`)
	f.Add("application/json", "", `{"node":"n1","extra":1}`)
	f.Add("application/json", "", strings.Repeat(" ", 5000)+"{}")
	f.Add("application/json", "%zz", `[`)
	f.Fuzz(func(t *testing.T, contentType, origin, body string) {
		controls := &fakeControls{}
		m := newTestHandler(t, newTestState(t), controls).mux()
		applied := 0
		for _, path := range []string{"/api/playground/load", "/api/playground/resource"} {
			req := httptest.NewRequest("POST", "http://example.com"+path, strings.NewReader(body))
			req.Header.Set("Content-Type", contentType)
			if origin != "" && utf8.ValidString(origin) && !strings.ContainsAny(origin, "\r\n\x00") {
				req.Header.Set("Origin", origin)
			}
			rec := httptest.NewRecorder()
			m.ServeHTTP(rec, req)
			switch rec.Code {
			case http.StatusOK, http.StatusBadRequest, http.StatusForbidden, http.StatusUnsupportedMediaType, http.StatusRequestEntityTooLarge:
			default:
				t.Fatalf("POST %s (%q, origin %q, %q): status %d", path, contentType, origin, body, rec.Code)
			}
			if rec.Code == http.StatusOK && (contentType != "application/json" || req.Header.Get("Origin") != "" && req.Header.Get("Origin") != "http://example.com") {
				t.Fatalf("POST %s (%q, origin %q) applied", path, contentType, req.Header.Get("Origin"))
			}
			if rec.Code == http.StatusOK {
				applied++
			}
		}
		if len(controls.calls) != applied {
			t.Fatalf("%d controls applied for %d requests answered 200: %v", len(controls.calls), applied, controls.calls)
		}
	})
}
