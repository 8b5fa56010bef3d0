package runtime

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

// TracerName names the tracer the runtime creates its spans with.
const TracerName = "github.com/accord-sched/accord/pkg/descheduler"

// Span names. A cycle span is the parent of the plugin spans of that cycle; an eviction span is
// the child of the span of the plugin that asked for it (or of whatever span the caller's context
// carries, e.g. none for an event-triggered controller).
const (
	SpanCycle    = "DeschedulingCycle"
	SpanEvict    = "EvictPod"
	opDeschedule = "deschedule"
	opBalance    = "balance"
)

// Span attribute keys.
const (
	AttrProfile   = attribute.Key("profile")
	AttrPlugin    = attribute.Key("plugin")
	AttrOperation = attribute.Key("operation")
	AttrPod       = attribute.Key("pod")
	AttrNode      = attribute.Key("node")
	AttrReason    = attribute.Key("reason")
	AttrResult    = attribute.Key("result")
	AttrNodes     = attribute.Key("nodes")
	AttrEvictions = attribute.Key("evictions")
)

// spanName is the name of a plugin span, e.g. "deschedule/RemoveDuplicates".
func spanName(point, plugin string) string { return point + "/" + plugin }

// tracedEvictor wraps a plugin's evictor with a span around each eviction.
type tracedEvictor struct {
	framework.Evictor
	tracer          trace.Tracer
	profile, plugin string
}

func (e *tracedEvictor) Evict(ctx context.Context, pod *corev1.Pod, opts framework.EvictOptions) (err error) {
	ctx, span := e.tracer.Start(ctx, SpanEvict, trace.WithAttributes(
		AttrProfile.String(e.profile), AttrPlugin.String(e.plugin), AttrOperation.String("evict"),
		AttrPod.String(pod.Namespace+"/"+pod.Name), AttrNode.String(pod.Spec.NodeName), AttrReason.String(opts.Reason)))
	defer func() {
		span.SetAttributes(AttrResult.String(evictionResult(err)))
		if err != nil && !framework.IsPodGone(err) && !errors.Is(err, framework.ErrDryRun) {
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}()
	return e.Evictor.Evict(ctx, pod, opts)
}

// OnWindowOpen forwards to the wrapped evictor (framework.WindowWatcher), so that an event-triggered
// controller built on a plugin's traced evictor still hears its profile's windows open; without
// it the wrapper hid the interface and held keys waited for their back-off after a window opened.
func (e *tracedEvictor) OnWindowOpen(fn func()) (remove func()) {
	if w, ok := e.Evictor.(framework.WindowWatcher); ok {
		return w.OnWindowOpen(fn)
	}
	return func() {}
}

var _ framework.WindowWatcher = &tracedEvictor{}

// evictionResult is the result attribute of an eviction span.
func evictionResult(err error) string {
	switch {
	case err == nil:
		return "success"
	case errors.Is(err, framework.ErrDryRun):
		return "dry-run"
	case framework.IsPodGone(err):
		return "pod-gone"
	case framework.IsCachesNotSynced(err):
		return "caches-not-synced"
	case framework.IsNodeLimit(err), framework.IsNamespaceLimit(err), framework.IsTotalLimit(err):
		return "limit"
	case framework.IsWorkloadBudget(err):
		return "workload-budget"
	default:
		return "error"
	}
}
