package descheduler

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"k8s.io/client-go/util/cert"
	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/accord-sched/accord/pkg/descheduler/app"
	"github.com/accord-sched/accord/test/harness"
)

// otlpReceiver is a real OTLP/gRPC trace collector endpoint (the collector's TraceService served
// on loopback, over TLS) that keeps every span it receives.
type otlpReceiver struct {
	collectortrace.UnimplementedTraceServiceServer
	mu        sync.Mutex
	spans     []*tracepb.Span
	resources [][]*commonpb.KeyValue
}

func (r *otlpReceiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		r.resources = append(r.resources, rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			r.spans = append(r.spans, ss.GetSpans()...)
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func (r *otlpReceiver) snapshot() ([]*tracepb.Span, [][]*commonpb.KeyValue) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.spans...), append([][]*commonpb.KeyValue(nil), r.resources...)
}

func attr(kvs []*commonpb.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.GetKey() == key {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

// writeServingCert writes a self-signed certificate (with its CA) and key for 127.0.0.1.
func writeServingCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("localhost", []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"})
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// buildDescheduler builds the real accord-descheduler binary.
func buildDescheduler(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "accord-descheduler")
	build := exec(t, "go", "build", "-o", bin, "github.com/accord-sched/accord/cmd/descheduler")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestBinaryEveryUpstreamFlag runs the real accord-descheduler binary with every flag of
// kubernetes-sigs/descheduler v0.36 (cmd/descheduler/app/options and the logging flags), against
// the control plane, for one cycle of PodLifeTime that evicts the fixture's victims. It checks that
// the cycle ran and evicted, that every stdout line is a JSON log object (--logging-format=json
// with split streams), and that the spans of the cycle, the plugin call and each eviction reached a
// real OTLP/gRPC receiver over TLS (--otel-transport-ca-cert) with the service name and
// namespace given.
func TestBinaryEveryUpstreamFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := buildDescheduler(t)
	f := newFixture(t, 1, 2, 1)
	dir := t.TempDir()

	// The OTLP receiver, over TLS with the CA file the descheduler is given.
	otelCert, otelKey := writeServingCert(t, t.TempDir())
	pair, err := tls.LoadX509KeyPair(otelCert, otelKey)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	recv := &otlpReceiver{}
	srv := grpc.NewServer(grpc.Creds(credentials.NewServerTLSFromCert(&pair)))
	collectortrace.RegisterTraceServiceServer(srv, recv)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(dir, "policy.yaml")
	doc := fmt.Sprintf(`apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: "test.accord.dev/ns=%s"
profiles:
- name: flags
  pluginConfig:
  - name: DefaultEvictor
    args: {podProtections: {defaultDisabled: [BarePods]}}
  - name: PodLifeTime
    args:
      maxPodLifeTimeSeconds: 0
      namespaces: {include: [%s]}
      labelSelector: {matchLabels: {%q: "true"}}
  plugins:
    deschedule: {enabled: [PodLifeTime]}
    # One node: the scheduler simulation would rightly block every eviction (nowhere else to go).
    preEvictionFilter: {disabled: [SchedulerSimulation]}
`, f.ns, f.ns, VictimLabel)
	if err := os.WriteFile(policy, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	servingCert, servingKey := writeServingCert(t, dir)
	args := []string{
		// cmd/descheduler/app/options.
		"--descheduling-interval=0",
		"--kubeconfig=" + kubeconfig,
		"--client-connection-kubeconfig=" + kubeconfig,
		"--client-connection-qps=40",
		"--client-connection-burst=80",
		"--policy-config-file=" + policy,
		"--dry-run=false",
		"--disable-metrics",
		"--otel-collector-endpoint=" + lis.Addr().String(),
		"--otel-transport-ca-cert=" + otelCert,
		"--otel-service-name=accord-flags-test",
		"--otel-trace-namespace=" + f.ns,
		"--otel-sample-rate=1",
		"--otel-fallback-no-op-on-error=false",
		"--enable-http2",
		"--feature-gates=EvictionsInBackground=false,LoggingAlphaOptions=true",
		// Leader election (off: one cycle has nothing to hand over; the flags still parse).
		"--leader-elect=false",
		"--leader-elect-lease-duration=15s",
		"--leader-elect-renew-deadline=10s",
		"--leader-elect-retry-period=2s",
		"--leader-elect-resource-lock=leases",
		"--leader-elect-resource-name=accord-flags-test",
		"--leader-elect-resource-namespace=" + f.ns,
		// Secure serving.
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", harness.FreePort(t)),
		"--cert-dir=" + dir,
		"--tls-cert-file=" + servingCert,
		"--tls-private-key-file=" + servingKey,
		"--tls-sni-cert-key=" + servingCert + "," + servingKey + ":localhost",
		"--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
		"--tls-min-version=VersionTLS12",
		"--http2-max-streams-per-connection=100",
		"--permit-port-sharing",
		"--permit-address-sharing",
		// Logging.
		"--logging-format=json",
		"--log-json-split-stream",
		"--log-json-info-buffer-size=0",
		"--log-flush-frequency=1s",
		"--v=2",
		// --vmodule (text format only, as upstream) is in the runs below.
	}
	run := exec(t, bin, args...)
	var stdout, stderr bytes.Buffer
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Run(); err != nil {
		t.Fatalf("accord-descheduler: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}

	// The cycle ran and evicted both victims, and only them.
	if got := present(t, f.victims); len(got) != 0 {
		t.Errorf("victims still present: %v", got)
	}
	if got := present(t, f.others); len(got) != len(f.others) {
		t.Errorf("unselected pods were evicted: %v remain of %d", got, len(f.others))
	}

	// --logging-format=json: every stdout line is a JSON object with the JSON format's keys.
	lines, evicted := 0, 0
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var obj map[string]any
		if err := json.Unmarshal(line, &obj); err != nil {
			t.Fatalf("stdout line %d is not a JSON object: %v\n%s", lines+1, err, line)
		}
		if _, ok := obj["ts"]; !ok {
			t.Errorf("JSON log line without ts: %s", line)
		}
		if obj["msg"] == "Evicted pod" {
			evicted++
		}
		lines++
	}
	if lines < 5 {
		t.Errorf("only %d JSON log lines on stdout:\n%s", lines, stdout.String())
	}
	if evicted != 2 {
		t.Errorf("%d \"Evicted pod\" JSON lines, want 2", evicted)
	}
	t.Logf("%d JSON log lines on stdout, %d bytes on stderr", lines, stderr.Len())

	// Tracing: the spans were flushed before the binary exited.
	spans, resources := recv.snapshot()
	names := map[string]int{}
	var cycleID []byte
	for _, s := range spans {
		names[s.GetName()]++
		if s.GetName() == "DeschedulingCycle" {
			cycleID = s.GetSpanId()
		}
	}
	if names["DeschedulingCycle"] != 1 || names["deschedule/PodLifeTime"] != 1 || names["EvictPod"] != 2 {
		t.Fatalf("spans received = %v, want 1 DeschedulingCycle, 1 deschedule/PodLifeTime, 2 EvictPod", names)
	}
	for _, s := range spans {
		switch s.GetName() {
		case "deschedule/PodLifeTime":
			if !bytes.Equal(s.GetParentSpanId(), cycleID) {
				t.Errorf("plugin span is not a child of the cycle span")
			}
			if attr(s.GetAttributes(), "profile") != "flags" || attr(s.GetAttributes(), "plugin") != "PodLifeTime" || attr(s.GetAttributes(), "result") != "success" {
				t.Errorf("plugin span attributes = %v", s.GetAttributes())
			}
		case "EvictPod":
			a := s.GetAttributes()
			if attr(a, "result") != "success" || attr(a, "plugin") != "PodLifeTime" || attr(a, "node") != f.nodes[0] ||
				!strings.HasPrefix(attr(a, "pod"), f.ns+"/") {
				t.Errorf("eviction span attributes = %v", a)
			}
		}
	}
	if len(resources) == 0 || attr(resources[0], "service.name") != "accord-flags-test" || attr(resources[0], "service.namespace") != f.ns {
		t.Errorf("resource attributes = %v, want service.name accord-flags-test and service.namespace %s", resources, f.ns)
	}

	// The version subcommand prints component-base's version.
	out, err := exec(t, bin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "accord-descheduler version v") {
		t.Errorf("version = %q, %v", out, err)
	}
	// An unknown gate is still an error (EvictionsInBackground=true is accepted: the run above with
	// =false and the background test in evictionmodes_test.go cover it).
	for gate, want := range map[string]string{"NoSuchGate=true": "unrecognized feature gate"} {
		out, err := exec(t, bin, "--policy-config-file="+policy, "--kubeconfig="+kubeconfig, "--vmodule=server=3", "--feature-gates="+gate).CombinedOutput()
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("--feature-gates=%s: err %v, output %q, want an error with %q", gate, err, out, want)
		}
	}
}

// TestServingFlags runs the command with --disable-metrics and --enable-http2 and without them:
// /metrics is served only without --disable-metrics, and HTTP/2 is negotiated only with
// --enable-http2.
func TestServingFlags(t *testing.T) {
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(`apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: "test.accord.dev/none=none"
profiles:
- name: idle
  plugins:
    deschedule: {enabled: [PodLifeTime]}
  pluginConfig:
  - name: PodLifeTime
    args: {maxPodLifeTimeSeconds: 3600}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		flags       []string
		metricsCode int
		proto       int
	}{
		{"defaults", nil, http.StatusOK, 1},
		{"disable-metrics,enable-http2", []string{"--disable-metrics", "--enable-http2"}, http.StatusNotFound, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port := harness.FreePort(t)
			cmd := app.NewDeschedulerCommand()
			cmd.SetArgs(append([]string{"--policy-config-file=" + policy, "--client-connection-kubeconfig=" + kubeconfig,
				"--descheduling-interval=1h", "--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port),
				// Out of a cluster without --authentication-kubeconfig every caller is anonymous: let
				// it read /metrics (test/integration/security checks the authorisation itself).
				"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"}, tc.flags...))
			cmd.SetOut(io.Discard)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- cmd.ExecuteContext(ctx) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("command: %v", err)
				}
			}()
			tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true} //nolint:gosec // self-signed serving certificate
			client := &http.Client{Timeout: 5 * time.Second, Transport: tr}
			defer client.CloseIdleConnections()
			var ready *http.Response
			err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
				resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/readyz", port))
				if err != nil {
					return false, nil
				}
				_ = resp.Body.Close()
				ready = resp
				return resp.StatusCode == http.StatusOK, nil
			})
			if err != nil {
				t.Fatalf("/readyz never 200: %v", err)
			}
			if ready.ProtoMajor != tc.proto {
				t.Errorf("/readyz answered over %s, want HTTP/%d", ready.Proto, tc.proto)
			}
			resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/metrics", port))
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != tc.metricsCode {
				t.Errorf("/metrics = %d, want %d", resp.StatusCode, tc.metricsCode)
			}
		})
	}
}
