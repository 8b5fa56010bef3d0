package console

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// reviewClient authenticates the tokens "alice" and "bob" for the audiences listed after a colon
// ("alice:accord-console"), and counts the TokenReviews; every SubjectAccessReview is allowed.
func reviewClient(t *testing.T) (*kubefake.Clientset, *int) {
	t.Helper()
	c := kubefake.NewClientset()
	c.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		sar.Status.Allowed = true
		return true, sar, nil
	})
	n := new(int)
	c.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		*n++
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		user, aud, _ := strings.Cut(tr.Spec.Token, ":")
		if user == "alice" || user == "bob" {
			tr.Status.Authenticated = true
			tr.Status.User = authenticationv1.UserInfo{Username: user}
			for _, want := range tr.Spec.Audiences {
				if want == aud {
					tr.Status.Audiences = []string{aud}
				}
			}
		}
		return true, tr, nil
	})
	return c, n
}

// A token minted for another audience is refused, at login and in an Authorization header; the
// review asks for the Access's audience.
func TestAudienceIsRequired(t *testing.T) {
	client, _ := reviewClient(t)
	a := NewAccess(client, AccessOptions{})
	ctx := context.Background()
	if u, err := a.authenticate(ctx, "alice:accord-console"); err != nil || u == nil || u.Username != "alice" {
		t.Errorf("a token for accord-console: %v %v", u, err)
	}
	for _, token := range []string{"alice:https://kubernetes.default.svc", "alice:", "mallory:accord-console"} {
		if u, err := a.authenticate(ctx, token); err != nil || u != nil {
			t.Errorf("token %q authenticated as %v (%v), want refused", token, u, err)
		}
	}
	for _, act := range client.Actions() {
		if tr, ok := act.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview); ok && (len(tr.Spec.Audiences) != 1 || tr.Spec.Audiences[0] != DefaultTokenAudience) {
			t.Errorf("TokenReview with audiences %v, want [%s]", tr.Spec.Audiences, DefaultTokenAudience)
		}
	}
}

func sessionHandler(t *testing.T, opts AccessOptions) (*handler, *Access) {
	t.Helper()
	s := newTestState(t, node("node-1", "4"), pod("a1", "node-1", "", now))
	h := newTestHandler(t, s, nil)
	h.hub.publish(s.snapshot(now))
	client, _ := reviewClient(t)
	h.access = NewAccess(client, opts)
	return h, h.access
}

func login(t *testing.T, m http.Handler, token, remote string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("POST", "https://console.example/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.RemoteAddr = remote
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, req)
	return rec
}

func withCookie(t *testing.T, m http.Handler, method, path string, c *http.Cookie) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, "https://console.example"+path, nil)
	if c != nil {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, req)
	return rec
}

