package framework

import (
	"errors"
	"fmt"
	"time"
)

// LimitScope is what an eviction limit counts.
type LimitScope string

const (
	// LimitScopeNode counts the evictions from one node in one cycle.
	LimitScopeNode LimitScope = "node"
	// LimitScopeNamespace counts the evictions from one namespace in one cycle.
	LimitScopeNamespace LimitScope = "namespace"
	// LimitScopeTotal counts all evictions of one cycle.
	LimitScopeTotal LimitScope = "total"
)

// EvictionLimitError is returned by Evictor.Evict when a per-cycle limit has been reached. A plugin
// moves on to the next node on a node limit, skips the namespace on a namespace limit, and stops on
// the total limit.
type EvictionLimitError struct {
	Scope LimitScope
	// Key is the node or namespace name; empty for the total limit.
	Key string
	// Limit is the value reached.
	Limit int
	// Default is true when the limit is Accord's safe default, not a value from the policy.
	Default bool
}

func (e *EvictionLimitError) Error() string {
	src := "policy"
	if e.Default {
		src = "default"
	}
	if e.Key == "" {
		return fmt.Sprintf("eviction limit reached: %d pods per cycle in total (%s)", e.Limit, src)
	}
	return fmt.Sprintf("eviction limit reached: %d pods per cycle for %s %q (%s)", e.Limit, e.Scope, e.Key, src)
}

func limitScope(err error) (LimitScope, bool) {
	var le *EvictionLimitError
	if errors.As(err, &le) {
		return le.Scope, true
	}
	return "", false
}

// IsNodeLimit reports whether err says the pod's node reached its limit for this cycle.
func IsNodeLimit(err error) bool { s, ok := limitScope(err); return ok && s == LimitScopeNode }

// IsNamespaceLimit reports whether err says the pod's namespace reached its limit for this cycle.
func IsNamespaceLimit(err error) bool {
	s, ok := limitScope(err)
	return ok && s == LimitScopeNamespace
}

// IsTotalLimit reports whether err says the cycle reached its total limit; the plugin should stop.
func IsTotalLimit(err error) bool { s, ok := limitScope(err); return ok && s == LimitScopeTotal }

// ErrPodGone is returned (wrapped) by Evictor.Evict when the pod no longer exists: the Eviction API
// answered NotFound, typically because another eviction of the same pod (an event-triggered
// controller and a periodic cycle) won the race; or the pod is terminating already, was recreated
// under the same name (another UID), or another evictor of the process has its eviction in flight. Nothing was evicted by this call and nothing is
// left to do: it is counted neither as an error nor as a success, uses up no limit slot, and a
// plugin should ignore it (see IsPodGone).
var ErrPodGone = errors.New("pod already gone: not evicted")

// IsPodGone reports whether err says the pod was already gone when its eviction was attempted.
func IsPodGone(err error) bool { return errors.Is(err, ErrPodGone) }

// ErrEvictionInProgress is returned (wrapped, with ErrPodGone) by Evictor.Evict for a pod whose
// eviction is already in progress outside the Eviction API call (soft-evicted, or evicted in
// background): it is not evicted again (see IsEvictionInProgress).
var ErrEvictionInProgress = errors.New("eviction in progress")

// IsEvictionInProgress reports whether err says the pod's eviction is already in progress.
func IsEvictionInProgress(err error) bool { return errors.Is(err, ErrEvictionInProgress) }

// ErrDryRun is returned by Evictor.Evict in dry-run mode: the pod passed the limits and would have
// been evicted, but nothing was written.
var ErrDryRun = errors.New("dry run: pod not evicted")

// ErrCachesNotSynced is returned (wrapped) by Evictor.Evict while the descheduler's informer caches
// have not re-synced after a broken watch (an apiserver restart): no decision is taken on them. The
// pod was not evicted, nothing is counted, and the plugin should stop and retry later (see
// IsCachesNotSynced).
var ErrCachesNotSynced = errors.New("informer caches not re-synced: not evicting")

// IsCachesNotSynced reports whether err says the eviction was held because the caches are stale.
func IsCachesNotSynced(err error) bool { return errors.Is(err, ErrCachesNotSynced) }

// WorkloadBudgetError is returned by Evictor.Evict when the pod's workload (its top controller) has
// used its disruption budget (the policy's maxMigratingPerWorkload, maxUnavailablePerWorkload, or the
// one-replica rule): the pod is kept for now and may go once replacements are Ready. A plugin goes
// on with its next pod.
type WorkloadBudgetError struct {
	// Workload is "Kind namespace/name".
	Workload string
	// Rule is the field that stopped the eviction: maxMigratingPerWorkload,
	// maxUnavailablePerWorkload or evictSingleReplicaWorkloads.
	Rule string
	// Limit is the rule's value for this workload; Count what is already counted against it.
	Limit, Count int
	// Replicas is the workload's desired replica count.
	Replicas int
	// Default is true when the limit is Koordinator's default by replica count.
	Default bool
}

func (e *WorkloadBudgetError) Error() string {
	if e.Rule == "evictSingleReplicaWorkloads" {
		return fmt.Sprintf("workload budget: %s has one replica and evictSingleReplicaWorkloads is not set", e.Workload)
	}
	src := "policy"
	if e.Default {
		src = "default"
	}
	return fmt.Sprintf("workload budget: %s (%d replicas) has %d of %d allowed by %s (%s)", e.Workload, e.Replicas, e.Count, e.Limit, e.Rule, src)
}

// IsWorkloadBudget reports whether err says the pod's workload budget stopped its eviction.
func IsWorkloadBudget(err error) bool {
	var we *WorkloadBudgetError
	return errors.As(err, &we)
}

// WindowClosedError is returned by Evictor.Evict when the profile's eviction windows are all closed:
// the pod is not evicted now. In dry-run mode the pod went through every other check and would be
// evicted once a window opens: the error then also matches ErrDryRun.
type WindowClosedError struct {
	Profile string
	// NextOpen is when the profile's next window opens.
	NextOpen time.Time
	DryRun   bool
}

func (e *WindowClosedError) Error() string {
	msg := fmt.Sprintf("eviction window of profile %q closed; next opens %s", e.Profile, e.NextOpen.Format(time.RFC3339))
	if e.DryRun {
		msg += " (dry run: would be evicted then)"
	}
	return msg
}

// Unwrap makes a dry-run WindowClosedError match ErrDryRun.
func (e *WindowClosedError) Unwrap() error {
	if e.DryRun {
		return ErrDryRun
	}
	return nil
}

// IsWindowClosed reports whether err says the profile's eviction windows are closed.
func IsWindowClosed(err error) bool {
	var we *WindowClosedError
	return errors.As(err, &we)
}
