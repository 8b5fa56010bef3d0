package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/component-base/tracing"
)

// Every flag of upstream's cmd/descheduler/app/options (v0.36) parses, and sets what it names.
func TestUpstreamV036FlagsParse(t *testing.T) {
	cmd := NewDeschedulerCommand()
	args := []string{
		"--client-connection-kubeconfig=/etc/kubeconfig", "--disable-metrics", "--enable-http2",
		"--otel-collector-endpoint=collector:4317", "--otel-transport-ca-cert=/ca.pem", "--otel-service-name=d",
		"--otel-trace-namespace=ns", "--otel-sample-rate=0.5", "--otel-fallback-no-op-on-error",
		"--feature-gates=EvictionsInBackground=false", "--logging-format=json", "--log-json-split-stream",
		"--log-json-info-buffer-size=1Ki", "--permit-port-sharing", "--permit-address-sharing", "--vmodule=server=3",
	}
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string]string{
		"client-connection-kubeconfig": "/etc/kubeconfig", "disable-metrics": "true", "enable-http2": "true",
		"otel-collector-endpoint": "collector:4317", "otel-sample-rate": "0.5", "otel-trace-namespace": "ns",
		"otel-fallback-no-op-on-error": "true", "logging-format": "json", "permit-address-sharing": "true", "vmodule": "server=3",
	} {
		if got := cmd.Flags().Lookup(flag).Value.String(); got != want {
			t.Errorf("--%s = %s, want %s", flag, got, want)
		}
	}
	if err := cmd.ParseFlags([]string{"--feature-gates=NoSuchGate=true"}); err == nil || !strings.Contains(err.Error(), "unrecognized feature gate") {
		t.Errorf("unknown gate: %v", err)
	}
}

func TestFlagValidation(t *testing.T) {
	for name, tc := range map[string]struct {
		set  func(*Options)
		want string
	}{
		"two kubeconfigs": {func(o *Options) { o.Kubeconfig, o.ClientConnectionKubeconfig = "a", "b" }, "name the same setting"},
		"background evictions": {func(o *Options) {
			// Accepted (it was refused before issue #27): evictions in background are tracked.
			if err := o.FeatureGate.Set("EvictionsInBackground=true"); err != nil {
				t.Fatal(err)
			}
			o.Kubeconfig = "a"
		}, ""},
		"sample rate":         {func(o *Options) { o.Tracing.SampleRate = 1.5 }, "--otel-sample-rate"},
		"ca without endpoint": {func(o *Options) { o.Tracing.TransportCACert = "/ca.pem" }, "needs --otel-collector-endpoint"},
		"same kubeconfig":     {func(o *Options) { o.Kubeconfig, o.ClientConnectionKubeconfig = "a", "a" }, ""},
	} {
		t.Run(name, func(t *testing.T) {
			o := NewOptions()
			o.PolicyConfigFile = "p.yaml"
			tc.set(o)
			err := o.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if o.kubeconfig() != "a" {
					t.Errorf("kubeconfig = %q", o.kubeconfig())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}

// A tracing set-up error stops the start unless --otel-fallback-no-op-on-error, which runs without
// tracing; no endpoint is no tracing.
func TestTracingFallback(t *testing.T) {
	ctx := context.Background()
	bad := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(bad, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := TracingOptions{CollectorEndpoint: "127.0.0.1:4317", TransportCACert: bad, SampleRate: 1}
	if _, err := o.newTracerProvider(ctx); err == nil || !strings.Contains(err.Error(), "holds no PEM certificate") {
		t.Errorf("bad CA without fallback: %v", err)
	}
	o.FallbackToNoOp = true
	tp, err := o.newTracerProvider(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tp.(interface{ ForceFlush(context.Context) error }); ok {
		t.Errorf("fallback provider is an SDK provider, want the no-op one")
	}
	o = TracingOptions{SampleRate: 1}
	if tp, err := o.newTracerProvider(ctx); err != nil || tp == nil {
		t.Errorf("no endpoint: %v, %v", tp, err)
	} else if _, s := tp.Tracer("x").Start(ctx, "s"); s.SpanContext().IsValid() {
		t.Errorf("no endpoint records spans")
	}
	o = TracingOptions{CollectorEndpoint: "127.0.0.1:4317", SampleRate: 1}
	tp, err = o.newTracerProvider(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tp.Shutdown(ctx) }()
	if _, s := tp.Tracer("x").Start(ctx, "s"); !s.SpanContext().IsSampled() {
		t.Errorf("sample rate 1 did not sample")
	}
	var _ tracing.TracerProvider = tp
}

func TestVersionCommand(t *testing.T) {
	cmd := NewDeschedulerCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"version"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "accord-descheduler version v") {
		t.Errorf("version printed %q", out.String())
	}
}
