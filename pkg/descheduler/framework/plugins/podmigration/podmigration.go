// Package podmigration is the descheduler's on-demand migration: a Controller plugin that moves the
// pod a PodMigration (scheduling.accord.dev/v1alpha1) names, reservation-first. It runs the
// profile's own eviction path: the evictor's filters, its SchedulerSimulation (the target node, when
// given, must pass the scheduler's Filter for the pod; otherwise the simulation's predicted node is
// the target), the shared eviction limits, workload budgets, eviction windows and dry-run, and the
// profile's evict plugin, which must be ReservationFirst: the Reservation for the target is placed
// by accord-scheduler before the pod is evicted through the Eviction API (PodDisruptionBudgets
// apply); in mode EvictDirectly nothing is reserved. Progress goes to the PodMigration's status and
// Events. One live migration per pod (a later one is refused, naming the first); the pod's UID
// is in the status before anything is reserved or evicted, and the step before the eviction is
// recorded too, so that a descheduler restarted after a crash resumes or ends the migration and
// never evicts the pod's replacement; up to Handle.MaxConcurrentMigrations migrations run at once.
package podmigration

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
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
	ReasonEvicting             = "Evicting"
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
	ReasonAlreadyMigrating     = "AlreadyMigrating"
	ReasonInvalid              = "Invalid"
)

const (
	// HeldRetry is the first back-off of a migration held by a limit, budget, window or
	// PodDisruptionBudget; each further hold doubles it, up to MaxHeldRetry (never past the
	// deadline).
	HeldRetry = 5 * time.Second
	// MaxHeldRetry is the longest back-off of a held migration.
	MaxHeldRetry = 2 * time.Minute
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
	// held is the back-off of held migrations, by key.
	held workqueue.TypedRateLimiter[string]
	// resumed holds the migrations this process has acted on: one found with a pod UID and not
	// in it was left by an earlier process (a restart), and its orphaned reservations are removed.
	mu      sync.Mutex
	resumed map[types.UID]bool
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
		pods: h.SharedInformerFactory().Core().V1().Pods().Lister(), now: time.Now, metrics: newMetrics(),
		held:    workqueue.NewTypedItemExponentialFailureRateLimiter[string](HeldRetry, MaxHeldRetry),
		resumed: map[types.UID]bool{}}
	return p, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// Run reconciles every PodMigration until ctx is done, Handle.MaxConcurrentMigrations at a time
// (--max-concurrent-migrations). The queue is made here, not in New: a plugin that is built and
// never run (explain's dry-run cycle) leaves no queue goroutines behind.
func (p *Plugin) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	p.queue = controller.NewQueue(Name, p.reconcile)
	// A migration is queued when it is created and when its spec changes; the status writes of this
	// controller do not queue it again (a held one would otherwise be retried at once, whatever its
	// back-off): it comes back when it asked to (AddAfter).
	reg, err := p.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: p.enqueue,
		UpdateFunc: func(old, obj any) {
			o, ok1 := old.(*schedv1alpha1.PodMigration)
			n, ok2 := obj.(*schedv1alpha1.PodMigration)
			if ok1 && ok2 && o.Generation == n.Generation {
				return
			}
			p.enqueue(obj)
		},
	})
	if err != nil {
		logger.Error(err, "Adding the PodMigration event handler")
		return
	}
	defer func() {
		if err := p.informer.RemoveEventHandler(reg); err != nil {
			logger.Error(err, "Removing the PodMigration event handler")
		}
	}()
	workers := p.handle.MaxConcurrentMigrations()
	logger.Info("Moving PodMigrations", "concurrent", workers)
	p.queue.Run(ctx, workers)
}

