package reservation

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
	schedinformers "github.com/accord-sched/accord/pkg/generated/informers/externalversions/scheduling/v1alpha1"
	schedlisters "github.com/accord-sched/accord/pkg/generated/listers/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/internal/workqueueutil"
)

// Reasons the collector fails a reservation with.
const (
	ReasonNodeDeleted = "NodeDeleted"
	ReasonOwnerGone   = "OwnerGone"
)

const (
	// DefaultRetention is the default of accord-scheduler's --reservation-retention: how long a
	// finished reservation (Bound, Expired, Failed) is kept before the collector deletes it.
	DefaultRetention = 10 * time.Minute
	// MinRetention is the shortest retention accepted: a PodMigration reads its reservation's final
	// phase (Bound names the replacement) about every second.
	MinRetention = time.Second
	// OwnerCheckPeriod is how often the collector checks that the workload a live reservation was
	// made for still exists.
	OwnerCheckPeriod = 30 * time.Second
)

// CollectorConfig is what a Collector is built from.
type CollectorConfig struct {
	// Accord writes the reservations (status, delete).
	Accord accordclient.Interface
	// Reservations is the Reservation informer the scheduler's Reservation plugin reads
	// (crcache.Cache.ReservationInformer), started by it.
	Reservations schedinformers.ReservationInformer
	// Nodes is the scheduler's node informer (started with the scheduler's factory).
	Nodes cache.SharedIndexInformer
	// Metadata and Mapper read the workloads reservations are made for (their owner references);
	// nil Metadata checks no owners.
	Metadata metadata.Interface
	Mapper   meta.RESTMapper
	// Retention is how long a finished reservation is kept (DefaultRetention when zero).
	Retention time.Duration
	Clock     clock.Clock
	// IsLeader, when set, tells whether this replica holds the scheduler's leader Lease: the
	// collector acts only then. Nil: the only replica.
	IsLeader func(ctx context.Context) (bool, error)
}

// Collector ends reservations that can no longer be used and deletes finished ones: a reservation
// placed on a node that is deleted fails at once (reason NodeDeleted); a live one whose workload
// (every controller owner, read through its owner reference) is gone fails (reason OwnerGone); a
// finished one (Bound, Expired, Failed) gets status.completionTime and is deleted Retention after
// it. It runs in accord-scheduler, on the leader only, beside the Reservation plugin.
type Collector struct {
	cfg    CollectorConfig
	lister schedlisters.ReservationLister
	nodes  corelisters.NodeLister
	synced []cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[cache.ObjectName]
}

// NewCollector registers the collector's event handlers; Run it once the informers start.
func NewCollector(cfg CollectorConfig) (*Collector, error) {
	if cfg.Reservations == nil || cfg.Nodes == nil || cfg.Accord == nil {
		return nil, fmt.Errorf("the reservation collector needs the Reservation and Node informers and an Accord client")
	}
	if cfg.Retention == 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.Retention < MinRetention {
		return nil, fmt.Errorf("--reservation-retention=%s: must be at least %s", cfg.Retention, MinRetention)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	c := &Collector{cfg: cfg, lister: cfg.Reservations.Lister(), nodes: corelisters.NewNodeLister(cfg.Nodes.GetIndexer()),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "accord-reservation-collector"})}
	rsv := cfg.Reservations.Informer()
	if _, err := rsv.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
	}); err != nil {
		return nil, err
	}
	if _, err := cfg.Nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: c.nodeDeleted}); err != nil {
		return nil, err
	}
	c.synced = []cache.InformerSynced{rsv.HasSynced, cfg.Nodes.HasSynced}
	return c, nil
}

func (c *Collector) enqueue(obj any) {
	if r, ok := obj.(*schedv1alpha1.Reservation); ok {
		c.queue.Add(cache.MetaObjectToName(r))
	}
}

// nodeDeleted queues the reservations placed on the node.
func (c *Collector) nodeDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	all, err := c.lister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, r := range all {
		if r.Status.NodeName == node.Name && !r.Status.Phase.Finished() {
			c.queue.Add(cache.MetaObjectToName(r))
		}
	}
}

// Run waits for the informers (at most a minute) and for the lease, then collects until ctx ends.
func (c *Collector) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("reservation-collector")
	ctx = klog.NewContext(ctx, logger)
	defer c.queue.ShutDown()
	if ok, err := syncThenLead(ctx, c.synced, c.cfg.IsLeader, "collected", "collecting reservations"); !ok {
		return err
	}
	logger.Info("Collecting reservations", "retention", c.cfg.Retention, "ownerCheckPeriod", OwnerCheckPeriod)
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	for workqueueutil.ProcessNext(ctx, c.queue, c.sync, func(key cache.ObjectName, err error) {
		logger.Info("Retrying reservation", "reservation", key, "err", err)
	}) {
	}
	return nil
}

