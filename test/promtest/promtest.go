// Package promtest runs a real Prometheus server (the `prometheus` binary, Debian's package in CI:
// .ci/run installs it) as a subprocess of a test, with its own configuration and storage in a
// temporary directory, listening on a loopback port and scraping the targets the test names; and
// serves scrape targets in the Prometheus text format.
//
// When the binary is missing, Start skips the test, except under CI=true, where it fails it.
package promtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/accord-sched/accord/test/harness"
)

// Binary is where Debian's package installs Prometheus; PATH is searched when it is not there.
const Binary = "/usr/bin/prometheus"

// Prometheus is a running Prometheus server.
type Prometheus struct {
	// URL is the server's base URL (http://127.0.0.1:port).
	URL string
	// Log holds the server's output.
	Log *bytes.Buffer
}

// Start runs Prometheus scraping targets (host:port) every second, with honor_labels so that the
// targets' own `instance` labels are kept, until the test ends. It returns once /-/ready answers.
func Start(t testing.TB, targets ...string) *Prometheus {
	t.Helper()
	bin := Binary
	if _, err := os.Stat(bin); err != nil {
		if p, err := exec.LookPath("prometheus"); err == nil {
			bin = p
		} else if os.Getenv("CI") == "true" {
			t.Fatalf("prometheus is not installed (%s); .ci/run installs Debian's prometheus package", Binary)
		} else {
			t.Skipf("prometheus is not installed (%s): apt-get install -y prometheus", Binary)
		}
	}
	dir := t.TempDir()
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = fmt.Sprintf("%q", tg)
	}
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
- job_name: test
  honor_labels: true
  static_configs:
  - targets: [%s]
`, strings.Join(quoted, ", "))
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(harness.FreePort(t)))
	log := &bytes.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	w := &lockedWriter{b: log}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting prometheus: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	p := &Prometheus{URL: "http://" + addr, Log: log}
	client := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get(p.URL + "/-/ready")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-done:
			t.Fatalf("prometheus exited: %s", w.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready within 30s: %v\n%s", err, w.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type lockedWriter struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// Target serves gauges in the Prometheus text exposition format at /metrics.
type Target struct {
	srv    *httptest.Server
	mu     sync.Mutex
	series map[string]float64 // `name{labels}` -> value
	help   map[string]bool
}

// NewTarget starts a scrape target on a loopback port until the test ends.
func NewTarget(t testing.TB) *Target {
	tg := &Target{series: map[string]float64{}, help: map[string]bool{}}
	tg.srv = httptest.NewServer(http.HandlerFunc(tg.serve))
	t.Cleanup(tg.srv.Close)
	return tg
}

// Addr is the target's host:port, for Start.
func (tg *Target) Addr() string { return strings.TrimPrefix(tg.srv.URL, "http://") }

// Set sets a gauge sample: name with labels (name=value pairs, in order) to value.
func (tg *Target) Set(name string, value float64, labels ...string) {
	var b strings.Builder
	b.WriteString(name)
	if len(labels) > 0 {
		b.WriteByte('{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%s=%q", labels[i], labels[i+1])
		}
		b.WriteByte('}')
	}
	tg.mu.Lock()
	defer tg.mu.Unlock()
	tg.series[b.String()] = value
	tg.help[name] = true
}

func (tg *Target) serve(w http.ResponseWriter, _ *http.Request) {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	names := make([]string, 0, len(tg.help))
	for n := range tg.help {
		names = append(names, n)
	}
	slices.Sort(names)
	keys := make([]string, 0, len(tg.series))
	for k := range tg.series {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, n := range names {
		fmt.Fprintf(w, "# TYPE %s gauge\n", n)
		for _, k := range keys {
			if k == n || strings.HasPrefix(k, n+"{") {
				fmt.Fprintf(w, "%s %g\n", k, tg.series[k])
			}
		}
	}
}
