// Package evictions enforces the per-cycle eviction limits and composes a profile's evictor plugins
// and evict plugin into the framework.Evictor plugins evict through.
package evictions

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/apis/descheduler"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

// Safe defaults, applied when a policy sets no limit at all (none of maxNoOfPodsToEvictPerNode,
// maxNoOfPodsToEvictPerNamespace, maxNoOfPodsToEvictTotal). They keep one cycle from evicting a large
// part of a cluster at once: upstream's descheduler, with no limits, evicted 21 000 of 100 000 pods in
// one cycle over 5 000 nodes. Setting any limit in the policy replaces the defaults: only the limits
// it sets apply, and 0 would mean no pod at all may be evicted.
const (
	// DefaultMaxPodsToEvictPerNode is the default per-node cap of one cycle.
	DefaultMaxPodsToEvictPerNode = 2
	// DefaultMaxPodsToEvictTotal is the default cap of one cycle.
	DefaultMaxPodsToEvictTotal = 50
)

// Limits are the caps of one cycle; nil means unlimited.
type Limits struct {
	PerNode      *int
	PerNamespace *int
	Total        *int
	// Defaulted is true when the policy set no limit and the safe defaults apply.
	Defaulted bool
}

// LimitsFromPolicy returns the policy's limits, or the safe defaults when it sets none.
func LimitsFromPolicy(p *descheduler.DeschedulerPolicy) Limits {
	if p.MaxNoOfPodsToEvictPerNode == nil && p.MaxNoOfPodsToEvictPerNamespace == nil && p.MaxNoOfPodsToEvictTotal == nil {
		node, total := DefaultMaxPodsToEvictPerNode, DefaultMaxPodsToEvictTotal
		return Limits{PerNode: &node, Total: &total, Defaulted: true}
	}
	conv := func(v *int32) *int {
		if v == nil {
			return nil
		}
		i := int(*v)
		return &i
	}
	return Limits{
		PerNode:      conv(p.MaxNoOfPodsToEvictPerNode),
		PerNamespace: conv(p.MaxNoOfPodsToEvictPerNamespace),
		Total:        conv(p.MaxNoOfPodsToEvictTotal),
	}
}

// Limiter counts evictions against Limits. It is shared by every profile and controller of a
// descheduler and is safe for concurrent use. Reset starts a new cycle. It also holds the pods whose
// eviction is in flight (Claim), so two evictors of one process (a cycle's plugin and an
// event-triggered controller, or two profiles) never post two Evictions for one pod at once.
type Limiter struct {
	limits Limits
	// budget, when set, holds the per-workload budgets; Reset resets it too.
	budget *Budget
	// inProgress, when set, holds the evictions in progress (soft, in background): each counts
	// against every cap, in every window, until its pod is gone.
	inProgress *InProgress

	mu          sync.Mutex
	inFlight    map[types.UID]struct{}
	total       int
	perNode     map[string]int
	perNS       map[string]int
	capReported map[framework.LimitScope]bool
	// window counts the Resets: a slot belongs to the window it was reserved in, or, while its
	// eviction is still under way, to the window it was carried over into.
	window uint64
	// open are the slots whose eviction has not ended (End or Release), by id, with the window
	// that counts each. Reset carries them over: an eviction reserved in one window and sent in the
	// next (a reservation-first eviction waits up to its placementTimeout for its reservation)
	// counts in the next, so the evictions sent within a window stay within its caps.
	open   map[uint64]*Slot
	lastID uint64
	// handedOver are the pods whose eviction went on in progress (soft, in background) in this
	// window: their slots stay counted in this window (Reset drops them) and the tracker's counts
	// leave the pods out meanwhile, so that each counts once, and in the window it started in even
	// when its pod is gone before the window ends.
	handedOver map[types.UID]bool
}

// Slot is an eviction slot Reserve took: on a node, in a namespace, in one window of the limits (the
// counts between two Resets).
type Slot struct {
	node, namespace string
	window          uint64
	// id names the slot among the Limiter's open ones (0: none taken).
	id uint64
}

// NewLimiter returns a Limiter for limits.
func NewLimiter(limits Limits) *Limiter {
	l := &Limiter{limits: limits}
	l.Reset()
	return l
}

// SetBudget makes the Limiter's evictors apply the per-workload budget b (nil: none). Call it before
// the first eviction.
func (l *Limiter) SetBudget(b *Budget) {
	l.budget = b
	if b != nil {
		b.inProgress = l.inProgress
	}
	l.linkInProgress()
}

// linkInProgress makes the tracker of evictions in progress release, in the budget, the slot of
// a pod whose eviction ended while it stays (a soft-eviction annotation removed).
func (l *Limiter) linkInProgress() {
	if l.inProgress == nil {
		return
	}
	if l.budget == nil {
		l.inProgress.ended = nil
		return
	}
	l.inProgress.ended = l.budget.releasePod
}

// SetInProgress makes the Limiter and its budget count the evictions in progress t tracks (nil:
// none). Call it before the first eviction.
func (l *Limiter) SetInProgress(t *InProgress) {
	l.inProgress = t
	if l.budget != nil {
		l.budget.inProgress = t
	}
	l.linkInProgress()
}

// InProgress returns the tracker of evictions in progress, nil when there is none.
func (l *Limiter) InProgress() *InProgress { return l.inProgress }

// Budget returns the per-workload budget, nil when there is none.
func (l *Limiter) Budget() *Budget { return l.budget }

// Limits returns the limits enforced.
func (l *Limiter) Limits() Limits { return l.limits }

