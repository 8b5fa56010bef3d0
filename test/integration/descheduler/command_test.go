package descheduler

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/accord-sched/accord/pkg/descheduler/app"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/test/harness"
)

// cycleCounter is a Deschedule plugin that only counts the cycles it ran in.
type cycleCounter struct{ cycles *atomic.Int32 }

var _ framework.DeschedulePlugin = cycleCounter{}

func (cycleCounter) Name() string { return "CycleCounter" }

func (c cycleCounter) Deschedule(context.Context, []*corev1.Node) *framework.Status {
	c.cycles.Add(1)
	return nil
}

// TestCommandLeaderElectionAndServing runs the real accord-descheduler command, with the flags an
// operator's Deployment passes, against the control plane: it takes the Lease, runs periodic
// cycles while leading, answers /healthz, /readyz, /metrics and (--profiling) /debug/pprof over HTTPS, and on cancel releases
// the Lease and returns without error.
func TestCommandLeaderElectionAndServing(t *testing.T) {
	// The command applies the logging configuration, which a process may only do once unless told
	// that re-applying the same one is fine (-count=2).
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged

	ns := env.CreateNamespace(t, "desched-cmd")
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(dir, "policy.yaml")
	// The node selector matches no node: the cycles run, but have nothing to look at.
	if err := os.WriteFile(policy, []byte(`apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: "test.accord.dev/none=none"
profiles:
- name: smoke
  plugins:
    deschedule: {enabled: [CycleCounter]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	port := harness.FreePort(t)
	const leaseName = "accord-descheduler"

	var cycles atomic.Int32
	cmd := app.NewDeschedulerCommand(app.WithPlugin("CycleCounter", func(context.Context, runtime.Object, framework.Handle) (framework.Plugin, error) {
		return cycleCounter{cycles: &cycles}, nil
	}))
	cmd.SetArgs([]string{
		"--policy-config-file=" + policy,
		"--descheduling-interval=200ms",
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=true",
		"--leader-elect-resource-namespace=" + ns,
		"--leader-elect-resource-name=" + leaseName,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--profiling",
		// Callers are authenticated and authorised by this apiserver; the test calls as its admin.
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
	})
	cmd.SetOut(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	exited := false
	defer func() {
		if !exited {
			cancel()
			<-done
		}
	}()

	// The Lease is taken, and cycles run under it.
	var holder string
	err := harness.WaitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		select {
		case err := <-done:
			exited = true
			return false, fmt.Errorf("the command exited early: %v", err)
		default:
		}
		lease, err := env.Client.CoordinationV1().Leases(ns).Get(ctx, leaseName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if lease.Spec.HolderIdentity != nil {
			holder = *lease.Spec.HolderIdentity
		}
		return holder != "" && cycles.Load() >= 2, nil
	})
	if err != nil {
		t.Fatalf("Lease held by %q after %d cycles: %v", holder, cycles.Load(), err)
	}
	t.Logf("Lease held by %q; %d cycles so far", holder, cycles.Load())

	// Health, readiness and metrics over HTTPS, with the in-memory self-signed certificate.
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed serving certificate
	}}
	defer client.CloseIdleConnections()
	get := func(path string) (int, string, error) {
		req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d%s", port, path), nil)
		if err != nil {
			return 0, "", err
		}
		req.Header.Set("Authorization", "Bearer "+env.Config.BearerToken)
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		var code int
		var body string
		err := harness.WaitFor(ctx, 10*time.Second, func(context.Context) (bool, error) {
			var err error
			code, body, err = get(path)
			return err == nil && code == http.StatusOK, nil
		})
		if err != nil {
			t.Errorf("%s = %d %q, want 200", path, code, body)
		}
	}
	code, body, err := get("/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("/metrics = %d, %v", code, err)
	}
	for _, name := range []string{"accord_descheduler_cycles_total", "accord_descheduler_cycle_duration_seconds", "accord_descheduler_plugin_duration_seconds"} {
		if !strings.Contains(body, name) {
			t.Errorf("/metrics lacks %s:\n%s", name, body)
		}
	}

	// --profiling: Go's profiles are served.
	if code, body, err := get("/debug/pprof/heap?debug=1"); err != nil || code != http.StatusOK || !strings.Contains(body, "heap profile") {
		t.Errorf("/debug/pprof/heap = %d, %v: %.200q", code, err, body)
	}

	// Cancel: the command returns cleanly and releases the Lease.
	cancel()
	select {
	case err := <-done:
		exited = true
		if err != nil {
			t.Fatalf("the command returned %v after cancel", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the command did not return within 30s of cancel")
	}
	lease, err := env.Client.CoordinationV1().Leases(ns).Get(context.Background(), leaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("the Lease is still held by %q after the command returned", *h)
	}
}
