// Package inprocess runs accord-scheduler and accord-descheduler in the test's process, against a
// harness control plane, for the rest of a test. (A package of its own so that tests that run no
// binary in-process do not link kube-scheduler.)
package inprocess

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/accord-sched/accord/pkg/descheduler/runner"
	"github.com/accord-sched/accord/pkg/scheduler/server"
	"github.com/accord-sched/accord/test/harness"
)

// WriteFile writes content to a file named name in a temporary folder of the test and returns its
// path.
func WriteFile(t testing.TB, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Scheduler runs accord-scheduler (server.RunInProcess) with the configuration file config until the
// test ends; a scheduler that stops on its own is a test error, one that stops within 200 ms fatal.
func Scheduler(t testing.TB, env *harness.Env, config string) {
	t.Helper()
	SchedulerWith(t, env, config, server.NewAccordOptions())
}

// SchedulerWith is Scheduler with accord-scheduler's own flags set to a (server.RunInProcessWith).
func SchedulerWith(t testing.TB, env *harness.Env, config string, a *server.AccordOptions) {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.RunInProcessWith(ctx, kubeconfig, config, a) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("accord-scheduler: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("accord-scheduler did not stop 30 s after the test ended")
		}
	})
	select {
	case err := <-done:
		t.Fatalf("accord-scheduler stopped early: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
}

// Descheduler runs accord-descheduler (runner.Run with cfg) until the test ends, and returns once it
// is ready (cfg.OnReady is set here); not ready within 60 s is fatal.
func Descheduler(t testing.TB, cfg runner.Config) {
	t.Helper()
	ready := make(chan struct{})
	cfg.OnReady = func() { close(ready) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runner.Run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("accord-descheduler: %v", err)
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("accord-descheduler stopped early: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("accord-descheduler not ready after 60 s")
	}
}
