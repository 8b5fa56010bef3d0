package evictions

import (
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/apis/descheduler"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

// The rules of a workload budget, named as the policy's fields.
const (
	RuleMaxMigrating   = "maxMigratingPerWorkload"
	RuleMaxUnavailable = "maxUnavailablePerWorkload"
	RuleSingleReplica  = "evictSingleReplicaWorkloads"
)

// BudgetConfig is the policy's per-workload budget. A nil limit takes Koordinator's default by
// replica count (DefaultWorkloadLimit).
type BudgetConfig struct {
	MaxMigrating, MaxUnavailable *intstr.IntOrString
	EvictSingleReplica           bool
}

// BudgetFromPolicy returns the policy's workload budget.
func BudgetFromPolicy(p *descheduler.DeschedulerPolicy) BudgetConfig {
	return BudgetConfig{
		MaxMigrating:       p.MaxMigratingPerWorkload,
		MaxUnavailable:     p.MaxUnavailablePerWorkload,
		EvictSingleReplica: p.EvictSingleReplicaWorkloads != nil && *p.EvictSingleReplicaWorkloads,
	}
}

// DefaultWorkloadLimit is Koordinator's default for both per-workload limits: 10% of the replicas
// above 10 replicas, 2 for 4 to 10 replicas, 1 otherwise.
func DefaultWorkloadLimit(replicas int) intstr.IntOrString {
	switch {
	case replicas > 10:
		return intstr.FromString("10%")
	case replicas >= 4:
		return intstr.FromInt32(2)
	default:
		return intstr.FromInt32(1)
	}
}

// workloadLimit resolves a limit for a workload of replicas: a percentage is rounded down, and
// never below 1 (a budget that rounds to 0 would stop the workload's pods for ever).
func workloadLimit(v *intstr.IntOrString, replicas int) (limit int, defaulted bool) {
	val := v
	if val == nil {
		d := DefaultWorkloadLimit(replicas)
		val, defaulted = &d, true
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(val, replicas, false)
	if err != nil || n < 1 {
		n = 1
	}
	return n, defaulted
}

// budgetEviction is one eviction counted against a workload until its replacement is Ready.
type budgetEviction struct {
	pod types.UID
	at  time.Time
	// inProgress: an eviction in progress outside the Eviction API (soft, in background), which
	// ends without the pod going when the tracker of evictions in progress drops it.
	inProgress bool
	// accepted: the evict plugin returned nil (the apiserver accepted the Eviction: the pod is
	// terminating there), so the pod is gone for its workload whether or not the informer has
	// delivered its deletion yet. Without it, whether the next pod of the workload may go right
	// after this eviction depends on that delivery's timing.
	accepted bool
}

// Budget enforces the per-workload budgets across profiles, cycles and the event-triggered
// controllers: an eviction counts against its workload from Reserve until the pod is gone and a pod
// of the workload created since is Ready (or the workload has as many Ready pods as replicas), or,
// for an eviction in progress (soft, in background), until its annotation is removed while the pod
// stays (InProgress tells releasePod).
// Dry-run reservations count until the next Reset only. Safe for concurrent use.
type Budget struct {
	cfg BudgetConfig
	src WorkloadSource
	now func() time.Time
	// inProgress, when set, holds evictions in progress (soft, in background): their pods count
	// against their workload while they exist (Limiter.SetInProgress sets it).
	inProgress *InProgress

	mu sync.Mutex
	// evicted holds, per workload UID, the evictions not yet replaced.
	evicted map[types.UID][]budgetEviction
	// dry counts, per workload UID, the dry-run reservations of this cycle.
	dry      map[types.UID]int
	reported map[types.UID]bool
	// replacements holds, per workload UID, the pods that already replaced an eviction.
	replacements map[types.UID]map[types.UID]bool
	// gone holds, per workload UID, the pods whose accepted eviction is replaced while the cache
	// still lists them running: neither Ready nor a replacement, until the cache shows them go.
	gone map[types.UID]map[types.UID]bool
}

// NewBudget returns a Budget over src; now is the clock (time.Now when nil).
func NewBudget(cfg BudgetConfig, src WorkloadSource, now func() time.Time) *Budget {
	if now == nil {
		now = time.Now
	}
	return &Budget{cfg: cfg, src: src, now: now, evicted: map[types.UID][]budgetEviction{}, dry: map[types.UID]int{}, reported: map[types.UID]bool{},
		replacements: map[types.UID]map[types.UID]bool{}, gone: map[types.UID]map[types.UID]bool{}}
}

// Config returns the budget's configuration.
func (b *Budget) Config() BudgetConfig { return b.cfg }

// HasSynced reports whether the workload caches have synced.
func (b *Budget) HasSynced() bool { return b.src.HasSynced() }

// Reset starts a new cycle: dry-run reservations are dropped.
func (b *Budget) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dry = map[types.UID]int{}
	b.reported = map[types.UID]bool{}
}

// BudgetSlot is what Reserve took; Release returns it.
type BudgetSlot struct {
	workload types.UID
	pod      types.UID
	dryRun   bool
}

// Check returns the *framework.WorkloadBudgetError Reserve would return now, or nil.
func (b *Budget) Check(pod *corev1.Pod) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, _, err := b.check(pod)
	if err != nil {
		return err
	}
	return nil
}

