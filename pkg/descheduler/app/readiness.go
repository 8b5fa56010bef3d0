package app

import (
	"errors"
	"sync"
)

// readiness is what /readyz reports: not ready, with the reason (which informer caches have not
// synced), until the descheduler's caches have synced.
type readiness struct {
	mu     sync.Mutex
	ready  bool
	reason string
}

func newReadiness() *readiness {
	return &readiness{reason: "informer caches not synced yet (the descheduler has not started them: loading the policy, building the plugins or waiting for leadership)"}
}

func (r *readiness) setReady() {
	r.mu.Lock()
	r.ready, r.reason = true, ""
	r.mu.Unlock()
}

func (r *readiness) setWaiting(reason string) {
	r.mu.Lock()
	if !r.ready {
		r.reason = reason
	}
	r.mu.Unlock()
}

func (r *readiness) check() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ready {
		return nil
	}
	return errors.New(r.reason)
}
