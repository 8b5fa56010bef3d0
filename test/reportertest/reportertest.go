// Package reportertest runs accord-metrics-reporter in-process (its app.Run) for integration tests.
package reportertest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/accord-sched/accord/pkg/metricsreporter"
	"github.com/accord-sched/accord/pkg/metricsreporter/app"
)

// Start runs the reporter with the configuration (the YAML after apiVersion and kind, read through
// the same file loader as the binary) until the test ends, and returns once its informers synced.
func Start(t *testing.T, cfg *rest.Config, config string) *metricsreporter.Metrics {
	t.Helper()
	path := filepath.Join(t.TempDir(), "metrics-reporter.yaml")
	if err := os.WriteFile(path, []byte("apiVersion: metricsreporter/v1alpha1\nkind: MetricsReporterConfiguration\n"+config), 0o644); err != nil {
		t.Fatal(err)
	}
	rc, err := metricsreporter.LoadConfigFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := metricsreporter.NewMetrics()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		done <- app.Run(ctx, app.Config{RestConfig: cfg, Config: rc, Metrics: m, OnReady: func() { close(ready) }})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("metrics reporter: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("metrics reporter did not stop within 30s")
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("metrics reporter stopped early: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("metrics reporter's informers did not sync within 30s")
	}
	return m
}