// Reset zeroes the counts for a new cycle.
func (l *Limiter) Reset() {
	if l.budget != nil {
		l.budget.Reset()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total = 0
	l.perNode = map[string]int{}
	l.perNS = map[string]int{}
	l.capReported = map[framework.LimitScope]bool{}
	l.handedOver = nil
	l.window++
	// The evictions still under way count in the new window: the apiserver sees them in it.
	for _, s := range l.open {
		s.window = l.window
		l.total++
		l.perNode[s.node]++
		l.perNS[s.namespace]++
	}
}

// Reserve takes one eviction slot for a pod on node in namespace, or returns an
// *framework.EvictionLimitError naming the limit that is reached. A reserved slot that does not end in
// an eviction must be returned with Release.
func (l *Limiter) Reserve(node, namespace string) (Slot, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.reached(node, namespace); err != nil {
		return Slot{}, err
	}
	l.total++
	l.perNode[node]++
	l.perNS[namespace]++
	l.lastID++
	s := Slot{node: node, namespace: namespace, window: l.window, id: l.lastID}
	if l.open == nil {
		l.open = map[uint64]*Slot{}
	}
	open := s
	l.open[s.id] = &open
	return s, nil
}

// End says that the eviction of a slot Reserve took has ended (sent, or handed on to the tracker of
// evictions in progress): its count stays in the window that holds it, and no later Reset carries
// it over. A released slot, or the zero Slot, is ignored.
func (l *Limiter) End(s Slot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.open, s.id)
}

// HandOver says that the eviction of slot s went on in progress outside the Eviction API (soft, in
// background) for the pod with uid, which the tracker of evictions in progress now holds: the slot
// stays counted in its window, and until the next Reset the tracker's count of the pod is left
// out. An eviction in progress counts in the window it started in and, through the tracker, in
// every later one while its pod is there. A released or ended slot, or the zero Slot, is ignored.
func (l *Limiter) HandOver(s Slot, uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.open[s.id]; !ok {
		return
	}
	delete(l.open, s.id)
	if l.handedOver == nil {
		l.handedOver = map[types.UID]bool{}
	}
	l.handedOver[uid] = true
}

// Check returns the *framework.EvictionLimitError Reserve would return now for a pod on node in
// namespace, or nil when a slot is free; it takes none. Plugins ask it before the (costly)
// preEvictionFilters: a pod no limit lets go is not simulated.
func (l *Limiter) Check(node, namespace string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.reached(node, namespace); err != nil {
		return err
	}
	return nil
}

// reached returns the limit a pod on node in namespace is stopped by (nil: none), logging the
// first time in the window that each scope's limit stops one. l.mu must be held.
func (l *Limiter) reached(node, namespace string) *framework.EvictionLimitError {
	var err *framework.EvictionLimitError
	// Evictions in progress (soft, in background) count in every window until their pods are gone;
	// those handed over in this window are counted by their slots instead.
	ipTotal, ipNode, ipNS := l.inProgress.countsExcept(node, namespace, l.handedOver)
	switch {
	case l.limits.Total != nil && l.total+ipTotal >= *l.limits.Total:
		err = &framework.EvictionLimitError{Scope: framework.LimitScopeTotal, Limit: *l.limits.Total, Default: l.limits.Defaulted}
	case l.limits.PerNode != nil && node != "" && l.perNode[node]+ipNode >= *l.limits.PerNode:
		err = &framework.EvictionLimitError{Scope: framework.LimitScopeNode, Key: node, Limit: *l.limits.PerNode, Default: l.limits.Defaulted}
	case l.limits.PerNamespace != nil && l.perNS[namespace]+ipNS >= *l.limits.PerNamespace:
		err = &framework.EvictionLimitError{Scope: framework.LimitScopeNamespace, Key: namespace, Limit: *l.limits.PerNamespace, Default: l.limits.Defaulted}
	default:
		return nil
	}
	if !l.capReported[err.Scope] {
		l.capReported[err.Scope] = true
		if err.Default {
			klog.InfoS("Safe default eviction cap applied for this cycle; set maxNoOfPodsToEvict* in the policy to change it",
				"scope", err.Scope, "limit", err.Limit, "key", err.Key)
		} else {
			klog.InfoS("Eviction limit reached for this cycle", "scope", err.Scope, "limit", err.Limit, "key", err.Key)
		}
	}
	return err
}

// Claim marks the pod's eviction as in flight; it returns false when another eviction of the same
// pod is in flight. A successful Claim must be followed by Unclaim when the eviction ends. Claims
// outlive Reset.
func (l *Limiter) Claim(uid types.UID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight == nil {
		l.inFlight = map[types.UID]struct{}{}
	}
	if _, busy := l.inFlight[uid]; busy {
		return false
	}
	l.inFlight[uid] = struct{}{}
	return true
}

// Unclaim ends the in-flight eviction Claim started.
func (l *Limiter) Unclaim(uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.inFlight, uid)
}

// Release returns a slot taken by Reserve for an eviction that did not happen, to the window that
// counts it: the one it was reserved in, or the one Reset carried it over into while its eviction
// was under way. A slot of a window that has been reset since (its eviction ended before the Reset)
// is not returned: the counts of the new window do not hold it, and returning it would give the new
// window one eviction more than its limits.
func (l *Limiter) Release(s Slot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if open, ok := l.open[s.id]; ok {
		s.window = open.window
		delete(l.open, s.id)
	}
	if s.id == 0 && s.node == "" && s.namespace == "" && s.window == 0 {
		return
	}
	if s.window != l.window {
		return
	}
	l.total--
	l.perNode[s.node]--
	l.perNS[s.namespace]--
}

// InFlight returns how many evictions are in flight (claimed and not yet ended), whichever window
// they were reserved in.
func (l *Limiter) InFlight() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.inFlight)
}

// Total returns the evictions counted since the last Reset.
func (l *Limiter) Total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}
