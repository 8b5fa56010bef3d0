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