func (p *Plugin) enqueue(obj any) {
	if pm, ok := obj.(*schedv1alpha1.PodMigration); ok {
		p.queue.Add(pm.Namespace + "/" + pm.Name)
	}
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
	// Read from the apiserver, not the informer: the informer may not have this controller's last
	// status write yet, and acting on an older status could redo a step (reserve, evict) already
	// done or undone.
	pm, err := p.accord.SchedulingV1alpha1().PodMigrations(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		p.held.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	var res result
	if pm.Status.Phase.Finished() {
		p.held.Forget(key)
		p.forget(pm.UID)
		return p.expire(ctx, pm)
	}
	if pm.Status.Phase == schedv1alpha1.PodMigrationRunning {
		res = p.watch(ctx, pm)
	} else {
		res = p.start(ctx, pm)
	}
	if res.status != nil {
		written, err := p.writeStatus(ctx, pm, res)
		if err != nil {
			return err
		}
		// The status write does not queue the migration again (the handler ignores status-only
		// updates): a migration that just finished is looked at again when its TTL ends, or it
		// would stay until the next restart.
		if written.Status.Phase.Finished() {
			p.held.Forget(key)
			p.forget(pm.UID)
			return p.expire(ctx, written)
		}
	}
	if res.after > 0 {
		p.queue.AddAfter(key, res.after)
	}
	return nil
}

// Deadline is when pm gives up if its pod is not evicted yet: spec.deadline, or its creation plus
// DefaultPodMigrationDeadline.
func Deadline(pm *schedv1alpha1.PodMigration) time.Time {
	if pm.Spec.Deadline != nil {
		return pm.Spec.Deadline.Time
	}
	return pm.CreationTimestamp.Add(schedv1alpha1.DefaultPodMigrationDeadline)
}

// Validate checks what the CRD schema cannot: spec.deadline at most MaxPodMigrationDeadline after
// the migration's creation.
func Validate(pm *schedv1alpha1.PodMigration) field.ErrorList {
	var errs field.ErrorList
	if d := pm.Spec.Deadline; d != nil {
		if ceiling := pm.CreationTimestamp.Add(schedv1alpha1.MaxPodMigrationDeadline); d.After(ceiling) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "deadline"), d.UTC().Format(time.RFC3339),
				fmt.Sprintf("must be at most %s after the migration's creation (%s)", schedv1alpha1.MaxPodMigrationDeadline, ceiling.UTC().Format(time.RFC3339))))
		}
	}
	return errs
}