// Reserve counts the pod's eviction against its workload, or returns the
// *framework.WorkloadBudgetError that stops it. A pod without a workload passes uncounted.
func (b *Budget) Reserve(pod *corev1.Pod, dryRun bool) (BudgetSlot, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	w, ok, err := b.check(pod)
	if err != nil {
		return BudgetSlot{}, err
	}
	if !ok {
		return BudgetSlot{}, nil
	}
	if dryRun {
		b.dry[w.UID]++
	} else {
		b.evicted[w.UID] = append(b.evicted[w.UID], budgetEviction{pod: pod.UID, at: b.now()})
	}
	return BudgetSlot{workload: w.UID, pod: pod.UID, dryRun: dryRun}, nil
}

// Release returns a slot whose eviction did not happen.
func (b *Budget) Release(s BudgetSlot) {
	if s.workload == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.dryRun {
		if b.dry[s.workload] > 0 {
			b.dry[s.workload]--
		}
		return
	}
	list := b.evicted[s.workload]
	for i := range list {
		if list[i].pod == s.pod {
			b.evicted[s.workload] = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(b.evicted[s.workload]) == 0 {
		delete(b.evicted, s.workload)
	}
}

// markInProgress records that the eviction of slot s went on in progress outside the Eviction API
// (soft, in background): prune forgets it once the tracker of evictions in progress no longer
// has its pod while the pod stays (an unconfirmed background eviction dropped after
// AssumedBackgroundTimeout).
func (b *Budget) markInProgress(s BudgetSlot) {
	b.mark(s, func(e *budgetEviction) { e.inProgress = true })
}

// markAccepted records that the eviction of slot s was accepted (the evict plugin returned nil).
func (b *Budget) markAccepted(s BudgetSlot) {
	b.mark(s, func(e *budgetEviction) { e.accepted = true })
}

// mark applies set to the eviction slot s counts (none for a dry run or a pod without a workload).
func (b *Budget) mark(s BudgetSlot, set func(*budgetEviction)) {
	if s.workload == "" || s.dryRun {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range b.evicted[s.workload] {
		if b.evicted[s.workload][i].pod == s.pod {
			set(&b.evicted[s.workload][i])
		}
	}
}

// releasePod forgets the evictions of a pod that stays: its eviction in progress (soft, in
// background) ended without the pod going (the annotation was removed), so it no longer migrates.
// Without this the slot would be held for as long as the pod exists, as prune keeps the evictions
// of pods still there.
func (b *Budget) releasePod(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for w, list := range b.evicted {
		kept := list[:0]
		for _, e := range list {
			if e.pod != uid {
				kept = append(kept, e)
			}
		}
		if len(kept) == len(list) {
			continue
		}
		klog.V(3).InfoS("Eviction in progress ended with the pod still there; its workload budget slot is released", "podUID", uid, "workload", w)
		if len(kept) == 0 {
			delete(b.evicted, w)
		} else {
			b.evicted[w] = kept
		}
	}
}

// Counts reports whether the eviction of pod is counted already (this process evicted it, and it is
// not replaced yet, or replaced while the cache still lists the pod running): a copy of the pod
// read before its deletion showed is not to be held, nor evicted again.
func (b *Budget) Counts(pod *corev1.Pod) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, list := range b.evicted {
		for _, e := range list {
			if e.pod == pod.UID {
				return true
			}
		}
	}
	for _, g := range b.gone {
		if g[pod.UID] {
			return true
		}
	}
	return false
}

// Migrating returns how many evictions count against the workload with uid now (not yet replaced).
func (b *Budget) Migrating(uid types.UID) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.evicted[uid])
}

