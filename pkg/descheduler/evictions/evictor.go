package evictions

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/decision"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
)

// Event reasons recorded on pods.
const (
	ReasonDescheduled    = "Descheduled"
	ReasonEvictionFailed = "EvictionFailed"
	// ReasonEvictionHeld is a nominated pod held by its workload budget or a closed eviction window.
	ReasonEvictionHeld = "EvictionHeld"
)

// What held an eviction, in EvictionHeld Events (and the console's timeline).
const (
	HeldWorkloadBudget = "workload budget"
	HeldWindow         = "eviction window"
)

// ProfileEvictor is the framework.Evictor of one profile.
type ProfileEvictor struct {
	Profile            string
	Filters            []framework.EvictorPlugin
	PreEvictionFilters []framework.EvictorPlugin
	EvictPlugin        framework.EvictPlugin
	Limiter            *Limiter
	DryRun             bool
	// Windows, when set, are the profile's eviction windows: outside them it evicts nothing (in
	// dry-run mode it says what it would evict and when the next window opens).
	Windows *Windows
	// Now is the clock of the windows (time.Now when nil).
	Now      func() time.Time
	Metrics  *metrics.Metrics
	Recorder events.EventRecorder
	// GracePeriodSeconds fills DeleteOptions.GracePeriodSeconds when an eviction leaves it nil.
	GracePeriodSeconds *int64
	// NotifyFailures records a Warning Event on a pod whose eviction failed.
	NotifyFailures bool
	// Fresh, when set, is asked before every eviction; a non-empty answer names the caches that have
	// not re-synced since a broken watch, and the eviction is held (framework.ErrCachesNotSynced).
	Fresh func() (waitingFor []string)
	// Soft, when set, is the profile's soft eviction (evictionMode Soft): pods are annotated rather
	// than evicted (see soft.go, mode.go).
	Soft *Soft
	// Observer, when set, is told of every preEvictionFilter verdict and every eviction attempt
	// (explain collects its rows with it). It is called synchronously; keep it cheap.
	Observer func(Record)

	// admissions keeps the PlacementJudges' predictions of admitted pods until their eviction.
	admissions admissions
}

// Stages of a Record.
const (
	StagePreEvictionFilter = "preEvictionFilter"
	StageEvict             = "evict"
)

// Record is one observation of a candidate pod.
type Record struct {
	Profile string
	// Plugin is the plugin that nominated the pod ("" when it called the profile's evictor
	// rather than its own Handle's).
	Plugin string
	Pod    *corev1.Pod
	// Stage is StagePreEvictionFilter or StageEvict.
	Stage string
	// BlockedBy is the preEvictionFilter plugin that refused the pod ("" when all admitted it).
	BlockedBy string
	// Reason is the nominating plugin's reason (StageEvict).
	Reason string
	// Err is the eviction's result (StageEvict): nil, framework.ErrDryRun, a limit error, an error
	// wrapping framework.ErrPodGone, or the evict plugin's error.
	Err error
}

// ForPlugin returns the evictor a plugin gets in its Handle: the profile's evictor, telling the
// preEvictionFilter plugins that are framework.PlacementJudges which plugin nominated
// the pod, and naming the plugin in evictions that do not.
func (e *ProfileEvictor) ForPlugin(name string) framework.Evictor {
	return &pluginEvictor{e: e, plugin: name}
}

type pluginEvictor struct {
	e      *ProfileEvictor
	plugin string
}

func (p *pluginEvictor) Filter(pod *corev1.Pod) bool { return p.e.Filter(pod) }
func (p *pluginEvictor) PreEvictionFilter(pod *corev1.Pod) bool {
	return p.e.preEvictionFilter(pod, p.plugin)
}
func (p *pluginEvictor) CheckLimits(pod *corev1.Pod) error { return p.e.checkLimits(pod, p.plugin) }
func (p *pluginEvictor) Evict(ctx context.Context, pod *corev1.Pod, opts framework.EvictOptions) error {
	if opts.PluginName == "" {
		opts.PluginName = p.plugin
	}
	return p.e.Evict(ctx, pod, opts)
}

func (p *pluginEvictor) OnWindowOpen(fn func()) func() { return p.e.OnWindowOpen(fn) }

// OnWindowOpen calls fn each time one of the profile's eviction windows opens, until remove is
// called (framework.WindowWatcher); a profile without windows never calls it.
func (e *ProfileEvictor) OnWindowOpen(fn func()) (remove func()) {
	if e.Windows == nil {
		return func() {}
	}
	return e.Windows.OnOpen(fn)
}

var (
	_ framework.Evictor       = &ProfileEvictor{}
	_ framework.Evictor       = &pluginEvictor{}
	_ framework.WindowWatcher = &ProfileEvictor{}
	_ framework.WindowWatcher = &pluginEvictor{}
)

