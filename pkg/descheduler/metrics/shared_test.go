package metrics

import (
	"testing"

	"k8s.io/component-base/metrics"
)

// TestRegisterSharedOncePerRegistry: the second instance gets the first one's collectors; another
// registry gets its own; a plain KubeRegistry is registered with as it is.
func TestRegisterSharedOncePerRegistry(t *testing.T) {
	newCounter := func() *metrics.Counter {
		return metrics.NewCounter(&metrics.CounterOpts{Name: "accord_test_shared_total", Help: "test", StabilityLevel: metrics.ALPHA})
	}
	register := func(c *metrics.Counter) func(metrics.KubeRegistry) (*metrics.Counter, error) {
		return func(reg metrics.KubeRegistry) (*metrics.Counter, error) { return c, reg.Register(c) }
	}
	a, b := New().Registry, New().Registry
	first, second := newCounter(), newCounter()
	got1, err := RegisterShared(a, "k", register(first))
	if err != nil || got1 != first {
		t.Fatalf("first registration: %v, %p want %p", err, got1, first)
	}
	got2, err := RegisterShared(a, "k", register(second))
	if err != nil || got2 != first {
		t.Fatalf("second instance: %v, got %p, want the first's %p", err, got2, first)
	}
	if got, err := RegisterShared(b, "k", register(second)); err != nil || got != second {
		t.Fatalf("another registry: %v, %p", err, got)
	}
	if _, err := RegisterShared(a, "k", func(metrics.KubeRegistry) (string, error) { return "", nil }); err == nil {
		t.Fatal("a different type under the same key was not refused")
	}
	plain := metrics.NewKubeRegistry()
	if _, err := RegisterShared(plain, "k", register(newCounter())); err != nil {
		t.Fatal(err)
	}
	if _, err := RegisterShared(plain, "k", register(newCounter())); err == nil {
		t.Fatal("a plain registry shared what it cannot")
	}
}