// check resolves the pod's workload, forgets its replaced evictions and applies the rules. b.mu held.
func (b *Budget) check(pod *corev1.Pod) (Workload, bool, *framework.WorkloadBudgetError) {
	w, pods, ok := b.src.Workload(pod)
	if !ok {
		return w, false, nil
	}
	if w.Replicas <= 1 && !b.cfg.EvictSingleReplica {
		return w, true, b.report(w, &framework.WorkloadBudgetError{Workload: w.String(), Rule: RuleSingleReplica, Limit: 1, Replicas: w.Replicas, Default: true})
	}
	b.prune(w, pods)
	evicted := b.evicted[w.UID]
	counted := make(map[types.UID]bool, len(evicted))
	for _, e := range evicted {
		counted[e.pod] = true
	}
	ready := 0
	// An evicted pod still Ready in the cache (its deletion not yet seen) is unavailable already.
	evictedStillReady := 0
	// Pods whose eviction is in progress (soft, in background) and not counted above migrate too.
	inProgress := 0
	for _, p := range pods {
		_, ip := b.inProgress.Has(p.UID)
		if ip && !counted[p.UID] {
			inProgress++
			counted[p.UID] = true
		}
		if p.DeletionTimestamp != nil || !podReady(p) || b.gone[w.UID][p.UID] {
			continue
		}
		if counted[p.UID] {
			evictedStillReady++
			continue
		}
		ready++
	}
	unavailable := max(w.Replicas-ready, evictedStillReady)
	migrating := len(evicted) + inProgress + b.dry[w.UID]
	maxMig, migDefault := workloadLimit(b.cfg.MaxMigrating, w.Replicas)
	if migrating+1 > maxMig {
		return w, true, b.report(w, &framework.WorkloadBudgetError{Workload: w.String(), Rule: RuleMaxMigrating, Limit: maxMig, Count: migrating, Replicas: w.Replicas, Default: migDefault})
	}
	// Evicting a pod that is not Ready makes no more pods unavailable.
	grows := 0
	if pod.DeletionTimestamp == nil && podReady(pod) {
		grows = 1
	}
	// Dry-run reservations stand for pods that would go unavailable.
	unavailable += b.dry[w.UID]
	maxUnav, unavDefault := workloadLimit(b.cfg.MaxUnavailable, w.Replicas)
	if unavailable+grows > maxUnav {
		return w, true, b.report(w, &framework.WorkloadBudgetError{Workload: w.String(), Rule: RuleMaxUnavailable, Limit: maxUnav, Count: unavailable, Replicas: w.Replicas, Default: unavDefault})
	}
	return w, true, nil
}

// report logs the first stop of a workload in a cycle. b.mu held.
func (b *Budget) report(w Workload, err *framework.WorkloadBudgetError) *framework.WorkloadBudgetError {
	if !b.reported[w.UID] {
		b.reported[w.UID] = true
		klog.V(2).InfoS("Workload budget reached; its pods wait for replacements", "workload", w.String(), "rule", err.Rule,
			"limit", err.Limit, "count", err.Count, "replicas", err.Replicas, "default", err.Default)
	}
	return err
}

// prune forgets the workload's evictions that are replaced: the pod is gone (or terminating, or
// finished, or its eviction accepted) and a pod of the workload created since the eviction is
// Ready (each such pod replaces one eviction), or the workload has as many Ready pods as replicas;
// and the evictions in progress that ended with the pod still there. b.mu held.
func (b *Budget) prune(w Workload, pods []*corev1.Pod) {
	gone := b.gone[w.UID]
	if len(gone) > 0 {
		listed := make(map[types.UID]bool, len(gone))
		for _, p := range pods {
			if gone[p.UID] && p.DeletionTimestamp == nil && !finished(p) {
				listed[p.UID] = true
			}
		}
		for uid := range gone {
			if !listed[uid] {
				delete(gone, uid)
			}
		}
		if len(gone) == 0 {
			delete(b.gone, w.UID)
		}
	}
	list := b.evicted[w.UID]
	if len(list) == 0 {
		delete(b.replacements, w.UID)
		return
	}
	used := b.replacements[w.UID]
	if used == nil {
		used = map[types.UID]bool{}
		b.replacements[w.UID] = used
	}
	evicted := make(map[types.UID]bool, len(list))
	for _, e := range list {
		evicted[e.pod] = true
	}
	present := make(map[types.UID]bool, len(pods))
	var readyPods []*corev1.Pod
	for _, p := range pods {
		// A finished pod (Succeeded, Failed) is gone for its workload, though its object stays.
		if p.DeletionTimestamp == nil && !finished(p) {
			present[p.UID] = true
			if podReady(p) && !evicted[p.UID] && !gone[p.UID] {
				readyPods = append(readyPods, p)
			}
		}
	}
	// Each eviction (in the order they were made) takes the oldest unused replacement created since
	// it: pods in creation order, not in the order the workload source lists them (an index, in
	// map order), or an older eviction could take the only replacement a newer one can have, and
	// how many evictions are replaced would change from call to call.
	slices.SortStableFunc(readyPods, func(a, b *corev1.Pod) int {
		if c := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	kept := list[:0]
	for _, e := range list {
		if present[e.pod] && !e.accepted {
			if e.inProgress {
				if _, ok := b.inProgress.Has(e.pod); !ok {
					// Its eviction ended and the pod stayed: it no longer migrates.
					continue
				}
			}
			kept = append(kept, e)
			continue
		}
		replaced := len(readyPods) >= w.Replicas
		for _, p := range readyPods {
			// Creation timestamps have a second's resolution.
			if !used[p.UID] && !p.CreationTimestamp.Time.Before(e.at.Truncate(time.Second)) {
				used[p.UID], replaced = true, true
				break
			}
		}
		if !replaced {
			kept = append(kept, e)
		} else if present[e.pod] {
			// Accepted, replaced, and still listed running by the cache.
			if b.gone[w.UID] == nil {
				b.gone[w.UID] = map[types.UID]bool{}
			}
			b.gone[w.UID][e.pod] = true
		}
	}
	if len(kept) == 0 {
		delete(b.evicted, w.UID)
		delete(b.replacements, w.UID)
		return
	}
	b.evicted[w.UID] = kept
}

func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