// CheckLimits returns the limit error Evict would return now for pod because of the cycle's
// limits, or nil (framework.Evictor); it reserves nothing.
func (e *ProfileEvictor) CheckLimits(pod *corev1.Pod) error { return e.checkLimits(pod, "") }

// checkLimits walks the gates Evict walks, in the same order (gates.go), reserving nothing; it
// also tells the Observer of a pod an in-progress eviction, a closed window or the workload budget
// holds (explain shows it), as the plugin will not call Evict for it.
func (e *ProfileEvictor) checkLimits(pod *corev1.Pod, plugin string) error {
	return e.checkGates(pod, plugin)
}

// windowClosed returns the *framework.WindowClosedError of a profile whose windows are all closed
// now (nil: open, or no windows), logging and setting the window metric at each edge.
func (e *ProfileEvictor) windowClosed() error {
	if e.Windows == nil {
		return nil
	}
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	open, next := e.Windows.Observe(now(), e.Profile, e.Metrics)
	if open {
		return nil
	}
	return &framework.WindowClosedError{Profile: e.Profile, NextOpen: next, DryRun: e.DryRun}
}

// held counts a held eviction and records an EvictionHeld Event on the pod, with its decision (not
// in dry-run mode); the events recorder folds repeats into one Event's series.
func (e *ProfileEvictor) held(pod *corev1.Pod, plugin string, err error) {
	reason, what := metrics.HeldWorkloadBudget, HeldWorkloadBudget
	if framework.IsWindowClosed(err) {
		reason, what = metrics.HeldWindowClosed, HeldWindow
	}
	if e.Metrics != nil {
		e.Metrics.EvictionsHeld.WithLabelValues(reason, e.Profile).Inc()
	}
	if !e.DryRun {
		d := e.newDecision(pod, plugin, "", decision.VerdictHeld)
		d.Blocker = &decision.Blocker{Gate: what, Message: err.Error()}
		e.recordDecision(pod, corev1.EventTypeNormal, ReasonEvictionHeld, HeldEventMessage(plugin, e.Profile, what, err.Error()), d)
	}
}

// Filter reports whether every filter plugin lets the pod be evicted.
func (e *ProfileEvictor) Filter(pod *corev1.Pod) bool {
	for _, f := range e.Filters {
		if !f.Filter(pod) {
			return false
		}
	}
	return true
}

// PreEvictionFilter reports whether every preEvictionFilter plugin lets the pod be evicted.
func (e *ProfileEvictor) PreEvictionFilter(pod *corev1.Pod) bool {
	return e.preEvictionFilter(pod, "")
}

// preEvictionFilter asks the preEvictionFilter plugins in turn, the PlacementJudges with the
// nominator; a pod they all admit is kept with the judges' predictions until its eviction.
func (e *ProfileEvictor) preEvictionFilter(pod *corev1.Pod, nominator string) bool {
	blockedBy := ""
	var predictions []decision.Prediction
	for _, f := range e.PreEvictionFilters {
		var ok bool
		if j, judge := f.(framework.PlacementJudge); judge {
			var pred *decision.Prediction
			ok, pred = j.PreEvictionFilterFor(pod, nominator)
			if ok && pred != nil {
				predictions = append(predictions, *pred)
			}
		} else {
			ok = f.PreEvictionFilter(pod)
		}
		if !ok {
			blockedBy = f.Name()
			break
		}
	}
	if blockedBy == "" {
		e.admissions.admit(pod, predictions)
	}
	if e.Observer != nil {
		e.Observer(Record{Profile: e.Profile, Plugin: nominator, Pod: pod, Stage: StagePreEvictionFilter, BlockedBy: blockedBy})
	}
	return blockedBy == ""
}