// sync looks at one reservation and returns when to look again.
func (c *Collector) sync(ctx context.Context, key cache.ObjectName) (time.Duration, error) {
	r, err := c.lister.Reservations(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if r.DeletionTimestamp != nil {
		return 0, nil
	}
	now := c.cfg.Clock.Now()
	if r.Status.Phase.Finished() {
		return c.collect(ctx, r, now)
	}
	if r.Status.Phase == schedv1alpha1.ReservationAvailable && r.Status.NodeName != "" {
		if _, err := c.nodes.Get(r.Status.NodeName); apierrors.IsNotFound(err) {
			return 0, c.fail(ctx, r, ReasonNodeDeleted, fmt.Sprintf("node %s, where the room was held, was deleted", r.Status.NodeName))
		}
	}
	gone, err := c.ownerGone(ctx, r)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Checking the reservation's workload failed; checking again later", "reservation", klog.KObj(r), "err", err)
	} else if gone != "" {
		return 0, c.fail(ctx, r, ReasonOwnerGone, gone)
	}
	return OwnerCheckPeriod, nil
}

// collect stamps a finished reservation's completionTime, and deletes it Retention after.
func (c *Collector) collect(ctx context.Context, r *schedv1alpha1.Reservation, now time.Time) (time.Duration, error) {
	if r.Status.CompletionTime == nil {
		cp := r.DeepCopy()
		cp.Status.CompletionTime = &metav1.Time{Time: now}
		if _, err := c.cfg.Accord.SchedulingV1alpha1().Reservations(r.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return 0, nil
			}
			return 0, fmt.Errorf("stamping the completion time of reservation %s/%s: %w", r.Namespace, r.Name, err)
		}
		return c.cfg.Retention, nil
	}
	if left := r.Status.CompletionTime.Add(c.cfg.Retention).Sub(now); left > 0 {
		return left, nil
	}
	err := c.cfg.Accord.SchedulingV1alpha1().Reservations(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &r.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return 0, fmt.Errorf("deleting finished reservation %s/%s: %w", r.Namespace, r.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted a finished reservation past its retention", "reservation", klog.KObj(r), "phase", r.Status.Phase, "completionTime", r.Status.CompletionTime.Time, "retention", c.cfg.Retention)
	return 0, nil
}

// fail ends a live reservation: Failed with reason and message, holding nothing, completion now.
func (c *Collector) fail(ctx context.Context, r *schedv1alpha1.Reservation, reason, msg string) error {
	cp := r.DeepCopy()
	now := metav1.NewTime(c.cfg.Clock.Now())
	cp.Status.Phase, cp.Status.Reason, cp.Status.Message, cp.Status.CompletionTime = schedv1alpha1.ReservationFailed, reason, msg, &now
	_, err := c.cfg.Accord.SchedulingV1alpha1().Reservations(r.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("failing reservation %s/%s (%s): %w", r.Namespace, r.Name, reason, err)
	}
	klog.FromContext(ctx).Info("Reservation failed", "reservation", klog.KObj(r), "reason", reason, "message", msg)
	return nil
}

// ownerGone says why the workload r was made for is gone ("" while it exists, or when it cannot be
// told): r has controller owners (spec.owners[].controller), each named with its API version by an
// owner reference of r, and none of them exists any more with that UID (or each is being
// deleted). Owners named by a pod's name alone are not checked: between the eviction and the
// replacement, no pod of that name is the normal state.
func (c *Collector) ownerGone(ctx context.Context, r *schedv1alpha1.Reservation) (string, error) {
	if c.cfg.Metadata == nil || c.cfg.Mapper == nil {
		return "", nil
	}
	var gone []string
	for _, o := range r.Spec.Owners {
		if o.Controller == nil {
			continue
		}
		ref := ownerRef(r, o.Controller.UID)
		if ref == nil {
			return "", nil
		}
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			return "", fmt.Errorf("owner reference %s: %w", ref.APIVersion, err)
		}
		m, err := c.cfg.Mapper.RESTMapping(gv.WithKind(ref.Kind).GroupKind(), gv.Version)
		if err != nil {
			return "", fmt.Errorf("owner %s %s: %w", ref.Kind, ref.Name, err)
		}
		var res metadata.ResourceInterface = c.cfg.Metadata.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			res = c.cfg.Metadata.Resource(m.Resource).Namespace(r.Namespace)
		}
		obj, err := res.Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			gone = append(gone, fmt.Sprintf("%s %s was deleted", ref.Kind, ref.Name))
		case err != nil:
			return "", err
		case obj.UID != ref.UID:
			gone = append(gone, fmt.Sprintf("%s %s was deleted (UID %s is another one)", ref.Kind, ref.Name, obj.UID))
		case obj.DeletionTimestamp != nil:
			gone = append(gone, fmt.Sprintf("%s %s is being deleted", ref.Kind, ref.Name))
		default:
			return "", nil
		}
	}
	if len(gone) == 0 {
		return "", nil
	}
	return fmt.Sprintf("the workload it was made for is gone: %v; no replacement will consume it", gone), nil
}

func ownerRef(r *schedv1alpha1.Reservation, uid types.UID) *metav1.OwnerReference {
	for i := range r.OwnerReferences {
		if r.OwnerReferences[i].UID == uid {
			return &r.OwnerReferences[i]
		}
	}
	return nil
}
