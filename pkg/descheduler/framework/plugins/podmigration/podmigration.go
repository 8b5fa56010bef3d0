// Package podmigration is the descheduler's on-demand migration: a Controller plugin that moves the
// pod a PodMigration (scheduling.accord.dev/v1alpha1) names, reservation-first. It runs the
// profile's own eviction path: the evictor's filters, its SchedulerSimulation (the target node, when
// given, must pass the scheduler's Filter for the pod; otherwise the simulation's predicted node is
// the target), the shared eviction limits, workload budgets, eviction windows and dry-run, and the
// profile's evict plugin, which must be ReservationFirst: the Reservation for the target is placed
// by accord-scheduler before the pod is evicted through the Eviction API (PodDisruptionBudgets
// apply). Progress goes to the PodMigration's status and Events.
package podmigration

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/crdcheck"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/controller"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/reservationfirst"
	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
	schedlisters "github.com/accord-sched/accord/pkg/generated/listers/scheduling/v1alpha1"
)

// Name is the plugin's name, for `plugins.deschedule.enabled` (it runs with --event-driven).
const Name = "PodMigration"

// Reasons in a PodMigration's status and Events.
const (
	ReasonReserving            = "Reserving"
	ReasonEvicted              = "Evicted"
	ReasonHeld                 = "Held"
	ReasonSucceeded            = "Succeeded"
	ReasonPodNotFound          = "PodNotFound"
	ReasonPodReplaced          = "PodReplaced"
	ReasonPodGone              = "PodGone"
	ReasonNotScheduled         = "PodNotScheduled"
	ReasonNoController         = "NoController"
	ReasonNodeNotSelected      = "NodeNotSelected"
	ReasonTargetIsSource       = "TargetIsSource"
	ReasonNotEvictable         = "NotEvictable"
	ReasonUnschedulable        = "Unschedulable"
	ReasonReservationNotPlaced = "ReservationNotPlaced"
	ReasonReplacementNotPlaced = "ReplacementNotPlaced"
	ReasonDeadlineExceeded     = "DeadlineExceeded"
)

const (
	// HeldRetry is how soon a migration held by a limit, budget, window or PodDisruptionBudget is
	// tried again (until its deadline).
	HeldRetry = 5 * time.Second
	// watchPoll is how often a Running migration reads its reservation.
	watchPoll = time.Second
)

// Plugin is the PodMigration controller.
type Plugin struct {
	handle     framework.Handle
	accord     accordclient.Interface
	migrations schedlisters.PodMigrationLister
	informer   cache.SharedIndexInformer
	pods       corelisters.PodLister
	queue      *controller.Queue
	now        func() time.Time
	metrics    *metrics
}

var _ framework.Controller = &Plugin{}

// New builds the plugin; it takes no args. It needs the PodMigration and Reservation CRDs and a
// descheduler that can write Accord's CRs.
func New(_ context.Context, _ runtime.Object, h framework.Handle) (framework.Plugin, error) {
	for _, crd := range []crdcheck.CRD{crdcheck.PodMigrations(), crdcheck.Reservations()} {
		if !h.ServesCRD(crd) {
			return nil, fmt.Errorf("%s needs the CRD %s, which the cluster does not serve", Name, crd)
		}
	}
	accord := h.AccordClient()
	if accord == nil {
		return nil, fmt.Errorf("%s: the descheduler has no client for Accord's CRs", Name)
	}
	inf := h.AccordInformerFactory().Scheduling().V1alpha1().PodMigrations()
	p := &Plugin{handle: h, accord: accord, migrations: inf.Lister(), informer: inf.Informer(),
		pods: h.SharedInformerFactory().Core().V1().Pods().Lister(), now: time.Now, metrics: newMetrics()}
	return p, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// Run reconciles every PodMigration until ctx is done. The queue is made here, not in New: a plugin
// that is built and never run (explain's dry-run cycle) leaves no queue goroutines behind.
func (p *Plugin) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	p.queue = controller.NewQueue(Name, p.reconcile)
	reg, err := p.informer.AddEventHandler(p.queue.EventHandler(nil))
	if err != nil {
		logger.Error(err, "Adding the PodMigration event handler")
		return
	}
	defer func() {
		if err := p.informer.RemoveEventHandler(reg); err != nil {
			logger.Error(err, "Removing the PodMigration event handler")
		}
	}()
	p.queue.Run(ctx, 1)
}

// result is what one reconcile decided: the status to write (nil: none) and when to look again
// (0: only on the next change).
type result struct {
	status *schedv1alpha1.PodMigrationStatus
	after  time.Duration
	// event, when set, is recorded on the migration (and the pod, when known).
	eventType, reason, note string
	pod                     *corev1.Pod
}

