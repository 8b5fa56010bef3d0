package evictions

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

// gate is one of the checks an eviction passes before the evict plugin is asked. gates lists them in
// their one order: CheckLimits walks it with check (it reserves nothing), Evict with reserve. The
// evictor's mode (dry run, soft, in background) and the evict plugin (the PDB-aware Eviction API)
// come after the last gate, in Evict only.
type gate struct {
	name string
	// check is the gate's verdict for CheckLimits; nil: CheckLimits does not ask this gate (it
	// depends on the attempt itself: the pod's state at Evict, the caches, the in-flight claim).
	check func(e *ProfileEvictor, pod *corev1.Pod, plugin string) error
	// observeCheck: a pod check refuses is told to the Observer (explain shows it), as the plugin
	// will not call Evict for it.
	observeCheck bool
	// reserve is the gate's verdict for Evict, taking what the gate counts; a gate that took
	// something undoes it in undo when a later gate refuses the pod.
	reserve func(e *ProfileEvictor, a *attempt) error
	undo    func(e *ProfileEvictor, a *attempt)
}

// attempt is one Evict call on its way through the gates.
type attempt struct {
	ctx    context.Context
	logger klog.Logger
	pod    *corev1.Pod
	opts   framework.EvictOptions
	// closed is the profile's *framework.WindowClosedError when its windows are closed in dry-run
	// mode (the dry run goes on to say what would be evicted, and when).
	closed  error
	claimed bool
	slot    Slot
	budget  *Budget
	bslot   BudgetSlot
}

// gates is the order of the gates; CheckLimits and Evict both walk it.
var gates = []gate{
	{
		// A terminating pod is on its way out: evicting it again would be answered 200 by the
		// apiserver and counted as an eviction that did not happen.
		name: "terminating",
		reserve: func(e *ProfileEvictor, a *attempt) error {
			if a.pod.DeletionTimestamp == nil {
				return nil
			}
			a.logger.V(2).Info("Pod already terminating; nothing to evict", "pod", klog.KObj(a.pod), "node", a.pod.Spec.NodeName, "profile", e.Profile, "plugin", a.opts.PluginName)
			return fmt.Errorf("pod %s/%s: %w: terminating", a.pod.Namespace, a.pod.Name, framework.ErrPodGone)
		},
	},
	{
		// Every pod past here is nominated (soft eviction keeps the marks of nominated pods).
		name: "nominated",
		check: func(e *ProfileEvictor, pod *corev1.Pod, _ string) error {
			e.Soft.Nominate(pod)
			return nil
		},
		reserve: func(e *ProfileEvictor, a *attempt) error {
			e.Soft.Nominate(a.pod)
			return nil
		},
	},
	{
		// A pod whose eviction is in progress is on its way out: the plugin counts it as evicted.
		name:         "in progress",
		observeCheck: true,
		check: func(e *ProfileEvictor, pod *corev1.Pod, plugin string) error {
			return e.inProgress(context.Background(), pod, framework.EvictOptions{PluginName: plugin})
		},
		reserve: func(e *ProfileEvictor, a *attempt) error { return e.inProgress(a.ctx, a.pod, a.opts) },
	},
	{
		// No decision on a cache that has not re-synced: the pod may have moved or been replaced
		// since.
		name: "caches",
		reserve: func(e *ProfileEvictor, a *attempt) error {
			if e.Fresh == nil {
				return nil
			}
			waiting := e.Fresh()
			if len(waiting) == 0 {
				return nil
			}
			a.logger.V(2).Info("Eviction held: caches not re-synced", "pod", klog.KObj(a.pod), "node", a.pod.Spec.NodeName, "profile", e.Profile, "plugin", a.opts.PluginName, "waitingFor", waiting)
			err := fmt.Errorf("pod %s/%s: %w (waiting for %s)", a.pod.Namespace, a.pod.Name, framework.ErrCachesNotSynced, strings.Join(waiting, "; "))
			e.Soft.Cut(a.pod, err)
			return err
		},
	},
	{
		// Outside the profile's eviction windows nothing is evicted; a dry run goes on to say what
		// would be, and when.
		name:         HeldWindow,
		observeCheck: true,
		check: func(e *ProfileEvictor, pod *corev1.Pod, plugin string) error {
			if err := e.windowClosed(); err != nil && !e.DryRun {
				e.held(pod, plugin, err)
				return err
			}
			return nil
		},
		reserve: func(e *ProfileEvictor, a *attempt) error {
			closed := e.windowClosed()
			if closed == nil {
				return nil
			}
			if e.DryRun {
				a.closed = closed
				return nil
			}
			e.held(a.pod, a.opts.PluginName, closed)
			a.logger.V(3).Info("Eviction held: eviction window closed", "pod", klog.KObj(a.pod), "node", a.pod.Spec.NodeName, "profile", e.Profile, "plugin", a.opts.PluginName, "reason", closed)
			return closed
		},
	},
	{
		// One eviction of a pod at a time in this process; the loser of a race between a cycle and
		// an event-triggered controller (or two profiles) stands back, and when it comes later it
		// finds the pod terminating or gone. Evict gives the claim back when it returns.
		name: "in flight",
		reserve: func(e *ProfileEvictor, a *attempt) error {
			if a.pod.UID == "" {
				return nil
			}
			if !e.Limiter.Claim(a.pod.UID) {
				a.logger.V(2).Info("Pod's eviction already in flight; not evicting it twice", "pod", klog.KObj(a.pod), "node", a.pod.Spec.NodeName, "profile", e.Profile, "plugin", a.opts.PluginName)
				return fmt.Errorf("pod %s/%s: %w: its eviction is in flight", a.pod.Namespace, a.pod.Name, framework.ErrPodGone)
			}
			a.claimed = true
			return nil
		},
	},
	{
		// The cycle's caps (per node, per namespace, total).
		name: "caps",
		check: func(e *ProfileEvictor, pod *corev1.Pod, _ string) error {
			if err := e.Limiter.Check(pod.Spec.NodeName, pod.Namespace); err != nil {
				e.Soft.Cut(pod, err)
				return err
			}
			return nil
		},
		reserve: func(e *ProfileEvictor, a *attempt) error {
			slot, err := e.Limiter.Reserve(a.pod.Spec.NodeName, a.pod.Namespace)
			if err != nil {
				a.logger.V(3).Info("Eviction skipped", "pod", klog.KObj(a.pod), "node", a.pod.Spec.NodeName, "plugin", a.opts.PluginName, "reason", err)
				e.Soft.Cut(a.pod, err)
				return err
			}
			a.slot = slot
			return nil
		},
		undo: func(e *ProfileEvictor, a *attempt) { e.Limiter.Release(a.slot) },
	},
	{
		// The pod's workload's disruption budget.
		name:         HeldWorkloadBudget,
		observeCheck: true,
		check: func(e *ProfileEvictor, pod *corev1.Pod, plugin string) error {
			b := e.Limiter.Budget()
			if b == nil {
				return nil
			}
			if err := evictedAlready(b, pod); err != nil {
				return err
			}
			if err := b.Check(pod); err != nil {
				e.held(pod, plugin, err)
				return err
			}
			return nil
		},
		reserve: func(e *ProfileEvictor, a *attempt) error {
			a.budget = e.Limiter.Budget()
			if a.budget == nil {
				return nil
			}
			if err := evictedAlready(a.budget, a.pod); err != nil {
				a.logger.V(2).Info("Pod already evicted; nothing to evict", "pod", klog.KObj(a.pod), "node", a.pod.Spec.NodeName, "profile", e.Profile, "plugin", a.opts.PluginName)
				return err
			}
			bslot, err := a.budget.Reserve(a.pod, e.DryRun)
			if err != nil {
				a.logger.V(2).Info("Eviction held by the workload budget", "pod", klog.KObj(a.pod), "node", a.pod.Spec.NodeName, "profile", e.Profile, "plugin", a.opts.PluginName, "reason", err)
				e.held(a.pod, a.opts.PluginName, err)
				return err
			}
			a.bslot = bslot
			return nil
		},
	},
}