// firstLive is the oldest unfinished migration of the same pod created before pm (by creation
// time, then name), if any: only that one may move the pod.
func (p *Plugin) firstLive(pm *schedv1alpha1.PodMigration) *schedv1alpha1.PodMigration {
	all, err := p.migrations.PodMigrations(pm.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var first *schedv1alpha1.PodMigration
	for _, o := range all {
		if o.Name == pm.Name || o.Spec.PodName != pm.Spec.PodName || o.Status.Phase.Finished() || !earlier(o, pm) {
			continue
		}
		if first == nil || earlier(o, first) {
			first = o
		}
	}
	return first
}

func earlier(a, b *schedv1alpha1.PodMigration) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// start runs the flow for a Pending migration: it checks the pod, asks the simulation about the
// target, records the pod's UID, and evicts through the profile's evictor (ReservationFirst
// reserves before it evicts, and calls back before the eviction so that the step is recorded).
func (p *Plugin) start(ctx context.Context, pm *schedv1alpha1.PodMigration) result {
	logger := klog.FromContext(ctx).WithValues("podMigration", klog.KObj(pm))
	key := pm.Namespace + "/" + pm.Name
	st := pm.Status.DeepCopy()
	st.Phase = schedv1alpha1.PodMigrationPending
	if st.StartTime == nil {
		st.StartTime = ptr.To(metav1.NewTime(p.now()))
	}
	fail := func(phase schedv1alpha1.PodMigrationPhase, reason, msg string, pod *corev1.Pod) result {
		st.Phase, st.Reason, st.Message = phase, reason, msg
		st.CompletionTime = ptr.To(metav1.NewTime(p.now()))
		p.held.Forget(key)
		logger.Info("Pod migration "+string(phase), "reason", reason, "message", msg)
		return result{status: st, eventType: corev1.EventTypeWarning, reason: reason, note: msg, pod: pod}
	}
	if errs := Validate(pm); len(errs) > 0 {
		return fail(schedv1alpha1.PodMigrationFailed, ReasonInvalid, errs.ToAggregate().Error(), nil)
	}
	deadline := Deadline(pm)
	if !p.now().Before(deadline) {
		msg := fmt.Sprintf("the pod was not evicted before the deadline %s", deadline.UTC().Format(time.RFC3339))
		if st.Message != "" {
			msg += "; last: " + st.Message
		}
		p.cleanOrphans(ctx, pm, st.PodUID)
		return fail(schedv1alpha1.PodMigrationAborted, ReasonDeadlineExceeded, msg, nil)
	}
	if first := p.firstLive(pm); first != nil && st.PodUID == "" {
		phase := first.Status.Phase
		if phase == "" {
			phase = schedv1alpha1.PodMigrationPending
		}
		return fail(schedv1alpha1.PodMigrationFailed, ReasonAlreadyMigrating,
			fmt.Sprintf("pod %s/%s is already being migrated by PodMigration %s (%s); one live migration per pod", pm.Namespace, pm.Spec.PodName, first.Name, phase), nil)
	}
	// A migration with a recorded UID that this process has not acted on was left by an earlier
	// one (a restart): what it was doing is judged from the recorded step and the pod.
	resuming := p.firstSeen(pm.UID) && st.PodUID != ""
	pod, err := p.pods.Pods(pm.Namespace).Get(pm.Spec.PodName)
	switch {
	case apierrors.IsNotFound(err) && st.PodUID == "":
		return fail(schedv1alpha1.PodMigrationFailed, ReasonPodNotFound, fmt.Sprintf("pod %s/%s does not exist", pm.Namespace, pm.Spec.PodName), nil)
	case err != nil && !apierrors.IsNotFound(err):
		return result{after: HeldRetry}
	case apierrors.IsNotFound(err) || pod.UID != st.PodUID && st.PodUID != "" || pod.DeletionTimestamp != nil && pod.UID == st.PodUID:
		// The pod the migration recorded is terminating, gone or replaced (a StatefulSet's
		// replacement keeps the name): it is never evicted again, and neither is its replacement.
		return p.podLeft(ctx, pm, st, pod, fail)
	}
	if resuming {
		// The pod is still there: the earlier process did not evict it. Its reservation (if it
		// made one) is an orphan that would compete with the new one: remove it and start over.
		logger.Info("Resuming a pod migration left by an earlier process: the pod was not evicted; starting over", "pod", klog.KObj(pod), "step", st.Reason)
		p.cleanOrphans(ctx, pm, st.PodUID)
	}
	switch {
	case pod.Spec.NodeName == "":
		return fail(schedv1alpha1.PodMigrationFailed, ReasonNotScheduled, fmt.Sprintf("pod %s/%s is not on a node", pod.Namespace, pod.Name), pod)
	case metav1.GetControllerOf(pod) == nil:
		return fail(schedv1alpha1.PodMigrationFailed, ReasonNoController, fmt.Sprintf("pod %s/%s has no controller to recreate it; it would only be deleted", pod.Namespace, pod.Name), pod)
	case pod.DeletionTimestamp != nil:
		return fail(schedv1alpha1.PodMigrationFailed, ReasonPodGone, fmt.Sprintf("pod %s/%s is already terminating", pod.Namespace, pod.Name), pod)
	}
	st.SourceNode = pod.Spec.NodeName
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
	mode := pm.Spec.ModeOrDefault()
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
	// The pod's UID is recorded before anything is reserved or evicted: a process that takes the
	// migration over after a crash knows which pod it was about, and never evicts a replacement.
	// In EvictDirectly the next step is the eviction itself.
	step, stepMsg := ReasonReserving, fmt.Sprintf("reserving the replacement's place on %s before evicting pod %s (UID %s) from %s", orAny(target), pod.Name, pod.UID, pod.Spec.NodeName)
	if mode == schedv1alpha1.PodMigrationEvictDirectly {
		step, stepMsg = ReasonEvicting, fmt.Sprintf("evicting pod %s (UID %s) from %s directly, with no reservation", pod.Name, pod.UID, pod.Spec.NodeName)
	}
	if p.handle.DryRun() {
		// Nothing is written in a dry run: the evictor only says what it would do.
	} else if st.PodUID != pod.UID || (mode == schedv1alpha1.PodMigrationEvictDirectly && st.Reason != step) {
		st.PodUID, st.Reason, st.Message = pod.UID, step, stepMsg
		cur, err := p.writeStatus(ctx, pm, result{status: st})
		if err != nil {
			logger.Info("Recording the pod's UID failed; not evicting", "pod", klog.KObj(pod), "err", err)
			return result{after: HeldRetry}
		}
		pm = cur
	}
	logger.V(2).Info("Migrating pod", "pod", klog.KObj(pod), "node", pod.Spec.NodeName, "target", target, "mode", mode)
	opts := framework.EvictOptions{Reason: fmt.Sprintf("PodMigration %s", pm.Name), PredictedNode: target}
	if mode == schedv1alpha1.PodMigrationEvictDirectly {
		opts.NoReservation = true
	} else {
		opts.RequireReservation = true
		opts.BeforeEvict = func(ctx context.Context, reservation, node string) error {
			st.Reason, st.ReservationName, st.TargetNode = ReasonEvicting, reservation, node
			st.Message = fmt.Sprintf("evicting pod %s (UID %s) from %s into reservation %s on %s", pod.Name, pod.UID, pod.Spec.NodeName, reservation, node)
			cur, err := p.writeStatus(ctx, pm, result{status: st})
			if err == nil {
				pm = cur
			}
			return err
		}
	}
	err = ev.Evict(ctx, pod, opts)
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
		// an eviction in flight: tried again, with a growing back-off, until the deadline.
		after := min(p.held.When(key), time.Until(deadline)+time.Millisecond)
		if st.Reason != ReasonHeld || st.Message != err.Error() {
			st.Reason, st.Message = ReasonHeld, err.Error()
			logger.V(2).Info("Pod migration held; backing off", "pod", klog.KObj(pod), "err", err, "retryIn", after, "deadline", deadline)
			return result{status: st, after: after}
		}
		logger.V(3).Info("Pod migration still held; backing off", "pod", klog.KObj(pod), "retryIn", after)
		return result{after: after}
	}
	p.held.Forget(key)
	st.EvictionTime = ptr.To(metav1.NewTime(p.now()))
	if mode == schedv1alpha1.PodMigrationEvictDirectly {
		st.Phase, st.Reason = schedv1alpha1.PodMigrationSucceeded, ReasonEvicted
		st.CompletionTime = st.EvictionTime
		st.Message = fmt.Sprintf("evicted from %s directly (mode EvictDirectly): the scheduler places the replacement wherever it fits", pod.Spec.NodeName)
		return result{status: st, eventType: corev1.EventTypeNormal, reason: ReasonEvicted, note: st.Message, pod: pod}
	}
	st.Phase, st.Reason = schedv1alpha1.PodMigrationRunning, ReasonEvicted
	if st.ReservationName == "" {
		st.ReservationName = p.reservationOf(ctx, pod.Namespace, pod.UID)
	}
	st.Message = fmt.Sprintf("evicted from %s into reservation %s on %s; waiting for the replacement", pod.Spec.NodeName, st.ReservationName, st.TargetNode)
	return result{status: st, after: watchPoll, eventType: corev1.EventTypeNormal, reason: ReasonEvicted, note: st.Message, pod: pod}
}