func (p *Plugin) reconcile(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pm, err := p.migrations.PodMigrations(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var res result
	if pm.Status.Phase.Finished() {
		return p.expire(ctx, pm)
	}
	if pm.Status.Phase == schedv1alpha1.PodMigrationRunning {
		res = p.watch(ctx, pm)
	} else {
		res = p.start(ctx, pm)
	}
	if res.status != nil {
		if err := p.writeStatus(ctx, pm, res); err != nil {
			return err
		}
	}
	if res.after > 0 {
		p.queue.AddAfter(key, res.after)
	}
	return nil
}

// start runs the flow for a Pending migration: it checks the pod, asks the simulation about the
// target, and evicts through the profile's evictor (ReservationFirst reserves before it evicts).
func (p *Plugin) start(ctx context.Context, pm *schedv1alpha1.PodMigration) result {
	logger := klog.FromContext(ctx).WithValues("podMigration", klog.KObj(pm))
	st := pm.Status.DeepCopy()
	st.Phase = schedv1alpha1.PodMigrationPending
	if st.StartTime == nil {
		st.StartTime = ptr.To(metav1.NewTime(p.now()))
	}
	fail := func(phase schedv1alpha1.PodMigrationPhase, reason, msg string, pod *corev1.Pod) result {
		st.Phase, st.Reason, st.Message = phase, reason, msg
		st.CompletionTime = ptr.To(metav1.NewTime(p.now()))
		logger.Info("Pod migration "+string(phase), "reason", reason, "message", msg)
		return result{status: st, eventType: corev1.EventTypeWarning, reason: reason, note: msg, pod: pod}
	}
	deadline := pm.CreationTimestamp.Add(schedv1alpha1.DefaultPodMigrationDeadline)
	if pm.Spec.Deadline != nil {
		deadline = pm.Spec.Deadline.Time
	}
	if !p.now().Before(deadline) {
		msg := fmt.Sprintf("the pod was not evicted before the deadline %s", deadline.UTC().Format(time.RFC3339))
		if st.Message != "" {
			msg += "; last: " + st.Message
		}
		return fail(schedv1alpha1.PodMigrationAborted, ReasonDeadlineExceeded, msg, nil)
	}
	pod, err := p.pods.Pods(pm.Namespace).Get(pm.Spec.PodName)
	switch {
	case apierrors.IsNotFound(err):
		return fail(schedv1alpha1.PodMigrationFailed, ReasonPodNotFound, fmt.Sprintf("pod %s/%s does not exist", pm.Namespace, pm.Spec.PodName), nil)
	case err != nil:
		return result{after: HeldRetry}
	case st.PodUID != "" && pod.UID != st.PodUID:
		return fail(schedv1alpha1.PodMigrationFailed, ReasonPodReplaced, fmt.Sprintf("pod %s/%s was replaced (UID %s, was %s) before the migration evicted it", pod.Namespace, pod.Name, pod.UID, st.PodUID), pod)
	case pod.Spec.NodeName == "":
		return fail(schedv1alpha1.PodMigrationFailed, ReasonNotScheduled, fmt.Sprintf("pod %s/%s is not on a node", pod.Namespace, pod.Name), pod)
	case metav1.GetControllerOf(pod) == nil:
		return fail(schedv1alpha1.PodMigrationFailed, ReasonNoController, fmt.Sprintf("pod %s/%s has no controller to recreate it; it would only be deleted", pod.Namespace, pod.Name), pod)
	case pod.DeletionTimestamp != nil:
		return fail(schedv1alpha1.PodMigrationFailed, ReasonPodReplaced, fmt.Sprintf("pod %s/%s is already terminating", pod.Namespace, pod.Name), pod)
	}
	st.PodUID, st.SourceNode = pod.UID, pod.Spec.NodeName
	if pm.Spec.TargetNode == pod.Spec.NodeName {
		return fail(schedv1alpha1.PodMigrationFailed, ReasonTargetIsSource, fmt.Sprintf("spec.targetNode: %s is the node the pod is on", pm.Spec.TargetNode), pod)
	}
	if ok, err := p.nodeSelected(pod.Spec.NodeName); err != nil {
		return result{after: HeldRetry}
	} else if !ok {
		return fail(schedv1alpha1.PodMigrationFailed, ReasonNodeNotSelected, fmt.Sprintf("node %s is outside profile %q's node selector %q", pod.Spec.NodeName, p.handle.ProfileName(), p.handle.NodeSelector()), pod)
	}
	ev := p.handle.Evictor()
	if !ev.Filter(pod) {
		return fail(schedv1alpha1.PodMigrationFailed, ReasonNotEvictable, fmt.Sprintf("profile %q's evictor filters do not let pod %s/%s be evicted (see its DefaultEvictor args)", p.handle.ProfileName(), pod.Namespace, pod.Name), pod)
	}
	// The simulation judges the pod as it would be placed: pinned to the target when there is one.
	sim := pod
	if pm.Spec.TargetNode != "" {
		sim = pod.DeepCopy()
		reservationfirst.RequireNodes(&sim.Spec, corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{pm.Spec.TargetNode}})
	}
	if !ev.PreEvictionFilter(sim) {
		x := ev.ExplainPreEviction(sim)
		msg := x.Message
		if x.BlockedBy != "" {
			msg = x.BlockedBy + ": " + msg
		}
		if msg == "" {
			msg = fmt.Sprintf("profile %q's preEvictionFilter plugins refuse the eviction", p.handle.ProfileName())
		}
		if pm.Spec.TargetNode != "" {
			msg = fmt.Sprintf("spec.targetNode %s: %s", pm.Spec.TargetNode, msg)
		}
		return fail(schedv1alpha1.PodMigrationFailed, ReasonUnschedulable, msg, pod)
	}
	target := pm.Spec.TargetNode
	if target == "" {
		target = ev.ExplainPreEviction(sim).PredictedNode
	}
	st.TargetNode = target
	logger.V(2).Info("Migrating pod: reserving its replacement's place, then evicting", "pod", klog.KObj(pod), "node", pod.Spec.NodeName, "target", target)
	err = ev.Evict(ctx, pod, framework.EvictOptions{Reason: fmt.Sprintf("PodMigration %s", pm.Name), PredictedNode: target, RequireReservation: true})
	switch {
	case err == nil:
	case errors.Is(err, framework.ErrDryRun):
		logger.Info("Dry run: would migrate pod", "pod", klog.KObj(pod), "node", pod.Spec.NodeName, "target", target)
		return result{}
	case errors.Is(err, reservationfirst.ErrNotPlaced):
		return fail(schedv1alpha1.PodMigrationFailed, ReasonReservationNotPlaced, err.Error(), pod)
	case framework.IsPodGone(err):
		// Deleted, terminating, or being evicted by a descheduling cycle meanwhile.
		return fail(schedv1alpha1.PodMigrationFailed, ReasonPodGone, err.Error(), pod)
	default:
		// A limit, a workload budget, a closed window, a PodDisruptionBudget, caches not re-synced,
		// an eviction in flight: tried again until the deadline.
		st.Reason, st.Message = ReasonHeld, err.Error()
		logger.V(2).Info("Pod migration held; retrying", "pod", klog.KObj(pod), "err", err, "retryIn", HeldRetry, "deadline", deadline)
		return result{status: st, after: HeldRetry}
	}
	st.Phase, st.Reason = schedv1alpha1.PodMigrationRunning, ReasonEvicted
	st.EvictionTime = ptr.To(metav1.NewTime(p.now()))
	st.ReservationName = p.reservationOf(ctx, pod)
	st.Message = fmt.Sprintf("evicted from %s into reservation %s on %s; waiting for the replacement", pod.Spec.NodeName, st.ReservationName, target)
	return result{status: st, after: watchPoll, eventType: corev1.EventTypeNormal, reason: ReasonEvicted, note: st.Message, pod: pod}
}