// evictedAlready is the error of a pod whose eviction the budget counts already (a copy read before
// its deletion showed): it is gone, not held by its own eviction; the error wraps
// framework.ErrPodGone, so that plugins neither count nor retry it.
func evictedAlready(b *Budget, pod *corev1.Pod) error {
	if pod.UID == "" || !b.Counts(pod) {
		return nil
	}
	return fmt.Errorf("pod %s/%s: %w: evicted already (its deletion or its replacement not yet seen)", pod.Namespace, pod.Name, framework.ErrPodGone)
}

// checkGates walks the gates as CheckLimits does: the first refusal, or nil; nothing is reserved.
func (e *ProfileEvictor) checkGates(pod *corev1.Pod, plugin string) error {
	for _, g := range gates {
		if g.check == nil {
			continue
		}
		if err := g.check(e, pod, plugin); err != nil {
			if g.observeCheck && e.Observer != nil {
				e.Observer(Record{Profile: e.Profile, Plugin: plugin, Pod: pod, Stage: StageEvict, Err: err})
			}
			return err
		}
	}
	return nil
}

// reserveGates walks the gates as Evict does: on a refusal it undoes what the gates passed so far
// took, in reverse, and returns it.
func (e *ProfileEvictor) reserveGates(a *attempt) error {
	for i, g := range gates {
		if err := g.reserve(e, a); err != nil {
			for j := i - 1; j >= 0; j-- {
				if gates[j].undo != nil {
					gates[j].undo(e, a)
				}
			}
			return err
		}
	}
	return nil
}
