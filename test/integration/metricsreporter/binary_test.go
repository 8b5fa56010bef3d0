package metricsreporter

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/accord-sched/accord/test/harness"
)

// statusWritesCounted matches a /metrics body whose successful status writes are counted above 0:
// every replica exports the series at 0 from its start (so that a rate sees the first one), so only
// a non-zero count tells the replica that reports.
var statusWritesCounted = regexp.MustCompile(`(?m)^accord_metrics_reporter_writes_total\{operation="apply-status",result="success"\} [1-9]`)

// TestBinaryLeaderElection builds accord-metrics-reporter and runs two replicas with leader election
// (as manifests/metrics-reporter/deployment.yaml does): one holds the Lease
// kube-system/accord-metrics-reporter and reports; both serve /healthz, /readyz and /metrics; when
// the leader stops, the other takes the Lease and reports.
func TestBinaryLeaderElection(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	ctx := context.Background()
	m := startMetricsAPI(t)
	ns := env.CreateNamespace(t, "mr-bin")
	nodes := newNodes(t, ns, "a")
	m.SetNode(nodes[0], "700m", "1Gi")
	dir := t.TempDir()
	bin := filepath.Join(dir, "accord-metrics-reporter")
	bctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(bctx, "go", "build", "-o", bin, "github.com/accord-sched/accord/cmd/metrics-reporter").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte("apiVersion: metricsreporter/v1alpha1\nkind: MetricsReporterConfiguration\nsamplingPeriodSeconds: 1\ndefaultReportIntervalSeconds: 1\nstatistic: last\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type replica struct {
		cmd  *exec.Cmd
		port int
		log  *bytes.Buffer
	}
	start := func() *replica {
		port := harness.FreePort(t)
		r := &replica{port: port, log: &bytes.Buffer{}}
		r.cmd = exec.Command(bin, "--kubeconfig="+kubeconfig, "--config="+config, "--leader-elect=true",
			"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms",
			fmt.Sprintf("--secure-port=%d", port), "--bind-address=127.0.0.1", "--v=2",
			// Anonymous callers (no --authentication-kubeconfig out of a cluster) may read /metrics here;
			// test/integration/security checks the authorisation.
			"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics")
		w := &syncWriter{b: r.log}
		r.cmd.Stdout, r.cmd.Stderr = w, w
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = r.cmd.Process.Signal(syscall.SIGTERM)
			_ = r.cmd.Wait()
			if t.Failed() {
				t.Logf("replica on %d:\n%s", r.port, w.String())
			}
		})
		return r
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the replicas' self-signed serving certificates
	get := func(r *replica, path string) (int, string) {
		resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d%s", r.port, path))
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	a, b := start(), start()
	holder := func() string {
		l, err := env.Client.CoordinationV1().Leases("kube-system").Get(ctx, "accord-metrics-reporter", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	var first string
	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		first = holder()
		return first != "" && cpuOf(getNM(t, nodes[0])) == "700m", nil
	}); err != nil {
		t.Fatalf("no leader reporting: %v (holder %q)", err, first)
	}
	for _, r := range []*replica{a, b} {
		for _, path := range []string{"/healthz", "/readyz"} {
			if err := harness.WaitFor(ctx, 10*time.Second, func(context.Context) (bool, error) {
				code, _ := get(r, path)
				return code == http.StatusOK, nil
			}); err != nil {
				code, body := get(r, path)
				t.Fatalf("%s on replica %d: %d %s", path, r.port, code, body)
			}
		}
	}
	// The leader's /metrics shows its rounds and writes.
	var leader, standby *replica
	if err := harness.WaitFor(ctx, 10*time.Second, func(context.Context) (bool, error) {
		for _, r := range []*replica{a, b} {
			if _, body := get(r, "/metrics"); statusWritesCounted.MatchString(body) {
				leader = r
			}
		}
		return leader != nil, nil
	}); err != nil {
		t.Fatal("no replica's /metrics counts status writes")
	}
	standby = a
	if leader == a {
		standby = b
	}
	// The leader stops (SIGTERM releases the Lease); the standby takes over and reports.
	_ = leader.cmd.Process.Signal(syscall.SIGTERM)
	m.SetNode(nodes[0], "900m", "1Gi")
	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		h := holder()
		return h != "" && h != first && cpuOf(getNM(t, nodes[0])) == "900m", nil
	}); err != nil {
		t.Fatalf("standby did not take over: %v (holder %q, cpu %s)", err, holder(), cpuOf(getNM(t, nodes[0])))
	}
	// The old leader may have written 900m in its last round before it let go of the Lease, so the
	// new leader's first write can come a report interval later.
	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		_, body := get(standby, "/metrics")
		return statusWritesCounted.MatchString(body), nil
	}); err != nil {
		t.Fatal("the new leader's /metrics counts no status writes")
	}
}

type syncWriter struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