// A login opens a server-side session: the cookie is __Host-, Secure, HttpOnly, SameSite=Strict,
// Path=/ and holds an opaque id, not the token; it authenticates until it expires (max age, idle)
// or logout ends it.
func TestSessionCookie(t *testing.T) {
	h, a := sessionHandler(t, AccessOptions{SessionMaxAge: time.Hour, SessionIdleTimeout: 10 * time.Minute})
	clock := now
	a.now = func() time.Time { return clock }
	m := h.mux()
	rec := login(t, m, "alice:accord-console", "192.0.2.1:1234")
	cookies := rec.Result().Cookies()
	if rec.Code != http.StatusSeeOther || len(cookies) != 1 {
		t.Fatalf("login: %d, cookies %v", rec.Code, cookies)
	}
	c := cookies[0]
	if c.Name != SessionCookie || !strings.HasPrefix(c.Name, "__Host-") || !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Domain != "" || c.MaxAge != 3600 {
		t.Errorf("cookie %+v", c)
	}
	if strings.Contains(c.Value, "alice") || len(c.Value) < 40 {
		t.Errorf("cookie value %q: want an opaque random id", c.Value)
	}
	if rec := withCookie(t, m, "GET", "/api/state", c); rec.Code != http.StatusOK {
		t.Errorf("/api/state with the session: %d %s", rec.Code, rec.Body)
	}
	// Idle expiry: a request within the idle timeout keeps it; one after it ends it.
	clock = clock.Add(9 * time.Minute)
	if rec := withCookie(t, m, "GET", "/api/state", c); rec.Code != http.StatusOK {
		t.Errorf("/api/state 9 minutes later: %d", rec.Code)
	}
	clock = clock.Add(11 * time.Minute)
	if rec := withCookie(t, m, "GET", "/api/state", c); rec.Code != http.StatusUnauthorized {
		t.Errorf("/api/state after the idle timeout: %d, want 401", rec.Code)
	}
	// Max age, however busy.
	c = login(t, m, "alice:accord-console", "192.0.2.1:1234").Result().Cookies()[0]
	for range 7 {
		clock = clock.Add(9 * time.Minute)
		withCookie(t, m, "GET", "/api/state", c)
	}
	if rec := withCookie(t, m, "GET", "/api/state", c); rec.Code != http.StatusUnauthorized {
		t.Errorf("/api/state after the max age: %d, want 401", rec.Code)
	}
	// Logout ends the session on the server (the old cookie no longer works).
	c = login(t, m, "alice:accord-console", "192.0.2.1:1234").Result().Cookies()[0]
	if rec := withCookie(t, m, "POST", "/logout", c); rec.Code != http.StatusSeeOther || rec.Result().Cookies()[0].MaxAge >= 0 {
		t.Errorf("logout: %d %v", rec.Code, rec.Result().Cookies())
	}
	if rec := withCookie(t, m, "GET", "/api/state", c); rec.Code != http.StatusUnauthorized {
		t.Errorf("/api/state after logout: %d, want 401", rec.Code)
	}
	if rec := login(t, m, "alice:kubernetes", "192.0.2.1:1234"); rec.Code != http.StatusUnauthorized || len(rec.Result().Cookies()) != 0 {
		t.Errorf("login with a token for another audience: %d %v, want 401 and no cookie", rec.Code, rec.Result().Cookies())
	}
	if rec := withCookie(t, m, "GET", "/login", nil); !strings.Contains(rec.Body.String(), "--audience accord-console") {
		t.Errorf("the login page does not say how to mint a token: %s", rec.Body)
	}
}

// MaxSessions bounds the sessions: a login beyond it ends the one idle longest.
func TestSessionsAreBounded(t *testing.T) {
	h, a := sessionHandler(t, AccessOptions{MaxSessions: 2})
	clock := now
	a.now = func() time.Time { return clock }
	m := h.mux()
	var cookies []*http.Cookie
	for range 3 {
		clock = clock.Add(time.Second)
		cookies = append(cookies, login(t, m, "alice:accord-console", "192.0.2.1:1").Result().Cookies()[0])
	}
	if len(a.sessions) != 2 {
		t.Errorf("%d sessions held, want 2", len(a.sessions))
	}
	for i, want := range []int{http.StatusUnauthorized, http.StatusOK, http.StatusOK} {
		if rec := withCookie(t, m, "GET", "/api/state", cookies[i]); rec.Code != want {
			t.Errorf("session %d: %d, want %d", i, rec.Code, want)
		}
	}
}