// Evict checks the limits, then evicts the pod through the evict plugin (or, in dry-run mode, logs
// what it would have done), counts the result and records an Event on an evicted pod. A pod the
// evict plugin finds already gone (framework.ErrPodGone or a NotFound) frees its limit slot and is
// neither counted nor reported: the error returned wraps framework.ErrPodGone. So is a pod that is
// already terminating (DeletionTimestamp set) or whose eviction another evictor of this process has
// in flight: neither is evicted nor counted.
func (e *ProfileEvictor) Evict(ctx context.Context, pod *corev1.Pod, opts framework.EvictOptions) (err error) {
	if e.Observer != nil {
		defer func() {
			e.Observer(Record{Profile: e.Profile, Plugin: opts.PluginName, Pod: pod, Stage: StageEvict, Reason: opts.Reason, Err: err})
		}()
	}
	logger := klog.FromContext(ctx)
	node := pod.Spec.NodeName
	a := &attempt{ctx: ctx, logger: logger, pod: pod, opts: opts}
	defer func() {
		// Whatever happened, this eviction is no longer under way: a later Reset does not carry
		// its slot over (a released slot is not counted anywhere any more).
		e.Limiter.End(a.slot)
		if a.claimed {
			e.Limiter.Unclaim(pod.UID)
		}
	}()
	err = e.reserveGates(a)
	if opts.GatesPassed != nil {
		opts.GatesPassed()
	}
	if err != nil {
		return err
	}
	closed, slot, budget, bslot := a.closed, a.slot, a.budget, a.bslot
	predictions := e.admissions.take(pod)
	predicted, extra := predictedNode(predictions), predictionNote(predictions)
	if e.DryRun {
		logger.Info("Dry run: would evict pod", "pod", klog.KObj(pod), "node", node, "profile", e.Profile, "plugin", opts.PluginName, "reason", opts.Reason, "prediction", extra)
		e.count(metrics.ResultDryRun, opts, pod)
		if closed != nil {
			return closed
		}
		return framework.ErrDryRun
	}
	if e.GracePeriodSeconds != nil && (opts.DeleteOptions == nil || opts.DeleteOptions.GracePeriodSeconds == nil) {
		d := &metav1.DeleteOptions{}
		if opts.DeleteOptions != nil {
			d = opts.DeleteOptions.DeepCopy()
		}
		d.GracePeriodSeconds = e.GracePeriodSeconds
		opts.DeleteOptions = d
	}
	if opts.PredictedNode == "" {
		opts.PredictedNode = predicted
	}
	// The reservation a reservation-first evict plugin places before evicting goes into the decision.
	var reservation *decision.Reservation
	beforeEvict := opts.BeforeEvict
	opts.BeforeEvict = func(ctx context.Context, name, node string) error {
		if beforeEvict != nil {
			if err := beforeEvict(ctx, name, node); err != nil {
				return err
			}
		}
		reservation = &decision.Reservation{Name: name, Node: node}
		return nil
	}
	start := time.Now()
	if done, err := e.evictDeferred(ctx, pod, opts, slot, bslot, predictions, start); done {
		return err
	}
	assumed := e.assumeBackground(pod)
	if err := e.EvictPlugin.Evict(ctx, pod, opts); err != nil {
		if e.inBackground(ctx, pod, opts, err, slot, bslot, predictions, start) {
			return nil
		}
		e.endBackground(pod, assumed, "eviction not answered in progress")
		e.Limiter.Release(slot)
		if budget != nil {
			budget.Release(bslot)
		}
		if framework.IsPodGone(err) || apierrors.IsNotFound(err) {
			// Another eviction (an event-triggered controller, a cycle) got there first: not evicted
			// by us, and nothing left to do.
			logger.V(2).Info("Pod already gone; nothing to evict", "pod", klog.KObj(pod), "node", node, "profile", e.Profile, "plugin", opts.PluginName, "err", err)
			if !framework.IsPodGone(err) {
				err = fmt.Errorf("%w: %w", framework.ErrPodGone, err)
			}
			return err
		}
		e.count(metrics.ResultError, opts, pod)
		logger.Info("Pod not evicted", "pod", klog.KObj(pod), "node", node, "profile", e.Profile, "plugin", opts.PluginName, "err", err)
		if e.NotifyFailures && e.Recorder != nil {
			e.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, ReasonEvictionFailed, "Descheduling",
				"Eviction by %s failed (%s): %v", opts.PluginName, opts.Reason, err)
		}
		return err
	}
	e.endBackground(pod, assumed, "evicted")
	if budget != nil {
		budget.markAccepted(bslot)
	}
	e.count(metrics.ResultSuccess, opts, pod)
	logger.Info("Evicted pod", "pod", klog.KObj(pod), "node", node, "profile", e.Profile, "plugin", opts.PluginName,
		"reason", opts.Reason, "prediction", extra, "duration", time.Since(start))
	d := e.newDecision(pod, opts.PluginName, opts.Reason, decision.VerdictEvicted)
	d.Predictions, d.Reservation, d.RequestedAt = predictions, reservation, &start
	e.recordDecision(pod, corev1.EventTypeNormal, ReasonDescheduled, EventMessage(opts.PluginName, e.Profile, opts.Reason, extra), d)
	return nil
}

func (e *ProfileEvictor) count(result string, opts framework.EvictOptions, pod *corev1.Pod) {
	if e.Metrics != nil {
		e.Metrics.PodsEvicted.WithLabelValues(result, opts.PluginName, e.Profile, pod.Namespace, pod.Spec.NodeName).Inc()
	}
}