// watch follows a Running migration's reservation until an owner is placed into it (Succeeded) or
// it ends without one (Failed).
func (p *Plugin) watch(ctx context.Context, pm *schedv1alpha1.PodMigration) result {
	st := pm.Status.DeepCopy()
	done := func(phase schedv1alpha1.PodMigrationPhase, reason, eventType, msg string) result {
		st.Phase, st.Reason, st.Message = phase, reason, msg
		st.CompletionTime = ptr.To(metav1.NewTime(p.now()))
		klog.FromContext(ctx).Info("Pod migration "+string(phase), "podMigration", klog.KObj(pm), "reason", reason, "message", msg)
		return result{status: st, eventType: eventType, reason: reason, note: msg}
	}
	if st.ReservationName == "" {
		return done(schedv1alpha1.PodMigrationFailed, ReasonReplacementNotPlaced, corev1.EventTypeWarning, "the pod was evicted but its reservation was not found")
	}
	r, err := p.accord.SchedulingV1alpha1().Reservations(pm.Namespace).Get(ctx, st.ReservationName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return done(schedv1alpha1.PodMigrationFailed, ReasonReplacementNotPlaced, corev1.EventTypeWarning, fmt.Sprintf("reservation %s is gone and no replacement was placed into it", st.ReservationName))
	case err != nil:
		return result{after: watchPoll}
	}
	switch r.Status.Phase {
	case schedv1alpha1.ReservationBound:
		if r.Status.BoundPod != nil {
			st.ReplacementPod = r.Status.BoundPod.Name
		}
		st.ReplacementNode = r.Status.NodeName
		return done(schedv1alpha1.PodMigrationSucceeded, ReasonSucceeded, corev1.EventTypeNormal,
			fmt.Sprintf("replacement %s placed on %s (from %s)", st.ReplacementPod, st.ReplacementNode, st.SourceNode))
	case schedv1alpha1.ReservationExpired, schedv1alpha1.ReservationFailed:
		return done(schedv1alpha1.PodMigrationFailed, ReasonReplacementNotPlaced, corev1.EventTypeWarning,
			fmt.Sprintf("reservation %s is %s (%s) and no replacement was placed into it", r.Name, r.Status.Phase, r.Status.Message))
	}
	return result{after: watchPoll}
}

