package evictions

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/decision"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
)

// inProgress returns the error of a pod whose eviction is already in progress (soft, in
// background): it is not evicted again, and the error wraps framework.ErrPodGone so that plugins
// neither count nor retry it.
func (e *ProfileEvictor) inProgress(ctx context.Context, pod *corev1.Pod, opts framework.EvictOptions) error {
	kind, ok := e.Limiter.InProgress().Has(pod.UID)
	if !ok {
		return nil
	}
	klog.FromContext(ctx).V(3).Info("Pod's eviction already in progress; not evicting it again", "pod", klog.KObj(pod), "node", pod.Spec.NodeName,
		"profile", e.Profile, "plugin", opts.PluginName, "kind", kind)
	return fmt.Errorf("pod %s/%s: %w: %w (%s)", pod.Namespace, pod.Name, framework.ErrPodGone, framework.ErrEvictionInProgress, kind)
}

// evictDeferred soft-evicts the pod when the profile is in evictionMode Soft (done is then true):
// it annotates the pod, records a SoftEvicted Event and tracks the pod as in progress, which counts
// it against the caps (its slot in this window, the tracker in later ones: Limiter.HandOver) and
// its workload budget until it is gone.
func (e *ProfileEvictor) evictDeferred(ctx context.Context, pod *corev1.Pod, opts framework.EvictOptions, slot Slot, bslot BudgetSlot, predictions []decision.Prediction, start time.Time) (done bool, err error) {
	if e.Soft == nil {
		return false, nil
	}
	logger := klog.FromContext(ctx)
	extra := predictionNote(predictions)
	// Tracked from before the request: a cycle's Reset while it is in flight does not free its
	// count for another eviction.
	t := e.Limiter.InProgress()
	if t != nil {
		t.Assume(pod, InProgressSoft)
	}
	if err := e.Soft.Annotate(ctx, pod, opts.PluginName, opts.Reason); err != nil {
		if t != nil {
			t.forget(pod.UID, InProgressSoft, "soft eviction failed", pod)
		}
		e.Limiter.Release(slot)
		if b := e.Limiter.Budget(); b != nil {
			b.Release(bslot)
		}
		if apierrors.IsNotFound(err) {
			return true, fmt.Errorf("soft-evicting pod %s/%s: %w: %w", pod.Namespace, pod.Name, framework.ErrPodGone, err)
		}
		e.count(metrics.ResultError, opts, pod)
		logger.Info("Pod not soft-evicted", "pod", klog.KObj(pod), "node", pod.Spec.NodeName, "profile", e.Profile, "plugin", opts.PluginName, "err", err)
		return true, fmt.Errorf("soft-evicting pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if t != nil {
		if b := e.Limiter.Budget(); b != nil {
			b.markInProgress(bslot)
		}
		e.Limiter.HandOver(slot, pod.UID)
	}
	e.count(metrics.ResultSoft, opts, pod)
	logger.Info("Soft-evicted pod", "pod", klog.KObj(pod), "node", pod.Spec.NodeName, "profile", e.Profile, "plugin", opts.PluginName,
		"reason", opts.Reason, "prediction", extra, "annotation", SoftEvictionAnnotation)
	d := e.newDecision(pod, opts.PluginName, opts.Reason, decision.VerdictSoftEvicted)
	d.Predictions, d.RequestedAt = predictions, &start
	e.recordDecision(pod, corev1.EventTypeNormal, ReasonSoftEvicted, SoftEvictedEventMessage(opts.PluginName, e.Profile, opts.Reason, extra), d)
	return true, nil
}

// IsEvictionInBackground reports whether err is the answer of a controller that took the eviction
// of a request-evict-only pod in background (KubeVirt's webhook: 429 "Eviction triggered evacuation").
func IsEvictionInBackground(err error) bool {
	return apierrors.IsTooManyRequests(err) && strings.Contains(err.Error(), EvictionInBackgroundErrorText)
}

// assumeBackground tracks, with EvictionsInBackground, a request-evict-only pod before its eviction
// is requested (true), so that a cycle's Reset while the request is in flight does not free its
// count for another eviction; endBackground forgets it unless the answer was "in progress".
func (e *ProfileEvictor) assumeBackground(pod *corev1.Pod) bool {
	t := e.Limiter.InProgress()
	if !t.Background() || !hasAnnotation(pod, RequestEvictOnlyAnnotation) || pod.UID == "" {
		return false
	}
	t.Assume(pod, InProgressBackground)
	return true
}

func (e *ProfileEvictor) endBackground(pod *corev1.Pod, assumed bool, why string) {
	if assumed {
		e.Limiter.InProgress().forget(pod.UID, InProgressBackground, why, pod)
	}
}

// inBackground handles, with EvictionsInBackground, an eviction of a pod annotated
// request-evict-only answered "in progress": the pod is tracked as in progress (counted against the
// caps by its slot in this window and by the tracker in later ones, and against its workload
// budget, kept) and true is returned. A finished pod is not tracked (true: nothing to do).
// Otherwise false.
func (e *ProfileEvictor) inBackground(ctx context.Context, pod *corev1.Pod, opts framework.EvictOptions, err error, slot Slot, bslot BudgetSlot, predictions []decision.Prediction, start time.Time) bool {
	t := e.Limiter.InProgress()
	if !t.Background() || !hasAnnotation(pod, RequestEvictOnlyAnnotation) || !IsEvictionInBackground(err) {
		return false
	}
	logger := klog.FromContext(ctx)
	if finished(pod) {
		t.forget(pod.UID, InProgressBackground, "pod finished", pod)
		e.Limiter.Release(slot)
		if b := e.Limiter.Budget(); b != nil {
			b.Release(bslot)
		}
		logger.V(3).Info("Eviction in background of a finished pod; not tracked", "pod", klog.KObj(pod))
		return true
	}
	// Tracked before the slot is handed over: a concurrent eviction always sees one of them.
	t.Assume(pod, InProgressBackground)
	if b := e.Limiter.Budget(); b != nil {
		b.markInProgress(bslot)
	}
	e.Limiter.HandOver(slot, pod.UID)
	e.count(metrics.ResultBackground, opts, pod)
	logger.Info("Eviction in background", "pod", klog.KObj(pod), "node", pod.Spec.NodeName, "profile", e.Profile, "plugin", opts.PluginName,
		"reason", opts.Reason, "answer", err.Error())
	d := e.newDecision(pod, opts.PluginName, opts.Reason, decision.VerdictInBackground)
	d.Predictions, d.RequestedAt = predictions, &start
	e.recordDecision(pod, corev1.EventTypeNormal, ReasonEvictionInBackground, InBackgroundEventMessage(opts.PluginName, e.Profile, opts.Reason), d)
	return true
}