func orAny(node string) string {
	if node == "" {
		return "another node"
	}
	return node
}

// firstSeen reports whether this process sees the migration uid for the first time.
func (p *Plugin) firstSeen(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resumed[uid] {
		return false
	}
	p.resumed[uid] = true
	return true
}

func (p *Plugin) forget(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.resumed, uid)
}

// podLeft ends (or, when the eviction was the migration's own, follows) a migration whose recorded
// pod is terminating, gone or replaced. Only the step recorded before the eviction (Evicting, with
// the reservation named) means this migration may have evicted it: then it is Running and follows
// its reservation. Otherwise the pod left by other means: the migration fails, evicts nothing, and
// removes the reservation it had made.
func (p *Plugin) podLeft(ctx context.Context, pm *schedv1alpha1.PodMigration, st *schedv1alpha1.PodMigrationStatus, pod *corev1.Pod,
	fail func(schedv1alpha1.PodMigrationPhase, string, string, *corev1.Pod) result) result {
	what := fmt.Sprintf("pod %s/%s (UID %s) is gone", pm.Namespace, pm.Spec.PodName, st.PodUID)
	switch {
	case pod != nil && pod.UID != st.PodUID:
		what = fmt.Sprintf("pod %s/%s was replaced (UID %s, was %s)", pod.Namespace, pod.Name, pod.UID, st.PodUID)
	case pod != nil:
		what = fmt.Sprintf("pod %s/%s (UID %s) is terminating", pod.Namespace, pod.Name, pod.UID)
	}
	if st.Reason == ReasonEvicting {
		if pm.Spec.ModeOrDefault() == schedv1alpha1.PodMigrationEvictDirectly {
			st.Phase, st.Reason = schedv1alpha1.PodMigrationSucceeded, ReasonEvicted
			st.CompletionTime = ptr.To(metav1.NewTime(p.now()))
			st.Message = what + " after this migration went to evict it (mode EvictDirectly; a restart came between the eviction and this status)"
			return result{status: st, eventType: corev1.EventTypeNormal, reason: ReasonEvicted, note: st.Message}
		}
		if st.ReservationName != "" {
			st.Phase = schedv1alpha1.PodMigrationRunning
			st.Message = what + fmt.Sprintf(" after this migration went to evict it into reservation %s: following the reservation", st.ReservationName)
			if st.EvictionTime == nil {
				st.EvictionTime = ptr.To(metav1.NewTime(p.now()))
			}
			klog.FromContext(ctx).Info("Pod migration resumed after its eviction", "podMigration", klog.KObj(pm), "reservation", st.ReservationName)
			return result{status: st, after: watchPoll}
		}
	}
	p.cleanOrphans(ctx, pm, st.PodUID)
	reason := ReasonPodReplaced
	if pod == nil || pod.UID == st.PodUID {
		reason = ReasonPodGone
	}
	return fail(schedv1alpha1.PodMigrationFailed, reason, what+" before this migration evicted it; its replacement is left alone", pod)
}