// expire deletes a finished migration ttlSecondsAfterFinished after its completion.
func (p *Plugin) expire(ctx context.Context, pm *schedv1alpha1.PodMigration) error {
	if pm.Spec.TTLSecondsAfterFinished == nil || pm.Status.CompletionTime == nil {
		return nil
	}
	left := pm.Status.CompletionTime.Add(time.Duration(*pm.Spec.TTLSecondsAfterFinished) * time.Second).Sub(p.now())
	if left > 0 {
		p.queue.AddAfter(pm.Namespace+"/"+pm.Name, left)
		return nil
	}
	err := p.accord.SchedulingV1alpha1().PodMigrations(pm.Namespace).Delete(ctx, pm.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pm.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Deleted a finished pod migration past its ttlSecondsAfterFinished", "podMigration", klog.KObj(pm))
	return nil
}

// reservationOf names the reservation ReservationFirst placed for pod ("" when none is found).
func (p *Plugin) reservationOf(ctx context.Context, pod *corev1.Pod) string {
	sel := labels.SelectorFromSet(labels.Set{reservationfirst.LabelPodUID: string(pod.UID)}).String()
	list, err := p.accord.SchedulingV1alpha1().Reservations(pod.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		klog.FromContext(ctx).Info("Listing the pod's reservation failed", "pod", klog.KObj(pod), "err", err)
		return ""
	}
	for _, r := range list.Items {
		if r.Status.Phase == schedv1alpha1.ReservationAvailable || r.Status.Phase == schedv1alpha1.ReservationBound {
			return r.Name
		}
	}
	return ""
}

func (p *Plugin) nodeSelected(name string) (bool, error) {
	sel := p.handle.NodeSelector()
	if sel == nil || sel.Empty() {
		return true, nil
	}
	node, err := p.handle.SharedInformerFactory().Core().V1().Nodes().Lister().Get(name)
	if err != nil {
		return false, err
	}
	return sel.Matches(labels.Set(node.Labels)), nil
}

// writeStatus writes res.status (with the spec generation it describes) and records res's Event.
func (p *Plugin) writeStatus(ctx context.Context, pm *schedv1alpha1.PodMigration, res result) error {
	client := p.accord.SchedulingV1alpha1().PodMigrations(pm.Namespace)
	cp := pm.DeepCopy()
	// The lister's copy may be behind our last write: on a conflict the status goes onto the
	// latest object (only this controller writes the status), so that an eviction done is
	// never forgotten and attempted again.
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cp.Status = *res.status
		cp.Status.ObservedGeneration = cp.Generation
		_, err := client.UpdateStatus(ctx, cp, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			latest, gerr := client.Get(ctx, pm.Name, metav1.GetOptions{})
			if gerr != nil {
				return gerr
			}
			cp = latest
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("updating the status of PodMigration %s/%s: %w", pm.Namespace, pm.Name, err)
	}
	if res.status.Phase != pm.Status.Phase {
		p.metrics.transitions.WithLabelValues(string(res.status.Phase)).Inc()
	}
	if rec := p.handle.EventRecorder(); rec != nil && res.reason != "" {
		var related runtime.Object
		if res.pod != nil {
			related = res.pod
		}
		// Informer objects carry no TypeMeta, and the recorder's scheme does not know Accord's
		// types: the Event's reference needs the kind spelled out.
		cp.APIVersion, cp.Kind = schedv1alpha1.SchemeGroupVersion.String(), "PodMigration"
		rec.Eventf(cp, related, res.eventType, res.reason, "Migrating", "%s", res.note)
	}
	return nil
}
