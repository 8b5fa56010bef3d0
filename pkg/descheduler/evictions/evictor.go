package evictions

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
)

// Event reasons recorded on pods.
const (
	ReasonDescheduled    = "Descheduled"
	ReasonEvictionFailed = "EvictionFailed"
)

// ProfileEvictor is the framework.Evictor of one profile.
type ProfileEvictor struct {
	Profile            string
	Filters            []framework.EvictorPlugin
	PreEvictionFilters []framework.EvictorPlugin
	EvictPlugin        framework.EvictPlugin
	Limiter            *Limiter
	DryRun             bool
	Metrics            *metrics.Metrics
	Recorder           events.EventRecorder
	// GracePeriodSeconds fills DeleteOptions.GracePeriodSeconds when an eviction leaves it nil.
	GracePeriodSeconds *int64
	// NotifyFailures records a Warning Event on a pod whose eviction failed.
	NotifyFailures bool
}

var _ framework.Evictor = &ProfileEvictor{}

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
	for _, f := range e.PreEvictionFilters {
		if !f.PreEvictionFilter(pod) {
			return false
		}
	}
	return true
}

// Evict checks the limits, then evicts the pod through the evict plugin (or, in dry-run mode, logs
// what it would have done), counts the result and records an Event on an evicted pod.
func (e *ProfileEvictor) Evict(ctx context.Context, pod *corev1.Pod, opts framework.EvictOptions) error {
	logger := klog.FromContext(ctx)
	node := pod.Spec.NodeName
	if err := e.Limiter.Reserve(node, pod.Namespace); err != nil {
		logger.V(3).Info("Eviction skipped", "pod", klog.KObj(pod), "node", node, "plugin", opts.PluginName, "reason", err)
		return err
	}
	if e.DryRun {
		logger.Info("Dry run: would evict pod", "pod", klog.KObj(pod), "node", node, "profile", e.Profile, "plugin", opts.PluginName, "reason", opts.Reason)
		e.count(metrics.ResultDryRun, opts, pod)
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
	start := time.Now()
	if err := e.EvictPlugin.Evict(ctx, pod, opts); err != nil {
		e.Limiter.Release(node, pod.Namespace)
		e.count(metrics.ResultError, opts, pod)
		logger.Info("Pod not evicted", "pod", klog.KObj(pod), "node", node, "profile", e.Profile, "plugin", opts.PluginName, "err", err)
		if e.NotifyFailures && e.Recorder != nil {
			e.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, ReasonEvictionFailed, "Descheduling",
				"Eviction by %s failed (%s): %v", opts.PluginName, opts.Reason, err)
		}
		return err
	}
	e.count(metrics.ResultSuccess, opts, pod)
	logger.Info("Evicted pod", "pod", klog.KObj(pod), "node", node, "profile", e.Profile, "plugin", opts.PluginName,
		"reason", opts.Reason, "duration", time.Since(start))
	if e.Recorder != nil {
		e.Recorder.Eventf(pod, nil, corev1.EventTypeNormal, ReasonDescheduled, "Descheduling",
			"Evicted by the Accord descheduler, plugin %s (profile %s): %s", opts.PluginName, e.Profile, opts.Reason)
	}
	return nil
}

func (e *ProfileEvictor) count(result string, opts framework.EvictOptions, pod *corev1.Pod) {
	if e.Metrics != nil {
		e.Metrics.PodsEvicted.WithLabelValues(result, opts.PluginName, e.Profile, pod.Namespace, pod.Spec.NodeName).Inc()
	}
}
