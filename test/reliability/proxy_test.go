package reliability

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
)

// faultProxy is a reverse proxy in front of the test apiserver. It forwards every request with the
// admin's credentials, counts the answers to pod evictions (POST .../pods/NAME/eviction) by pod and
// status, and lets a case answer some requests itself (inject) instead of the apiserver.
type faultProxy struct {
	srv *httptest.Server

	mu sync.Mutex
	// inject, when set, is asked about each request; a status other than 0 is answered by the proxy
	// with that status and an apiserver-style Status body, and the request never reaches the
	// apiserver.
	inject func(r *http.Request) int
	// evictions[pod][code] counts the eviction answers by "namespace/name" and HTTP status.
	evictions map[string]map[int]int
	closing   chan struct{}
	// podDeletes counts DELETE requests on pods that reached the apiserver.
	podDeletes int
	// inFlight counts the evictions that reached the proxy and are not answered yet. A request takes
	// its count under the same lock it reads inject under, so once setInject returns, every eviction
	// that saw the previous inject is counted until it is answered.
	inFlight int
	// watches cancels the watch requests being forwarded, by a sequence number.
	watches   map[int]context.CancelFunc
	nextWatch int
}

// hang, returned by inject, holds the request until the client cancels it.
const hang = -1

func newFaultProxy(t testing.TB) *faultProxy {
	t.Helper()
	target, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{evictions: map[string]map[int]int{}, closing: make(chan struct{}), watches: map[int]context.CancelFunc{}}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = transport
	rp.FlushInterval = -1 // watches stream
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pod, isEviction := evictionTarget(r)
		p.mu.Lock()
		inject := p.inject
		if isEviction {
			p.inFlight++
			defer func() {
				p.mu.Lock()
				p.inFlight--
				p.mu.Unlock()
			}()
		}
		p.mu.Unlock()
		if inject != nil {
			if code := inject(r); code == hang {
				// A request the apiserver never answers: held until the client gives up (the server
				// notices a closed connection only once the body is read) or the proxy closes.
				_, _ = io.Copy(io.Discard, r.Body)
				select {
				case <-r.Context().Done():
				case <-p.closing:
				}
				if isEviction {
					p.count(pod, hang)
				}
				return
			} else if code != 0 {
				if isEviction {
					p.count(pod, code)
				}
				w.Header().Set("Content-Type", "application/json")
				if code == http.StatusTooManyRequests {
					w.Header().Set("Retry-After", "1")
				}
				w.WriteHeader(code)
				_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected by the test's fault proxy","code":` + itoa(code) + `}`))
				return
			}
		}
		if r.Method == http.MethodDelete && strings.Contains(r.URL.Path, "/pods") {
			p.mu.Lock()
			p.podDeletes++
			p.mu.Unlock()
		}
		if !isEviction {
			if r.Method == http.MethodGet && r.URL.Query().Get("watch") == "true" {
				ctx, cancel := context.WithCancel(r.Context())
				p.mu.Lock()
				id := p.nextWatch
				p.nextWatch++
				p.watches[id] = cancel
				p.mu.Unlock()
				defer func() {
					p.mu.Lock()
					delete(p.watches, id)
					p.mu.Unlock()
					cancel()
				}()
				r = r.WithContext(ctx)
			}
			rp.ServeHTTP(w, r)
			return
		}
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		rp.ServeHTTP(rec, r)
		p.count(pod, rec.code)
	}))
	t.Cleanup(func() {
		close(p.closing)
		p.srv.Close()
	})
	return p
}

// config reaches the apiserver through the proxy (credentials are added by the proxy).
func (p *faultProxy) config() *rest.Config {
	return &rest.Config{Host: p.srv.URL, QPS: 1000, Burst: 2000}
}

func (p *faultProxy) setInject(f func(r *http.Request) int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inject = f
}

func (p *faultProxy) count(pod string, code int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.evictions[pod] == nil {
		p.evictions[pod] = map[int]int{}
	}
	p.evictions[pod][code]++
}

// accepted returns how many evictions of the pod the apiserver answered with 2xx.
func (p *faultProxy) accepted(pod string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for code, c := range p.evictions[pod] {
		if code >= 200 && code < 300 {
			n += c
		}
	}
	return n
}

// breakWatches cuts every watch stream being forwarded (the clients see their watches end) and
// returns how many.
func (p *faultProxy) breakWatches() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, cancel := range p.watches {
		cancel()
	}
	return len(p.watches)
}

// kubeconfig writes a kubeconfig that reaches the apiserver through the proxy, for a binary.
func (p *faultProxy) kubeconfig(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	doc := "apiVersion: v1\nkind: Config\nclusters:\n- name: proxy\n  cluster:\n    server: " + p.srv.URL +
		"\ncontexts:\n- name: proxy\n  context:\n    cluster: proxy\n    user: proxy\ncurrent-context: proxy\nusers:\n- name: proxy\n  user: {}\n"
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// idle reports whether every eviction that reached the proxy has been answered (and counted).
func (p *faultProxy) idle() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inFlight == 0
}

// deletes returns how many pod DELETE requests reached the apiserver.
func (p *faultProxy) deletes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.podDeletes
}

// answers returns a copy of the eviction answers of every pod.
func (p *faultProxy) answers() map[string]map[int]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]map[int]int{}
	for pod, m := range p.evictions {
		out[pod] = map[int]int{}
		for k, v := range m {
			out[pod][k] = v
		}
	}
	return out
}

// evictionTarget returns "namespace/name" when r posts a pod eviction.
func evictionTarget(r *http.Request) (string, bool) {
	if r.Method != http.MethodPost {
		return "", false
	}
	// /api/v1/namespaces/NS/pods/NAME/eviction
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) == 7 && parts[0] == "api" && parts[2] == "namespaces" && parts[4] == "pods" && parts[6] == "eviction" {
		return parts[3] + "/" + parts[5], true
	}
	return "", false
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