// Refused tokens count against their client address: beyond FailedLogins the client gets 429 with
// Retry-After and no TokenReview, at login and with an Authorization header; other clients are not
// affected, and the bucket refills.
func TestFailedLoginsAreLimited(t *testing.T) {
	h, a := sessionHandler(t, AccessOptions{FailedLogins: 3, FailedLoginInterval: time.Minute})
	clock := now
	a.now = func() time.Time { return clock }
	client := a.client.(*kubefake.Clientset)
	reviews := func() int {
		n := 0
		for _, act := range client.Actions() {
			if act.GetResource().Resource == "tokenreviews" {
				n++
			}
		}
		return n
	}
	m := h.mux()
	for i := range 3 {
		if rec := login(t, m, "random-"+string(rune('a'+i)), "192.0.2.9:1"); rec.Code != http.StatusUnauthorized {
			t.Fatalf("refused login %d: %d", i, rec.Code)
		}
	}
	before := reviews()
	rec := login(t, m, "random-z", "192.0.2.9:1")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Errorf("fourth refused login: %d, Retry-After %q, want 429 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
	req := httptest.NewRequest("GET", "https://console.example/api/state", nil)
	req.Header.Set("Authorization", "Bearer alice:accord-console")
	req.RemoteAddr = "192.0.2.9:2"
	bearer := httptest.NewRecorder()
	m.ServeHTTP(bearer, req)
	if bearer.Code != http.StatusTooManyRequests {
		t.Errorf("a bearer token from the limited address: %d, want 429", bearer.Code)
	}
	if reviews() != before {
		t.Errorf("%d TokenReviews sent for a limited client", reviews()-before)
	}
	if rec := login(t, m, "alice:accord-console", "192.0.2.10:1"); rec.Code != http.StatusSeeOther {
		t.Errorf("another client's login: %d, want 303", rec.Code)
	}
	clock = clock.Add(time.Minute)
	if rec := login(t, m, "alice:accord-console", "192.0.2.9:1"); rec.Code != http.StatusSeeOther {
		t.Errorf("login after the interval: %d, want 303", rec.Code)
	}
}

// Streams are capped per session and in all; an open stream whose session ends is closed at the
// next recheck.
func TestStreamsAreCappedAndRechecked(t *testing.T) {
	h, a := sessionHandler(t, AccessOptions{MaxStreamsPerSession: 1})
	h.maxStreams, h.recheckEvery = 2, 100*time.Millisecond
	m := h.mux()
	c := login(t, m, "alice:accord-console", "192.0.2.1:1").Result().Cookies()[0]
	c2 := login(t, m, "bob:accord-console", "192.0.2.1:1").Result().Cookies()[0]
	c3 := login(t, m, "alice:accord-console", "192.0.2.1:1").Result().Cookies()[0]
	srv := httptest.NewTLSServer(m)
	defer srv.Close()
	open := func(c *http.Cookie) (*http.Response, context.CancelFunc) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/stream", nil)
		req.AddCookie(c)
		resp, err := srv.Client().Do(req)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		return resp, cancel
	}
	first, cancel1 := open(c)
	defer cancel1()
	defer first.Body.Close()
	if first.StatusCode != http.StatusOK {
		t.Fatalf("first stream: %d", first.StatusCode)
	}
	r := bufio.NewReader(first.Body)
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	second, cancel2 := open(c)
	second.Body.Close()
	cancel2()
	if second.StatusCode != http.StatusTooManyRequests || second.Header.Get("Retry-After") == "" {
		t.Errorf("a session's second stream: %d, want 429 with Retry-After", second.StatusCode)
	}
	other, cancel3 := open(c2)
	defer cancel3()
	defer other.Body.Close()
	if other.StatusCode != http.StatusOK {
		t.Errorf("another session's stream: %d, want 200", other.StatusCode)
	}
	third, cancel4 := open(c3)
	third.Body.Close()
	cancel4()
	if third.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a third stream over a total of 2: %d, want 429", third.StatusCode)
	}
	// The session ends; the recheck (every accessCacheTTL, here shortened) closes its stream.
	a.endSession(c.Value)
	done := make(chan error, 1)
	go func() {
		var err error
		for err == nil {
			_, err = r.ReadString('\n')
		}
		done <- err
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Errorf("the stream of an ended session is still open 10s later (recheck every %v)", h.recheckEvery)
	}
}

// Without Access, only the allowed Host headers are answered (DNS rebinding), but the probes.
func TestHostAllowList(t *testing.T) {
	s := newTestState(t)
	h := newTestHandler(t, s, &fakeControls{})
	h.hub.publish(s.snapshot(now))
	h.allowedHosts = []string{"localhost:8080", "127.0.0.1:8080", "[::1]:8080"}
	m := h.mux()
	for _, tc := range []struct {
		host, path string
		want       int
	}{
		{"localhost:8080", "/api/state", http.StatusOK},
		{"127.0.0.1:8080", "/", http.StatusOK},
		{"[::1]:8080", "/api/state", http.StatusOK},
		{"rebound.example:8080", "/api/state", http.StatusMisdirectedRequest},
		{"rebound.example:8080", "/", http.StatusMisdirectedRequest},
		{"localhost:9999", "/api/state", http.StatusMisdirectedRequest},
		{"10.0.0.1:8080", "/healthz", http.StatusOK},
	} {
		req := httptest.NewRequest("GET", "http://"+tc.host+tc.path, nil)
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("GET %s with Host %s: %d, want %d", tc.path, tc.host, rec.Code, tc.want)
		}
	}
}
