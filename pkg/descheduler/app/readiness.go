package app

import (
	"errors"
	"strings"
	"sync"
)

// readiness is what /readyz reports: not ready, with the reason (which informer caches have not
// synced), until the descheduler's caches have synced.
type readiness struct {
	mu     sync.Mutex
	ready  bool
	reason string
	// stale, once ready, is why the caches cannot be decided on (a watch broke and they have not
	// re-synced); "" when they can.
	stale string
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

// setStale records that cycles are skipped until the caches named re-sync (nil: they have).
func (r *readiness) setStale(waitingFor []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stale = ""
	if len(waitingFor) > 0 {
		r.stale = "informer caches not re-synced after a broken watch; descheduling cycles skipped, waiting for: " + strings.Join(waitingFor, "; ")
	}
}

func (r *readiness) check() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ready {
		if r.stale != "" {
			return errors.New(r.stale)
		}
		return nil
	}
	return errors.New(r.reason)
}
