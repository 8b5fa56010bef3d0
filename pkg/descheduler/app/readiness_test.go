package app

import (
	"strings"
	"testing"
)

// /readyz is false with the reason until the caches have synced, and stays ready after.
func TestReadinessReportsWhy(t *testing.T) {
	r := newReadiness()
	if err := r.check(); err == nil {
		t.Fatal("ready before anything synced")
	}
	r.setWaiting("waiting for the descheduler informer caches to sync: core/v1.Pod")
	if err := r.check(); err == nil || !strings.Contains(err.Error(), "core/v1.Pod") {
		t.Fatalf("check = %v, want the reason naming the informer", err)
	}
	r.setReady()
	r.setWaiting("late")
	if err := r.check(); err != nil {
		t.Fatalf("check after ready = %v", err)
	}
}

// Once ready, /readyz turns false with the caches waited for while cycles are skipped on stale
// caches, and true again when they have re-synced.
func TestReadinessFalseWhileCachesStale(t *testing.T) {
	r := newReadiness()
	r.setReady()
	r.setStale([]string{"pods (watch down for 2s: stream broke)"})
	if err := r.check(); err == nil || !strings.Contains(err.Error(), "pods (watch down") {
		t.Fatalf("check while stale = %v, want the caches named", err)
	}
	r.setStale(nil)
	if err := r.check(); err != nil {
		t.Fatalf("check after re-sync = %v", err)
	}
}
