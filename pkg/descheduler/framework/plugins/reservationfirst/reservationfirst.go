package reservationfirst

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/crdcheck"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/evictionapi"
	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
)

// Name is the plugin's name, for `plugins.evict.enabled`.
const Name = "ReservationFirst"

// SchedulerName is the default of args.schedulerNames, the schedulers whose pods take the
// reservation path: accord-scheduler, whose Reservation plugin places reservations and their owners.
const SchedulerName = "accord-scheduler"

const (
	// PlacementTimeout is the default of args.placementTimeout, the bound of the wait for the
	// reservation to be placed.
	PlacementTimeout = 30 * time.Second
	// TTLMargin is the default of args.ttlMargin, added to the pod's termination grace period (and the placement timeout) to make
	// the reservation's TTL: long enough for the old pod to terminate and its replacement to be
	// created and scheduled; a crash of the descheduler leaves nothing that holds room longer.
	TTLMargin    = 2 * time.Minute
	pollInterval = 100 * time.Millisecond
)

// Labels on the reservations the plugin creates.
const (
	LabelPodUID  = "descheduler.accord.dev/pod-uid"
	LabelPodName = "descheduler.accord.dev/pod-name"
)

// ErrNotPlaced wraps every reason the plugin did not evict because the reservation was not placed
// where it could be used.
var ErrNotPlaced = errors.New("reservation not placed")

// Plugin is the ReservationFirst evict plugin.
// +k8s:deepcopy-gen=false
type Plugin struct {
	handle framework.Handle
	accord accordclient.Interface
	direct *evictionapi.EvictionAPI
	// schedulerNames: args.schedulerNames.
	schedulerNames []string
	// timeout and poll are the placement wait; margin is args.ttlMargin.
	timeout, poll, margin time.Duration
}

var _ framework.EvictPlugin = &Plugin{}

// New builds the plugin from its ReservationFirstArgs. It needs the Reservation CRD and a descheduler that can
// write Accord's CRs.
func New(_ context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	args, ok := obj.(*ReservationFirstArgs)
	if !ok {
		return nil, fmt.Errorf("%s: want args of type ReservationFirstArgs, got %T", Name, obj)
	}
	if !h.ServesCRD(crdcheck.Reservations()) {
		return nil, fmt.Errorf("%s needs the CRD %s, which the cluster does not serve", Name, crdcheck.Reservations())
	}
	accord := h.AccordClient()
	if accord == nil {
		return nil, fmt.Errorf("%s: the descheduler has no client for Accord's CRs", Name)
	}
	direct, err := evictionapi.New(context.Background(), nil, h)
	if err != nil {
		return nil, err
	}
	return &Plugin{handle: h, accord: accord, direct: direct.(*evictionapi.EvictionAPI), schedulerNames: args.SchedulerNames,
		timeout: args.PlacementTimeout.Duration, poll: pollInterval, margin: args.TTLMargin.Duration}, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// Evict evicts pod, for a pod of accord-scheduler only once a reservation for its replacement is
// placed on another node (the predicted one when SchedulerSimulation predicted one).
func (p *Plugin) Evict(ctx context.Context, pod *corev1.Pod, opts framework.EvictOptions) error {
	logger := klog.FromContext(ctx)
	if opts.NoReservation {
		logger.V(3).Info("Evicting directly, as asked: no reservation", "pod", klog.KObj(pod))
		return p.direct.Evict(ctx, pod, opts)
	}
	if !slices.Contains(p.schedulerNames, pod.Spec.SchedulerName) {
		if opts.RequireReservation {
			return fmt.Errorf("not evicting pod %s/%s: %w: its scheduler %q is not one ReservationFirst reserves for (schedulerNames %v)", pod.Namespace, pod.Name, ErrNotPlaced, pod.Spec.SchedulerName, p.schedulerNames)
		}
		logger.V(3).Info("Pod of another scheduler: evicting without a reservation", "pod", klog.KObj(pod), "schedulerName", pod.Spec.SchedulerName)
		return p.direct.Evict(ctx, pod, opts)
	}
	r, err := p.accord.SchedulingV1alpha1().Reservations(pod.Namespace).Create(ctx, ReservationFor(pod, opts.PredictedNode, p.timeout+p.margin), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("evicting pod %s/%s: creating its reservation: %w", pod.Namespace, pod.Name, err)
	}
	placed, err := p.waitPlaced(ctx, pod, r, opts.PredictedNode)
	if err != nil {
		p.cleanUp(ctx, r)
		return err
	}
	if opts.BeforeEvict != nil {
		if err := opts.BeforeEvict(ctx, r.Name, placed); err != nil {
			p.cleanUp(ctx, r)
			return fmt.Errorf("not evicting pod %s/%s into reservation %s: %w", pod.Namespace, pod.Name, r.Name, err)
		}
	}
	if err := p.direct.Evict(ctx, pod, opts); err != nil {
		p.cleanUp(ctx, r)
		return err
	}
	logger.Info("Evicted pod into a placed reservation", "pod", klog.KObj(pod), "reservation", klog.KObj(r), "node", placed, "predictedNode", opts.PredictedNode)
	return nil
}

// waitPlaced waits, at most p.timeout, until r is Available, and returns its node; it looks every
// poll interval, the first time one interval after the creation. It fails when r
// is Failed or Expired, Bound already (a sibling's replacement took it), placed on the pod's own
// node, or not placed in time.
func (p *Plugin) waitPlaced(ctx context.Context, pod *corev1.Pod, r *schedv1alpha1.Reservation, predicted string) (string, error) {
	logger := klog.FromContext(ctx)
	logger.V(2).Info("Waiting for accord-scheduler to place the reservation before evicting", "pod", klog.KObj(pod), "reservation", klog.KObj(r), "predictedNode", predicted, "timeout", p.timeout)
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	for {
		// The first look is a poll interval after the creation, not at once: the placer cannot
		// place it sooner in practice, and a look at once would race the placement (on a fake
		// clock, both happen at one instant: the eviction went then or 100 ms later, as the
		// goroutines ran, and a seeded simulation did not reproduce its trace).
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("not evicting pod %s/%s: %w: reservation %s not placed within %s (is accord-scheduler running with the Reservation plugin?)", pod.Namespace, pod.Name, ErrNotPlaced, r.Name, p.timeout)
		case <-time.After(p.poll):
		}
		cur, err := p.accord.SchedulingV1alpha1().Reservations(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
		if err == nil {
			switch cur.Status.Phase {
			case schedv1alpha1.ReservationAvailable:
				if cur.Status.NodeName == pod.Spec.NodeName {
					return "", fmt.Errorf("not evicting pod %s/%s: %w: reservation %s was placed on the pod's own node %s", pod.Namespace, pod.Name, ErrNotPlaced, r.Name, cur.Status.NodeName)
				}
				return cur.Status.NodeName, nil
			case schedv1alpha1.ReservationBound:
				// A sibling's replacement (same owner) took the room before this pod was evicted: the
				// room is gone, so this pod stays; a later cycle reserves again.
				bound := ""
				if cur.Status.BoundPod != nil {
					bound = cur.Status.BoundPod.Name
				}
				return "", fmt.Errorf("not evicting pod %s/%s: %w: reservation %s was consumed by pod %q of the same owner before the eviction", pod.Namespace, pod.Name, ErrNotPlaced, r.Name, bound)
			case schedv1alpha1.ReservationFailed, schedv1alpha1.ReservationExpired:
				return "", fmt.Errorf("not evicting pod %s/%s: %w: reservation %s is %s (%s: %s)", pod.Namespace, pod.Name, ErrNotPlaced, r.Name, cur.Status.Phase, cur.Status.Reason, cur.Status.Message)
			}
		} else if !apierrors.IsNotFound(err) && ctx.Err() == nil {
			logger.V(2).Info("Reading the reservation failed; retrying", "reservation", klog.KObj(r), "err", err)
		}
	}
}

// cleanUp deletes a reservation the plugin will not use, with its own deadline (the caller's
// context may be done).
func (p *Plugin) cleanUp(ctx context.Context, r *schedv1alpha1.Reservation) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err := p.accord.SchedulingV1alpha1().Reservations(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(ctx).Info("Deleting an unused reservation failed; it expires at its TTL", "reservation", klog.KObj(r), "err", err)
	}
}