// cleanOrphans deletes the reservations made for the pod of UID podUID that nothing consumed
// (Pending, Available, or not placed): left by an attempt of this migration that ended without an
// eviction (a crash of the descheduler, a deadline), they would hold room until their TTL.
func (p *Plugin) cleanOrphans(ctx context.Context, pm *schedv1alpha1.PodMigration, podUID types.UID) {
	if podUID == "" || pm.Spec.ModeOrDefault() != schedv1alpha1.PodMigrationReservationFirst {
		return
	}
	client := p.accord.SchedulingV1alpha1().Reservations(pm.Namespace)
	sel := labels.SelectorFromSet(labels.Set{reservationfirst.LabelPodUID: string(podUID)}).String()
	list, err := client.List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		klog.FromContext(ctx).Info("Listing the reservations of an earlier attempt failed; they expire at their TTL", "podMigration", klog.KObj(pm), "err", err)
		return
	}
	for _, r := range list.Items {
		if r.Status.Phase.Finished() {
			continue
		}
		err := client.Delete(ctx, r.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &r.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			klog.FromContext(ctx).Info("Deleting an orphaned reservation failed; it expires at its TTL", "reservation", klog.KObj(&r), "err", err)
			continue
		}
		klog.FromContext(ctx).Info("Deleted a reservation an earlier attempt left", "podMigration", klog.KObj(pm), "reservation", klog.KObj(&r), "phase", r.Status.Phase)
	}
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

// reservationOf names the reservation ReservationFirst placed for the pod of UID uid ("" when none
// is found).
func (p *Plugin) reservationOf(ctx context.Context, ns string, uid types.UID) string {
	sel := labels.SelectorFromSet(labels.Set{reservationfirst.LabelPodUID: string(uid)}).String()
	list, err := p.accord.SchedulingV1alpha1().Reservations(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		klog.FromContext(ctx).Info("Listing the pod's reservation failed", "podUID", uid, "err", err)
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

// writeStatus writes res.status (with the spec generation it describes), records res's Event and
// returns the migration as written.
func (p *Plugin) writeStatus(ctx context.Context, pm *schedv1alpha1.PodMigration, res result) (*schedv1alpha1.PodMigration, error) {
	client := p.accord.SchedulingV1alpha1().PodMigrations(pm.Namespace)
	cp := pm.DeepCopy()
	var written *schedv1alpha1.PodMigration
	// The lister's copy may be behind our last write: on a conflict the status goes onto the
	// latest object (only this controller writes the status), so that an eviction done is
	// never forgotten and attempted again.
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cp.Status = *res.status
		cp.Status.ObservedGeneration = cp.Generation
		var err error
		written, err = client.UpdateStatus(ctx, cp, metav1.UpdateOptions{})
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
		return nil, fmt.Errorf("updating the status of PodMigration %s/%s: %w", pm.Namespace, pm.Name, err)
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
	return written, nil
}