// ReservationFor is the reservation for pod's replacement: the pod's spec as template, pinned to
// predicted (when set) and never on the pod's node; made for the pod (its name and UID: the
// replacement of a StatefulSet pod, which keeps the name, consumes it before any sibling) and, when it has one,
// its controller's UID (the replacement of a StatefulSet keeps the name, a ReplicaSet's has the
// controller); its TTL is the pod's grace period plus slack (the placement timeout and the TTL
// margin), at most schedv1alpha1.MaxReservationTTL (the CRD's ceiling: a pod that terminates for
// longer may find its room expired). The pod's controller owns it, so it goes with its workload.
func ReservationFor(pod *corev1.Pod, predicted string, slack time.Duration) *schedv1alpha1.Reservation {
	spec := pod.Spec.DeepCopy()
	spec.NodeName = ""
	req := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{pod.Spec.NodeName}}
	if predicted != "" {
		req = corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{predicted}}
	}
	RequireNodes(spec, req)
	owners := []schedv1alpha1.ReservationOwner{{Pod: &schedv1alpha1.ReservationPodOwner{Name: pod.Name, UID: pod.UID}}}
	var ownerRefs []metav1.OwnerReference
	if ref := metav1.GetControllerOf(pod); ref != nil {
		owners = append(owners, schedv1alpha1.ReservationOwner{Controller: &schedv1alpha1.ReservationControllerOwner{Kind: ref.Kind, Name: ref.Name, UID: ref.UID}})
		ownerRefs = []metav1.OwnerReference{{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID}}
	}
	grace := time.Duration(ptr.Deref(pod.Spec.TerminationGracePeriodSeconds, corev1.DefaultTerminationGracePeriodSeconds)) * time.Second
	return &schedv1alpha1.Reservation{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    pod.Name + "-",
			Namespace:       pod.Namespace,
			Labels:          map[string]string{LabelPodUID: string(pod.UID), LabelPodName: pod.Name},
			OwnerReferences: ownerRefs,
		},
		Spec: schedv1alpha1.ReservationSpec{
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels}, Spec: *spec},
			Owners:   owners,
			TTL:      &metav1.Duration{Duration: min(grace+slack, schedv1alpha1.MaxReservationTTL)},
		},
	}
}

// RequireNodes adds req (a metadata.name requirement) to every required node affinity term of spec
// (the terms are ORed: the requirement goes into each), making one term when there is none. The
// reservations pin their template with it, and PodMigration the pod it simulates on a target node.
func RequireNodes(spec *corev1.PodSpec, req corev1.NodeSelectorRequirement) {
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
	}
	for i := range na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		t := &na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[i]
		t.MatchFields = append(t.MatchFields, req)
	}
}
